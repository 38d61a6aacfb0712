"""A custom environment: a corridor of `length` cells; step right to its end (reward 1) within 4 × length steps.

    python -m learner.main --env examples.corridor:Corridor-v0 --env-kwargs '{"length": 6}' --total-steps 20000
"""

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    def __init__(self, length: int = 8):
        self.length, self.cell = length, 0
        self.observation_space = gym.spaces.Box(0, 1, shape=(length,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)  # 0: left, 1: right

    def _obs(self):
        return np.eye(self.length, dtype=np.float32)[self.cell]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell, self.steps = 0, 0
        return self._obs(), {}

    def step(self, action):
        self.cell = min(max(self.cell + (1 if action == 1 else -1), 0), self.length - 1)
        self.steps += 1
        done = self.cell == self.length - 1
        return self._obs(), float(done), done, self.steps >= 4 * self.length, {}


gym.register(id="Corridor-v0", entry_point=Corridor)
