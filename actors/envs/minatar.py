"""The MinAtar games (spec §6): `MinAtar/<Game>` (or `MinAtar/<Game>-v0`), v0 flavour, scored by their return."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np

from actors.envs.registry import Family, UnknownEnvError, register, unknown

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
CELL = 16  # pixels per cell of a rendered frame: a 10×10 game is 160×160


def palette(channels: int) -> np.ndarray:
    """MinAtar's own colours (its `display_state` and GUI): black for an empty cell, then one colour per channel,
    seaborn's `color_palette("cubehelix", channels)` (matplotlib's cubehelix map between its ends), as uint8 RGB,
    shape (channels + 1, 3)."""
    from matplotlib import colormaps  # (only to render)

    colours = colormaps["cubehelix"](np.linspace(0, 1, channels + 2)[1:-1])[:, :3]
    return np.round(np.vstack([np.zeros((1, 3)), colours]) * 255).astype(np.uint8)


def frame(state: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """A MinAtar state (rows × columns × channels, 0/1) drawn as MinAtar draws it: each cell in the colour of the
    highest-numbered channel set there (black where none is), CELL pixels square. uint8, (rows·CELL, columns·CELL,
    3)."""
    channels = state.shape[-1]
    index = np.amax(state.astype(np.int64) * np.arange(1, channels + 1), axis=-1)
    return np.repeat(np.repeat(colours[index], CELL, axis=0), CELL, axis=1)


class MinAtar(gym.Env):
    """A MinAtar game (v0 flavour: the full 6-action set, sticky actions 0.1) as a Gymnasium env.

    `reset(seed=s)` seeds both Gymnasium's generator (`np_random`, which `check_env` inspects) and the
    game's own `RandomState` with `s`, as MinAtar's `BaseEnv` seeds the game, so a seed gives the same
    episodes it always gave.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, game: str, render_mode: str | None = None):
        from minatar import Environment  # only the environment asked for is imported (minatar: 4 s)

        self.game = Environment(env_name=game)
        self.render_mode = render_mode
        self._colours: np.ndarray | None = None
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

    def render(self):
        """The game as MinAtar shows it (`frame`), for `render_mode="rgb_array"`; None in any other mode."""
        if self.render_mode != "rgb_array":
            return None
        if self._colours is None:
            self._colours = palette(self.game.state_shape()[-1])
        return frame(self.game.state(), self._colours)


def make(name: str, kwargs: dict, render_mode: str | None) -> gym.Env:
    game = name.split("/", 1)[1]
    if game not in GAMES:
        raise UnknownEnvError(unknown(name))
    # minatar logs a warning at import when seaborn is missing (its own display needs it; our frames do not)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        import minatar  # noqa: F401
    finally:
        root.setLevel(level)
    return MinAtar("".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(game)),
                   render_mode)


def canonical(name: str) -> str:
    """`MinAtar/Breakout-v0` -> `MinAtar/Breakout`."""
    return name[: -len("-v0")] if name.endswith("-v0") else name


register(Family("MinAtar", names=tuple(f"MinAtar/{g}" for g in GAMES), make=make,
                owns=lambda name: name.startswith("MinAtar/"), canonical=canonical, takes_kwargs=False,
                trusted=True))
