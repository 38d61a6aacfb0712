"""One environment factory: `make_env(name, seed)` (spec §6).

Names users type: `CliffWalk`, `MinAtar/<Game>` (or `MinAtar/<Game>-v0`), the six MiniGrid task names
below, any registered Gymnasium id with a discrete action space and a Box observation, or `module:Id` (a
module of the user's that registers `Id` with Gymnasium when imported: imported here, and in every Ray
worker, which `env_modules` ships it to). `--env-kwargs` (a JSON object) reaches the constructor of
Gymnasium ids, `module:Id` envs and the MiniGrid tasks.
Every environment reports `info["success"]` on its last step where the task has a notion of success.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import sysconfig
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import numpy as np

MINATAR_GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")

# name -> (minigrid id, kept actions of minigrid's Actions enum)
_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE = 0, 1, 2, 3, 5
MINIGRID_TASKS = {
    "DoorKey": ("MiniGrid-DoorKey-6x6-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "Unlock": ("MiniGrid-Unlock-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "SimpleCrossing-Easy": ("MiniGrid-SimpleCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "SimpleCrossing-Hard": ("MiniGrid-SimpleCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Easy": ("MiniGrid-LavaCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Hard": ("MiniGrid-LavaCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
}


class UnknownEnvError(ValueError):
    pass


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


def _import_env_module(name: str) -> str:
    """`module:Id` -> Id, the module imported (it registers Id); one line naming what was tried where not."""
    module, _, env_id = name.partition(":")
    if not module or not env_id:
        raise UnknownEnvError(f"env {name!r}: give module:Id, a module that registers the Gymnasium id Id")
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - the user's module: whatever it raises is one line
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise UnknownEnvError(f"env {name!r}: module {module!r} cannot be imported ({type(e).__name__}: {reason}); "
                              "it must be importable from the working directory or the Python path") from None
    if env_id not in gym.registry:
        raise UnknownEnvError(f"env {name!r}: module {module!r} was imported but registers no Gymnasium id "
                              f"{env_id!r} (gymnasium.register(id={env_id!r}, entry_point=...))")
    return env_id


def env_modules(names) -> list[ModuleType]:
    """The user's modules behind `module:Id` names that Ray's workers must be sent (`runtime_env`'s
    `py_modules`, on every node): each top-level package or single-file module imported here, unless it is
    installed (in site-packages, where every node's environment has it as this one does)."""
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    shipped = []
    for name in names:
        if ":" not in name:
            continue
        top = sys.modules.get(name.partition(":")[0].split(".")[0])
        where = getattr(top, "__file__", None) or next(iter(getattr(top, "__path__", [])), None)
        if top is None or where is None or top in shipped:
            continue
        if any(parent in installed for parent in Path(where).resolve().parents):
            continue
        shipped.append(top)
    return shipped


def known_names() -> list[str]:
    return ["CliffWalk", *(f"MinAtar/{g}" for g in MINATAR_GAMES), *MINIGRID_TASKS]


def domain(name: str) -> str:
    """The family an environment belongs to in tables: MinAtar, MiniGrid, CliffWalk, or Other."""
    if name.startswith("MinAtar/"):
        return "MinAtar"
    if name in MINIGRID_TASKS:
        return "MiniGrid"
    return name if name == "CliffWalk" else "Other"


SUCCESS_DOMAINS = ("MiniGrid", "CliffWalk")  # the domains the paper scores by their success rate


def scored_by_success(name: str) -> bool:
    """Whether the paper scores the environment by its success rate, not its return."""
    return domain(name) in SUCCESS_DOMAINS


def canonical_name(name: str) -> str:
    """`MinAtar/Breakout-v0` -> `MinAtar/Breakout`; other names unchanged."""
    if name.startswith("MinAtar/") and name.endswith("-v0"):
        return name[: -len("-v0")]
    return name


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


class CliffWalk(gym.Env):
    """4×12 cliff walk (Sutton & Barto): +1 at the goal, −1 into the cliff (both end the episode).

    Observation: one-hot of the 48 cells (uint8). Actions: 0 up, 1 right, 2 down, 3 left.
    """

    ROWS, COLS = 4, 12
    START, GOAL = (3, 0), (3, 11)
    MAX_STEPS = 100
    _MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))
    state_grid = (ROWS, COLS)  # its observation is a one-hot of the cell (`EnvSpec.state_grid`)

    def __init__(self):
        self.observation_space = gym.spaces.Box(0, 1, shape=(self.ROWS * self.COLS,), dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self._pos = self.START
        self._t = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.ROWS * self.COLS, dtype=np.uint8)
        obs[self._pos[0] * self.COLS + self._pos[1]] = 1
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._pos, self._t = self.START, 0
        return self._obs(), {}

    def step(self, action):
        dr, dc = self._MOVES[int(action)]
        r = min(max(self._pos[0] + dr, 0), self.ROWS - 1)
        c = min(max(self._pos[1] + dc, 0), self.COLS - 1)
        self._pos, self._t = (r, c), self._t + 1
        reward, terminated, success = 0.0, False, False
        if self._pos == self.GOAL:
            reward, terminated, success = 1.0, True, True
        elif r == self.ROWS - 1 and 0 < c < self.COLS - 1:
            reward, terminated = -1.0, True
        truncated = not terminated and self._t >= self.MAX_STEPS
        info = {"success": success} if terminated or truncated else {}
        return self._obs(), reward, terminated, truncated, info


