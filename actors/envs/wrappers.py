"""Wrappers named by their import path (`--wrappers`), applied to every environment of a run in order, and the one
this project applies itself: a Discrete observation one-hot encoded (`OneHot`).

`--wrappers` takes one import path (`minigrid.wrappers.ImgObsWrapper`, or `module:Name`), or a JSON array whose
items are each a path or a one-key object mapping a path to its keyword arguments:
`'["gymnasium.wrappers.GrayscaleObservation", {"gymnasium.wrappers.FrameStackObservation": {"stack_size": 4}}]'`.
A path names any callable that takes an environment (and the keyword arguments) and returns one: a Gymnasium
wrapper class, or a function of yours that chains several. Its canonical spelling (`canonical_wrappers`) is the
array of one-key objects, keys sorted, no spaces: what config.json records and every worker applies.
"""

from __future__ import annotations

import importlib
import json

import gymnasium as gym
import numpy as np

from actors.envs.registry import UnknownEnvError

EXAMPLE = '\'[{"gymnasium.wrappers.FrameStackObservation": {"stack_size": 4}}]\''


def _item(item, text: str) -> tuple[str, dict]:
    if isinstance(item, str):
        return item, {}
    if isinstance(item, dict) and len(item) == 1:
        (path, kwargs), = item.items()
        if isinstance(kwargs, dict):
            return path, kwargs
    raise UnknownEnvError(f"--wrappers: {text!r}: each item is an import path or a one-key object mapping a path "
                          f"to its keyword arguments, e.g. {EXAMPLE}; not {json.dumps(item)}")


def parse_wrappers(text: str) -> list[tuple[str, dict]]:
    """`--wrappers` as [(path, kwargs), ...] ('' or none: []); anything else, one line saying why. (The Python API
    and a configuration file give a list as its JSON.)"""
    if not isinstance(text, str):
        raise UnknownEnvError(f"--wrappers: {text!r}: give an import path or a JSON array, e.g. {EXAMPLE}")
    elif not text.strip():
        return []
    elif text.strip()[0] in "[{":
        try:
            value = json.loads(text)
        except ValueError as e:
            raise UnknownEnvError(f"--wrappers: {text!r} is not JSON ({e}); give a path or an array, e.g. {EXAMPLE}"
                                  ) from None
        items = value if isinstance(value, list) else [value]
    else:
        items = [text.strip()]
    out = []
    for item in items:
        path, kwargs = _item(item, text)
        if not path or path.strip() != path or not all(p.isidentifier() for p in path.replace(":", ".").split(".")):
            raise UnknownEnvError(f"--wrappers: {path!r} is not an import path (e.g. "
                                  "gymnasium.wrappers.FlattenObservation or mymodule:my_wrapper)")
        out.append((path, kwargs))
    return out


def canonical_wrappers(text) -> str:
    """`--wrappers` in one spelling: a JSON array of one-key objects, keys sorted, no spaces; '' for none."""
    items = parse_wrappers(text)
    return json.dumps([{p: k} for p, k in items], sort_keys=True, separators=(",", ":")) if items else ""


def wrapper_modules(text: str) -> list[str]:
    """The modules the wrappers are imported from (Ray's workers need the user's: `actors.envs.env_modules`)."""
    return [_split(path)[0] for path, _ in parse_wrappers(text)]


def _split(path: str) -> tuple[str, str]:
    if ":" in path:
        module, _, attribute = path.partition(":")
    else:
        module, _, attribute = path.rpartition(".")
    return module, attribute


def load_wrapper(path: str):
    """The callable an import path names; one line naming what was tried where it cannot be had."""
    module_name, attribute = _split(path)
    if not module_name or not attribute:
        raise UnknownEnvError(f"--wrappers: {path!r} names no module (give module.Name or module:Name)")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - the user's module: whatever it raises is one line
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise UnknownEnvError(f"--wrappers: module {module_name!r} cannot be imported ({type(e).__name__}: "
                              f"{reason})") from None
    wrapper = getattr(module, attribute, None)
    if not callable(wrapper):
        raise UnknownEnvError(f"--wrappers: module {module_name!r} has no callable {attribute!r}")
    return wrapper


def _tuples(value):
    """JSON's arrays as tuples, at any depth (a shape, as Gymnasium's wrappers take it)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def apply_wrappers(env: gym.Env, text: str, name: str) -> gym.Env:
    """`env` wrapped by each of `--wrappers` in order (JSON arrays in their keyword arguments given as tuples, as
    shapes are); one line naming the wrapper that fails."""
    for path, kwargs in parse_wrappers(text):
        wrapper = load_wrapper(path)
        kwargs = _tuples(kwargs)
        try:
            wrapped = wrapper(env, **kwargs)
        except Exception as e:  # noqa: BLE001 - the user's choice of wrapper and arguments: one line
            reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
            env.close()
            raise UnknownEnvError(f"--wrappers: {path}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) on "
                                  f"env {name!r} failed ({type(e).__name__}: {reason})") from None
        if not isinstance(wrapped, gym.Env):
            env.close()
            raise UnknownEnvError(f"--wrappers: {path} returned {type(wrapped).__name__}, not a Gymnasium "
                                  "environment")
        env = wrapped
    return env


class OneHot(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """A Discrete(n) observation as a one-hot vector of n booleans (stored bit-packed; the MLP reads it)."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Discrete)
        self._n, self._start = int(space.n), int(space.start)
        self.observation_space = gym.spaces.Box(0, 1, shape=(self._n,), dtype=np.bool_)

    def observation(self, observation):
        out = np.zeros(self._n, dtype=np.bool_)
        out[int(observation) - self._start] = True
        return out


def hint(space: gym.Space) -> str:
    """The wrapper to name where an observation space is refused."""
    if isinstance(space, gym.spaces.Dict) and "image" in space.spaces:
        return ("for a MiniGrid id, --wrappers minigrid.wrappers.ImgObsWrapper --pixels false (its image, codes "
                "read unscaled) or minigrid.wrappers.FlatObsWrapper; else --wrappers "
                "gymnasium.wrappers.FlattenObservation")
    return "--wrappers gymnasium.wrappers.FlattenObservation flattens it into a Box"


def observable(env: gym.Env, name: str) -> gym.Env:
    """`env` with an observation the networks read: a Box as it is, a Discrete one-hot encoded (`OneHot`); any other
    space refused in one line naming the wrapper that makes it a Box. Its actions must be Discrete."""
    if not isinstance(env.action_space, gym.spaces.Discrete):
        env.close()
        raise UnknownEnvError(f"env {name!r} has action space {env.action_space}; only Discrete is supported")
    space = env.observation_space
    if isinstance(space, gym.spaces.Discrete):
        return OneHot(env)
    if not isinstance(space, gym.spaces.Box):
        env.close()
        keys = f" of {', '.join(map(str, space.spaces))}" if isinstance(space, gym.spaces.Dict) else ""
        raise UnknownEnvError(f"env {name!r} has a {type(space).__name__} observation space{keys}; only Box and "
                              f"Discrete are supported: {hint(space)}")
    return env
