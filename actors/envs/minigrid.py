"""The paper's six MiniGrid tasks (spec §6): the full grid observed, the paper's rewards and action sets, scored by
their success rate."""

from __future__ import annotations

from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np

from actors.envs.registry import Family, Kwargs, make_registered, register

# name -> (minigrid id, kept actions of minigrid's Actions enum)
_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE = 0, 1, 2, 3, 5
TASKS = {
    "DoorKey": ("MiniGrid-DoorKey-6x6-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "Unlock": ("MiniGrid-Unlock-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "SimpleCrossing-Easy": ("MiniGrid-SimpleCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "SimpleCrossing-Hard": ("MiniGrid-SimpleCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Easy": ("MiniGrid-LavaCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Hard": ("MiniGrid-LavaCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
}


class _MiniGridEnv(Protocol):
    """What the wrapper reads of minigrid's `MiniGridEnv` (its unwrapped env; minigrid is imported lazily)."""

    width: int
    height: int
    max_steps: int
    grid: Any  # minigrid.core.grid.Grid
    agent_pos: tuple[int, int]
    agent_dir: int


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
        from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

        u = cast(_MiniGridEnv, env.unwrapped)
        # the codes' own bounds, per channel (the state channel holds the agent's direction, 0-3, in its cell):
        # codes, not pixels, so the networks read them unscaled (`learner.methods.reading`)
        high = np.broadcast_to(np.array([max(OBJECT_TO_IDX.values()), max(COLOR_TO_IDX.values()),
                                         max(*STATE_TO_IDX.values(), 3)], dtype=np.uint8), (u.width, u.height, 3))
        # (gymnasium types Box's dtype as float32 only)
        self.observation_space = gym.spaces.Box(0, high, shape=(u.width, u.height, 3), dtype=np.uint8)  # type: ignore[arg-type]
        self._scale = u.max_steps / 100.0

    def _observe(self) -> np.ndarray:
        from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX  # (minigrid: 1 s to import)

        u = cast(_MiniGridEnv, self.env.unwrapped)
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


def make(name: str, kwargs: Kwargs, render_mode: str | None) -> gym.Env:
    import minigrid  # noqa: F401  (registers the MiniGrid ids)

    gid, actions = TASKS[name]
    fixed: dict[str, str | bool] = {"render_mode": render_mode} if render_mode else {}
    if render_mode and "highlight" not in kwargs:  # the paper's agent sees the whole grid: no view cone drawn
        fixed["highlight"] = False
    return MiniGridPaper(make_registered(name, gid, kwargs, disable_env_checker=True, **fixed), actions)


register(Family("MiniGrid", names=tuple(TASKS), make=make, success=True, trusted=True))