class MiniGridPaper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """MiniGrid as the paper runs it (spec §6): the full grid as the observation, its rewards, its action sets.

    Observation: the whole grid's (object, colour, state) codes, W×H×3 uint8, the agent's cell holding
    (agent, red, direction), as minigrid's `FullyObsWrapper` + `ImgObsWrapper` give it. Rewards: success
    +MaxSteps/100; lava −MaxSteps/100 (episode ends); otherwise −0.01 per step (minigrid itself rewards only
    success and ends an episode only on success or lava). One wrapper that records its arguments, so
    Gymnasium can build the same environment again from `env.spec` (its `check_env` does).
    """

    def __init__(self, env: gym.Env, actions: tuple[int, ...]):
        gym.utils.RecordConstructorArgs.__init__(self, actions=tuple(actions))
        gym.Wrapper.__init__(self, env)
        self._actions = tuple(actions)
        self.action_space = gym.spaces.Discrete(len(self._actions))
        u = env.unwrapped
        self.observation_space = gym.spaces.Box(0, 255, shape=(u.width, u.height, 3), dtype=np.uint8)
        self._scale = u.max_steps / 100.0

    def _observe(self) -> np.ndarray:
        from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX  # (minigrid: 1 s to import)

        u = self.env.unwrapped
        grid = u.grid.encode()
        grid[u.agent_pos[0], u.agent_pos[1]] = (OBJECT_TO_IDX["agent"], COLOR_TO_IDX["red"], u.agent_dir)
        return grid

    def reset(self, *, seed=None, options=None):
        _, info = self.env.reset(seed=seed, options=options)
        return self._observe(), info

    def step(self, action):
        _, reward, terminated, truncated, info = self.env.step(self._actions[int(action)])
        success = bool(terminated and reward > 0)
        if terminated:
            reward = self._scale if success else -self._scale
        else:
            reward = -0.01
        if terminated or truncated:
            info = {**info, "success": success}
        return self._observe(), reward, terminated, truncated, info


class MinAtar(gym.Env):
    """A MinAtar game (v0 flavour: the full 6-action set, sticky actions 0.1) as a Gymnasium env.

    `reset(seed=s)` seeds both Gymnasium's generator (`np_random`, which `check_env` inspects) and the
    game's own `RandomState` with `s`, as MinAtar's `BaseEnv` seeds the game, so a seed gives the same
    episodes it always gave.
    """

    metadata = {"render_modes": []}

    def __init__(self, game: str):
        from minatar import Environment  # only the environment asked for is imported (minatar: 4 s)

        self.game = Environment(env_name=game)
        self.action_space = gym.spaces.Discrete(self.game.num_actions())
        self.observation_space = gym.spaces.Box(0, 1, shape=self.game.state_shape(), dtype=bool)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.game.seed(seed)
        self.game.reset()
        return self.game.state(), {}

    def step(self, action):
        reward, terminated = self.game.act(int(action))
        return self.game.state(), float(reward), bool(terminated), False, {}


