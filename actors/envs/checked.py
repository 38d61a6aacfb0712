"""An environment the project does not own (any Gymnasium id, `module:Id`, a family of your own), checked as it
runs: what it raises, an observation of another shape than its space says, a non-finite observation, the old
Gym API, each is `EnvFailed`, one line naming the environment and its step, never the traceback of the loop that
stepped it. The built-in families (`Family.trusted`) run unwrapped."""

from __future__ import annotations

from typing import cast

import gymnasium as gym
import numpy as np


class EnvFailed(RuntimeError):
    """An environment failed mid-run: its text names the environment, the step and the cause."""


def _cause(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}".rstrip(": ")


class Checked(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """`env` with every `reset` and `step` checked (a shape comparison a step, and `isfinite` where the space
    holds floats). It records its arguments, so Gymnasium can build the same environment again from `env.spec`."""

    def __init__(self, env: gym.Env, name: str):
        gym.utils.RecordConstructorArgs.__init__(self, name=name)
        gym.Wrapper.__init__(self, env)
        self._name, self._steps = name, 0
        space = env.observation_space
        # (a space without a shape, a Dict's, raises the TypeError of tuple(None) here, as it always did)
        self._shape = tuple(cast("tuple[int, ...]", space.shape))
        self._floats = np.issubdtype(space.dtype, np.floating)
        self._whole = np.issubdtype(space.dtype, np.integer) or space.dtype == np.bool_

    def _where(self, what: str) -> str:
        return f"env {self._name!r} at its {what}"

    def _check(self, obs, what: str) -> None:
        shape = tuple(np.shape(obs))
        if shape != self._shape:
            raise EnvFailed(f"{self._where(what)}: an observation of shape {shape}, where its observation space "
                            f"says {self._shape}")
        if self._floats and not np.isfinite(obs).all():
            raise EnvFailed(f"{self._where(what)}: a non-finite observation (nan or inf)")
        if self._whole and np.issubdtype(np.asarray(obs).dtype, np.floating):  # stored as the space's dtype
            raise EnvFailed(f"{self._where(what)}: an observation of {np.asarray(obs).dtype} where its observation "
                            f"space holds {self.env.observation_space.dtype} (it would be stored truncated)")

    def reset(self, **kwargs):
        try:
            out = self.env.reset(**kwargs)
        except Exception as e:  # noqa: BLE001 - the environment's own code: whatever it raises is one line
            raise EnvFailed(f"{self._where('reset')} (after {self._steps} steps): {_cause(e)}") from e
        if not (isinstance(out, tuple) and len(out) == 2):
            raise EnvFailed(f"{self._where('reset')}: it returned {type(out).__name__}, not (observation, info): "
                            "the Gymnasium API (0.26 and later) is needed")
        self._check(out[0], "reset")
        return out

    def step(self, action):
        self._steps += 1
        what = f"step {self._steps:,}"
        try:
            out = self.env.step(action)
        except Exception as e:  # noqa: BLE001 - the environment's own code: whatever it raises is one line
            raise EnvFailed(f"{self._where(what)}: {_cause(e)}") from e
        if not (isinstance(out, tuple) and len(out) == 5):
            got = f"{len(out)} values" if isinstance(out, tuple) else type(out).__name__
            raise EnvFailed(f"{self._where(what)}: it returned {got}, not (observation, reward, terminated, "
                            "truncated, info): the Gymnasium API (0.26 and later) is needed")
        self._check(out[0], what)
        return out
