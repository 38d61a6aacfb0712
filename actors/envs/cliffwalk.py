"""CliffWalk, the paper's toy (spec §6): 4×12, +1 at the goal, −1 into the cliff, scored by its success rate."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from actors.envs.registry import Family, register


class CliffWalk(gym.Env):
    """4×12 cliff walk (Sutton & Barto): +1 at the goal, −1 into the cliff (both end the episode).

    Observation: one-hot of the 48 cells (uint8). Actions: 0 up, 1 right, 2 down, 3 left. Frames
    (`render_mode="rgb_array"`): the grid as Sutton & Barto draw it, `CELL` pixels a cell: the cliff dark, the start
    blue, the goal green, the agent a red square.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    CELL = 20
    _COLOURS = {"floor": (235, 235, 235), "line": (160, 160, 160), "cliff": (60, 60, 60), "start": (120, 170, 230),
                "goal": (110, 200, 120), "agent": (220, 50, 40)}

    ROWS, COLS = 4, 12
    START, GOAL = (3, 0), (3, 11)
    MAX_STEPS = 100
    _MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))
    state_grid = (ROWS, COLS)  # its observation is a one-hot of the cell (`EnvSpec.state_grid`)

    def __init__(self, render_mode: str | None = None):
        self.render_mode = render_mode
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

    def render(self):
        """The grid and the agent, uint8 (ROWS·CELL, COLS·CELL, 3), for `render_mode="rgb_array"`; else None."""
        if self.render_mode != "rgb_array":
            return None
        kinds = np.full((self.ROWS, self.COLS), "floor", dtype=object)
        kinds[self.ROWS - 1, 1:self.COLS - 1] = "cliff"
        kinds[self.START], kinds[self.GOAL] = "start", "goal"
        n = self.CELL
        img = np.empty((self.ROWS * n, self.COLS * n, 3), dtype=np.uint8)
        for (r, c), kind in np.ndenumerate(kinds):
            img[r * n:(r + 1) * n, c * n:(c + 1) * n] = self._COLOURS[kind]
        img[::n, :], img[:, ::n] = self._COLOURS["line"], self._COLOURS["line"]
        img[-1, :], img[:, -1] = self._COLOURS["line"], self._COLOURS["line"]
        r, c, m = self._pos[0] * n, self._pos[1] * n, n // 4
        img[r + m:r + n - m, c + m:c + n - m] = self._COLOURS["agent"]
        return img


register(Family("CliffWalk", names=("CliffWalk",), make=lambda name, kwargs, render_mode: CliffWalk(render_mode),
                success=True, takes_kwargs=False, trusted=True))
