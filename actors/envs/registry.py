"""The catalogue of environment families: each family is one module (`cliffwalk.py`, `minatar.py`, `minigrid.py`,
`gymnasium_ids.py`, or one of your own) that declares its names, its maker, its domain, how it is scored and its
defaults, and calls `register` once. A family of your own lives in a folder of your own: name its module in
`BETA_DQN_ENVS` (comma-separated, as `BETA_DQN_METHODS` names methods), and every command, Ray worker and report
finds it; nothing else changes. `gymnasium_ids` (any Gymnasium id, `module:Id`) stays last: it takes every name
no other family owns."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym

PLUGINS = "BETA_DQN_ENVS"  # environment variable: modules (comma-separated) that `register` families of their own


class UnknownEnvError(ValueError):
    pass


class Kwargs(dict):
    """`--env-kwargs` as the keyword arguments a family's maker is given, with the text they were given as."""

    def __init__(self, value: dict, text: str = ""):
        super().__init__(value)
        self.text = text


@dataclass(frozen=True)
class Family:
    """One family of environments.

    - `domain`: its name in tables ("MinAtar"); a table groups and averages by it.
    - `names`: the names `known_names` lists (a family that takes open-ended names may list none).
    - `make(name, kwargs, render_mode)`: the raw environment for one of its canonical names (`kwargs`: `Kwargs`,
      `render_mode`: Gymnasium's, or None); UnknownEnvError, one line, where it cannot be made.
    - `owns(name)`: whether a name is one of its environments (default: one of `names`); `canonical(name)`: the one
      spelling runs and tables use (default: the name as given).
    - `success`: its environments report `info["success"]` at an episode's end, and the paper scores them by the
      success rate over evaluation episodes (else by the return).
    - `takes_kwargs`, `renders`: whether `--env-kwargs` and a render mode (for videos) reach its maker.
    - `gamma`, `lr`: its environments' default discount and learning rate, where `beta_dqn/configuration/
      defaults.toml` (the spec's values for the built-in environments) names none.
    - `trusted`: the built-in families' (CliffWalk, MinAtar, MiniGrid); every other family's environments run
      inside `checked.Checked`, so that their failures mid-run are one line.
    The network follows the observation's shape (`learner.methods.networks`): a W×H×C grid gets the conv net,
    anything else the MLP."""

    domain: str
    names: tuple[str, ...]
    make: Callable[[str, Kwargs, str | None], gym.Env]
    owns: Callable[[str], bool] | None = None
    canonical: Callable[[str], str] | None = None
    success: bool = False
    takes_kwargs: bool = True
    renders: bool = True
    gamma: float | None = None
    lr: float | None = None
    trusted: bool = False  # this project's own: its environments run without `checked.Checked` around them

    def has(self, name: str) -> bool:
        return self.owns(name) if self.owns is not None else name in self.names

    def canonical_name(self, name: str) -> str:
        return self.canonical(name) if self.canonical is not None else name


FAMILIES: list[Family] = []  # in the order they are asked: the first that owns a name makes it
_LAST: list[Family] = []  # the family that takes every name no other owns (`gymnasium_ids`)


def register(family: Family) -> None:
    """Add a family (before the catalogue's last, which takes every other name); ValueError for a second family
    of one domain, a listed name another family owns, or another family's listed name the new one would own. (Two
    `owns` predicates are compared on the listed names only: a family whose `owns` takes names an earlier
    family's `owns` takes, and that it does not list, never gets them.)"""
    if not isinstance(family, Family):
        raise ValueError(f"register takes a Family, got {type(family).__name__}")
    if any(f.domain == family.domain for f in families()):
        raise ValueError(f"an environment family named {family.domain!r} is registered already")
    taken = sorted({n for f in FAMILIES for n in family.names if f.has(n)}
                   | {n for f in FAMILIES for n in f.names if family.has(n)})
    if taken:
        raise ValueError(f"family {family.domain!r}: {', '.join(taken)} belong to another family already")
    FAMILIES.append(family)


def register_last(family: Family) -> None:
    """The catalogue's last family, which owns every name no other does (`gymnasium_ids`): one."""
    if _LAST:
        raise ValueError(f"the catalogue's last family is {_LAST[0].domain!r} already")
    _LAST.append(family)


def families() -> list[Family]:
    return [*FAMILIES, *_LAST]


def family_of(name: str) -> Family:
    """The family that owns `name` (the last family owns every name no other does)."""
    for family in families():
        if family.has(name):
            return family
    raise UnknownEnvError(unknown(name))


def known_names() -> list[str]:
    return [name for family in families() for name in family.names]


def unknown(name: str) -> str:
    return (f"unknown env {name!r}; known: {', '.join(known_names())}, "
            "any registered Gymnasium id with discrete actions, or module:Id for an id your module registers")


_WARNED: dict = {}  # what `make_registered` said already (each warning once a process, as Python shows one)


def make_registered(name: str, env_id: str, kwargs: Kwargs, **fixed) -> gym.Env:
    """`gym.make(env_id)` for the environment `name`; what Gymnasium warns of while making it (an out-of-date
    version) is said after it is made, never before the one line of an env that cannot be made."""
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
        given = f" with --env-kwargs {kwargs.text}" if kwargs else ""
        raise UnknownEnvError(f"env {name!r} is registered with Gymnasium but cannot be made here{given} "
                              f"({type(e).__name__}: {reason})") from None
