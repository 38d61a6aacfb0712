"""The MinAtar games (spec §6): `MinAtar/<Game>` (or `MinAtar/<Game>-v0`), v0 flavour, scored by their return."""

from __future__ import annotations

import logging

import gymnasium as gym

from actors.envs.registry import Family, UnknownEnvError, register, unknown

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")


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


def make(name: str, kwargs: dict, render_mode: str | None) -> gym.Env:
    game = name.split("/", 1)[1]
    if game not in GAMES:
        raise UnknownEnvError(unknown(name))
    # minatar logs a warning at import when seaborn is missing; we never render.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        import minatar  # noqa: F401
    finally:
        root.setLevel(level)
    return MinAtar("".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(game)))


def canonical(name: str) -> str:
    """`MinAtar/Breakout-v0` -> `MinAtar/Breakout`."""
    return name[: -len("-v0")] if name.endswith("-v0") else name


register(Family("MinAtar", names=tuple(f"MinAtar/{g}" for g in GAMES), make=make,
                owns=lambda name: name.startswith("MinAtar/"), canonical=canonical, takes_kwargs=False, renders=False,
                trusted=True))
