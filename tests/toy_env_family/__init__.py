"""An environment family from a folder of its own (tests/test_env_family.py), never shipped: a chain of cells,
step right to reach the goal at the end (+1, a success), left to go back; `ToyChain/Short` has 4 cells,
`ToyChain/Long` 8. Named in `BETA_DQN_ENVS`, it is one registration line; nothing of the project knows it."""

import gymnasium as gym
import numpy as np

from actors.envs import Family, UnknownEnvError, register

LENGTHS = {"ToyChain/Short": 4, "ToyChain/Long": 8}


class Chain(gym.Env):
    def __init__(self, length: int):
        self.length = length
        self.observation_space = gym.spaces.Box(0, 1, shape=(length,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)  # 0 left, 1 right
        self.cell = self.t = 0

    def _obs(self):
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self.cell] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell = self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.cell = max(0, min(self.length - 1, self.cell + (1 if int(action) == 1 else -1)))
        self.t += 1
        done = self.cell == self.length - 1
        truncated = not done and self.t >= 4 * self.length
        info = {"success": done} if done or truncated else {}
        return self._obs(), float(done), done, truncated, info


def make(name, kwargs, render_mode):
    if name not in LENGTHS:
        raise UnknownEnvError(f"unknown env {name!r}; the toy chains are {', '.join(LENGTHS)}")
    return Chain(LENGTHS[name])


register(Family("ToyChain", names=tuple(LENGTHS), make=make, owns=lambda name: name.startswith("ToyChain/"),
                success=True, takes_kwargs=False, renders=False, gamma=0.95, lr=1e-3))
