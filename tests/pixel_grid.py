"""A tiny grid world seen only through its pixels, for the image tests (`tests/test_images.py`): `--env
tests.pixel_grid:PixelGrid-v0`.

A `size`×`size` grid (default 4), the agent starting in the top-left cell and the goal in the bottom-right one; four
actions (up, right, down, left; into a wall: stay). Reaching the goal ends the episode with reward 1 and success;
each other step costs 0.01; an episode is cut after `4·size` steps. The observation is an RGB image, `CELL` pixels
a cell, uint8 with bounds 0 and 255: the agent's cell red, the goal's green, the rest dark grey; `layout="hwc"`
(height × width × 3) or `"chw"` (3 × height × width, as a channels-first frame is).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

CELL = 3
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))


class PixelGrid(gym.Env):
    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, size: int = 4, layout: str = "hwc", render_mode: str | None = None):
        if layout not in ("hwc", "chw"):
            raise ValueError(f"layout {layout!r}: give hwc or chw")
        self.size, self.layout, self.render_mode = size, layout, render_mode
        side = size * CELL
        shape = (side, side, 3) if layout == "hwc" else (3, side, side)
        self.observation_space = gym.spaces.Box(0, 255, shape=shape, dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(4)
        self.pos, self.steps = (0, 0), 0

    def _image(self) -> np.ndarray:
        img = np.full((self.size * CELL, self.size * CELL, 3), 40, dtype=np.uint8)
        for (r, c), colour in (((self.size - 1, self.size - 1), (0, 255, 0)), (self.pos, (255, 0, 0))):
            img[r * CELL:(r + 1) * CELL, c * CELL:(c + 1) * CELL] = colour
        return img

    def _obs(self) -> np.ndarray:
        img = self._image()
        return img if self.layout == "hwc" else np.ascontiguousarray(img.transpose(2, 0, 1))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos, self.steps = (0, 0), 0
        return self._obs(), {}

    def step(self, action):
        dr, dc = MOVES[int(action)]
        self.pos = (min(max(self.pos[0] + dr, 0), self.size - 1), min(max(self.pos[1] + dc, 0), self.size - 1))
        self.steps += 1
        success = self.pos == (self.size - 1, self.size - 1)
        truncated = not success and self.steps >= 4 * self.size
        info = {"success": success} if success or truncated else {}
        return self._obs(), 1.0 if success else -0.01, success, truncated, info

    def render(self):
        return self._image() if self.render_mode == "rgb_array" else None


gym.register(id="PixelGrid-v0", entry_point=PixelGrid)


def channels_first(env: gym.Env) -> gym.Env:
    """A wrapper of ours (a function, by import path): HWC frames as CHW."""
    space = env.observation_space
    h, w, c = space.shape
    return gym.wrappers.TransformObservation(
        env, lambda obs: np.ascontiguousarray(obs.transpose(2, 0, 1)),
        gym.spaces.Box(0, 255, shape=(c, h, w), dtype=np.uint8))