def _minatar_env(game: str) -> gym.Env:
    # minatar logs a warning at import when seaborn is missing; we never render.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        import minatar  # noqa: F401
    finally:
        root.setLevel(level)
    module = "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(game))
    return MinAtar(module)


def _build(name: str, kwargs: str = "", render_mode: str | None = None) -> tuple[gym.Env, bool]:
    """The raw environment for a canonical name (made with the JSON object `kwargs`, and `render_mode` where
    given) and whether it has a notion of success."""
    given = parse_env_kwargs(kwargs)
    fixed = {"render_mode": render_mode} if render_mode else {}
    if name == "CliffWalk" or name.startswith("MinAtar/"):
        if given:
            raise UnknownEnvError(f"--env-kwargs {kwargs!r}: {name} takes no keyword arguments (only Gymnasium "
                                  "ids, module:Id and the MiniGrid tasks do)")
        if render_mode:
            raise UnknownEnvError(f"{name} renders no frames (Gymnasium ids, module:Id envs and the MiniGrid "
                                  f"tasks render {render_mode!r} where their makers wrote it)")
        if name == "CliffWalk":
            return CliffWalk(), True
        game = name.split("/", 1)[1]
        if game not in MINATAR_GAMES:
            raise UnknownEnvError(_unknown(name))
        return _minatar_env(game), False
    if name in MINIGRID_TASKS:
        import minigrid  # noqa: F401  (registers the MiniGrid ids)

        gid, actions = MINIGRID_TASKS[name]
        return MiniGridPaper(_make(name, gid, kwargs, given, disable_env_checker=True, **fixed), actions), True
    if name.startswith("MiniGrid-"):
        import minigrid  # noqa: F401
    env_id = _import_env_module(name) if ":" in name else name
    if env_id not in gym.registry:
        raise UnknownEnvError(_unknown(name))
    env = _make(name, env_id, kwargs, given, **fixed)
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise UnknownEnvError(f"env {name!r} has action space {env.action_space}; only Discrete is supported")
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise UnknownEnvError(f"env {name!r} has observation space {env.observation_space}; only Box is supported")
    return env, False


_WARNED: dict = {}  # what `_make` said already (each warning once a process, as Python shows one)


def _make(name: str, env_id: str, text: str, kwargs: dict, **fixed) -> gym.Env:
    """`gym.make`; what Gymnasium warns of while making it (an out-of-date version) is said after it is made,
    never before the one line of an env that cannot be made."""
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            env = gym.make(env_id, **fixed, **kwargs)
        for warning in said:  # (through the filters again: shown as they would have been)
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno,
                                   registry=_WARNED)
        return env
    except Exception as e:  # noqa: BLE001 - a missing package or shim, or keywords the constructor refuses
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        given = f" with --env-kwargs {text}" if kwargs else ""
        raise UnknownEnvError(f"env {name!r} is registered with Gymnasium but cannot be made here{given} "
                              f"({type(e).__name__}: {reason})") from None


def _unknown(name: str) -> str:
    return (f"unknown env {name!r}; known: {', '.join(known_names())}, "
            "any registered Gymnasium id with discrete actions, or module:Id for an id your module registers")


def make_env(name: str, seed: int | None = None, kwargs: str = "", render_mode: str | None = None) -> gym.Env:
    """A seeded environment by user-facing name (`kwargs`: `--env-kwargs`, a JSON object; `render_mode`:
    Gymnasium's, for a video); raises UnknownEnvError with the known names."""
    env, _ = _build(canonical_name(name), kwargs, render_mode)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env


def env_spec(name: str, kwargs: str = "") -> EnvSpec:
    name, kwargs = canonical_name(name), canonical_kwargs(kwargs)
    env, has_success = _build(name, kwargs)
    space = env.observation_space
    grid = getattr(env.unwrapped, "state_grid", None)
    spec = EnvSpec(
        name=name,
        obs_shape=tuple(int(d) for d in space.shape),
        obs_dtype=np.dtype(space.dtype).name,
        n_actions=int(env.action_space.n),
        has_success=has_success,
        binary_obs=bool(np.dtype(space.dtype) == np.bool_ or grid),
        state_grid=grid,
        env_kwargs=kwargs,
    )
    env.close()
    return spec
