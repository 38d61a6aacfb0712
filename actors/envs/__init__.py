"""One environment factory: `make_env(name, seed)` (spec §6), over the catalogue of families (`registry.py`).

Names users type: `CliffWalk`, `MinAtar/<Game>` (or `MinAtar/<Game>-v0`), the six MiniGrid task names, any
registered Gymnasium id with a discrete action space and a Box or Discrete observation (one-hot encoded),
`module:Id` (a module of the user's that registers `Id` with Gymnasium when imported), and the names of a family of
the user's own (`BETA_DQN_ENVS`). `--env-kwargs` (a JSON object) reaches the constructor of the families that take
it (Gymnasium ids, `module:Id`, the MiniGrid tasks); `--wrappers` (`actors.envs.wrappers`) wraps every environment
of a run. Every environment reports `info["success"]` on its last step where the task has a notion of success.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import numpy as np

import actors.envs.cliffwalk  # noqa: F401  (each built-in family registers itself; the catalogue's order)
import actors.envs.gymnasium_ids  # noqa: F401  (the last: it takes every name no other family owns)
import actors.envs.minatar  # noqa: F401
import actors.envs.minigrid  # noqa: F401
from actors.envs.checked import Checked, EnvFailed
from actors.envs.registry import PLUGINS, Family, Kwargs, UnknownEnvError, families, family_of, known_names, register
from actors.envs.wrappers import apply_wrappers, canonical_wrappers, observable, wrapper_modules
from learner.methods.reading import Reading, ReadingError, choose, default
from replay_service.plugins import load_plugins

__all__ = ["MAX_NESTING", "PLUGINS", "EnvFailed", "EnvSpec", "Family", "UnknownEnvError", "canonical_kwargs",
           "canonical_name", "canonical_wrappers", "domain", "env_modules", "env_spec", "families", "family_of",
           "known_names", "make_env", "nesting", "parse_env_kwargs", "register",
           "scored_by_success", "success_domains"]

_JSON_KINDS = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


def _unique_keys(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if twice is not None:
        raise UnknownEnvError(f"the key {twice!r} appears twice")
    return dict(pairs)


MAX_NESTING = 16  # how deep objects and lists may nest in --env-kwargs and in a settings file


def nesting(value, limit: int = MAX_NESTING + 1) -> int:
    """How deep dicts and lists nest in `value` (a scalar: 0), counted up to `limit` and no further."""
    if limit <= 0 or not isinstance(value, (dict, list)):
        return 0
    inner = value.values() if isinstance(value, dict) else value
    return 1 + max((nesting(v, limit - 1) for v in inner), default=0)


def parse_env_kwargs(text: str) -> dict:
    """`--env-kwargs` as a dict: a JSON object (empty text: none); anything else, one line saying why."""
    if not isinstance(text, str):
        raise UnknownEnvError(f"{text!r} is not text: give a JSON object as text, e.g. '{{\"size\": 8}}'")
    if not text.strip():
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys)
    except UnknownEnvError as e:
        raise UnknownEnvError(f"{text!r}: {e}") from None
    except RecursionError:  # json recurses per level of nesting
        raise UnknownEnvError(f"{text[:40]!r}... nests objects or lists more than {MAX_NESTING} deep; give "
                              "keyword arguments of plain values") from None
    except ValueError as e:
        raise UnknownEnvError(f"{text!r} is not JSON ({e}); give an object, e.g. "
                              "'{\"size\": 8}'") from None
    if not isinstance(value, dict):
        raise UnknownEnvError(f"{text!r} is {_JSON_KINDS.get(type(value), 'not an object')} in JSON, not an object "
                              "of keyword arguments, e.g. '{\"size\": 8}'")
    if nesting(value) > MAX_NESTING:
        raise UnknownEnvError(f"{text[:40]!r}... nests objects or lists more than {MAX_NESTING} deep; give keyword "
                              "arguments of plain values")
    return value


def canonical_kwargs(text: str) -> str:
    """`--env-kwargs` in one spelling (keys sorted, no spaces): '' for none."""
    value = parse_env_kwargs(text)
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if value else ""


def env_modules(names, wrappers=()) -> list[ModuleType]:
    """The user's modules behind `module:Id` names and `--wrappers` (each run's, in `wrappers`) that Ray's workers
    must be sent (`runtime_env`'s `py_modules`, on every node): each top-level package or single-file module
    imported here, unless it is installed (in site-packages, where every node's environment has it as this one
    does)."""
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    shipped = []
    modules = [name.partition(":")[0] for name in names if ":" in name]
    modules += [module for text in wrappers for module in wrapper_modules(text)]
    for module in modules:
        top = sys.modules.get(module.split(".")[0])
        where = getattr(top, "__file__", None) or next(iter(getattr(top, "__path__", [])), None)
        if top is None or where is None or top in shipped:
            continue
        if any(parent in installed for parent in Path(where).resolve().parents):
            continue
        shipped.append(top)
    return shipped


def domain(name: str) -> str:
    """The family an environment belongs to in tables: MinAtar, MiniGrid, CliffWalk, a family of your own, or
    Other (any Gymnasium id)."""
    return family_of(name).domain


def success_domains() -> tuple[str, ...]:
    """The domains scored by their success rate (the paper's: CliffWalk and MiniGrid)."""
    return tuple(f.domain for f in families() if f.success)


def scored_by_success(name: str) -> bool:
    """Whether the paper scores the environment by its success rate, not its return."""
    return family_of(name).success


def canonical_name(name: str) -> str:
    """The one spelling of a name (`MinAtar/Breakout-v0` -> `MinAtar/Breakout`); other names unchanged."""
    return family_of(name).canonical_name(name)


@dataclass(frozen=True)
class EnvSpec:
    """What the learner needs to know about an environment, without stepping it."""

    name: str
    obs_shape: tuple[int, ...]
    obs_dtype: str
    n_actions: int
    has_success: bool
    binary_obs: bool  # every observation entry is 0 or 1 (stored bit-packed): MinAtar's, a one-hot state's
    # (rows, columns) when the observation is a one-hot of a grid's cell (CliffWalk's): the run counts its
    # training visits per cell and the report draws them as a heatmap; else None
    state_grid: tuple[int, int] | None
    env_kwargs: str = ""  # --env-kwargs, canonical JSON ('' for none): every env of the run is made with it
    wrappers: str = ""  # --wrappers, canonical JSON ('' for none): every env of the run is wrapped by them
    # how the networks read the observations (`learner.methods.reading`: network, layout, pixels)
    read_as: Reading | None = None  # (None: the default for the shape, `learner.methods.reading.default`)

    @property
    def reading(self) -> Reading:
        """How the networks read the observations."""
        return self.read_as or default(self.obs_shape)


def _build(name: str, kwargs: str = "", render_mode: str | None = None, wrappers: str = "") -> tuple[gym.Env, bool]:
    """The environment for a canonical name (made with the JSON object `kwargs`, and `render_mode` where given;
    wrapped by `wrappers`, and its Discrete observation one-hot encoded) and whether it has a notion of success."""
    given = parse_env_kwargs(kwargs)
    family = family_of(name)
    if given and not family.takes_kwargs:
        raise UnknownEnvError(f"--env-kwargs {kwargs!r}: {name} takes no keyword arguments (only Gymnasium "
                              "ids, module:Id and the MiniGrid tasks do)")
    if render_mode and not family.renders:
        raise UnknownEnvError(f"{name} renders no frames (its family, {family.domain}, declares none)")
    env = family.make(name, Kwargs(given, kwargs), render_mode)
    env = observable(apply_wrappers(env, wrappers, name), name)
    return (env if family.trusted and not wrappers else Checked(env, name)), family.success


def make_env(name: str, seed: int | None = None, kwargs: str = "", render_mode: str | None = None,
             wrappers: str = "") -> gym.Env:
    """A seeded environment by user-facing name (`kwargs`: `--env-kwargs`, a JSON object; `render_mode`:
    Gymnasium's, for a video; `wrappers`: `--wrappers`); raises UnknownEnvError with the known names."""
    env, _ = _build(canonical_name(name), kwargs, render_mode, wrappers)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env


def env_spec(name: str, kwargs: str = "", wrappers: str = "", layout: str = "auto", network: str = "auto",
             pixels: str = "auto") -> EnvSpec:
    """What a run needs to know of an environment (`EnvSpec`), made once; `layout`, `network` and `pixels`:
    `--obs-layout`, `--network` and `--pixels` (`learner.methods.reading.choose`)."""
    name, kwargs, wrappers = canonical_name(name), canonical_kwargs(kwargs), canonical_wrappers(wrappers)
    env, has_success = _build(name, kwargs, wrappers=wrappers)
    space = env.observation_space
    if not space.shape:
        env.close()
        raise UnknownEnvError(f"env {name!r} has a 0-d observation space {space}; give a Box of at least one "
                              "dimension (a scalar as shape (1,))")
    try:
        reading = choose(tuple(space.shape), space.dtype, getattr(space, "low", 0), getattr(space, "high", 1),
                         layout, network, pixels)
    except ReadingError:
        env.close()
        raise
    grid = getattr(env.unwrapped, "state_grid", None) if not wrappers else None
    spec = EnvSpec(
        name=name,
        obs_shape=tuple(int(d) for d in space.shape),
        obs_dtype=np.dtype(space.dtype).name,
        n_actions=int(env.action_space.n),  # type: ignore[attr-defined]  # Space has no .n; a Discrete one does
        has_success=has_success,
        binary_obs=bool(np.dtype(space.dtype) == np.bool_ or grid),
        state_grid=grid,
        env_kwargs=kwargs,
        wrappers=wrappers,
        read_as=reading,
    )
    env.close()
    return spec


load_plugins(PLUGINS, "environment families")  # (last: a plugin imports this package's names)
