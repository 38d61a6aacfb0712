"""One environment factory: `make_env(name, seed)` (spec §6).

Names users type: `CliffWalk`, `MinAtar/<Game>` (or `MinAtar/<Game>-v0`), the six MiniGrid task names
below, or any registered Gymnasium id with a discrete action space and a Box observation.
Every environment reports `info["success"]` on its last step where the task has a notion of success.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

MINATAR_GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")

# name -> (minigrid id, kept actions of minigrid's Actions enum)
_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE = 0, 1, 2, 3, 5
MINIGRID_TASKS = {
    "DoorKey": ("MiniGrid-DoorKey-6x6-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "Unlock": ("MiniGrid-Unlock-v0", (_LEFT, _RIGHT, _FORWARD, _PICKUP, _TOGGLE)),
    "SimpleCrossing-Easy": ("MiniGrid-SimpleCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "SimpleCrossing-Hard": ("MiniGrid-SimpleCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Easy": ("MiniGrid-LavaCrossingS9N1-v0", (_LEFT, _RIGHT, _FORWARD)),
    "LavaCrossing-Hard": ("MiniGrid-LavaCrossingS9N2-v0", (_LEFT, _RIGHT, _FORWARD)),
}
# Default learning rates (spec §4); every other environment uses 3e-4.
_LEARNING_RATES = {"MinAtar/Asterix": 3e-5, "MinAtar/Seaquest": 1e-4,
                   "SimpleCrossing-Easy": 1e-4, "LavaCrossing-Hard": 1e-4}


class UnknownEnvError(ValueError):
    pass


def known_names() -> list[str]:
    return ["CliffWalk", *(f"MinAtar/{g}" for g in MINATAR_GAMES), *MINIGRID_TASKS]


def canonical_name(name: str) -> str:
    """`MinAtar/Breakout-v0` -> `MinAtar/Breakout`; other names unchanged."""
    if name.startswith("MinAtar/") and name.endswith("-v0"):
        return name[: -len("-v0")]
    return name


@dataclass(frozen=True)
class EnvSpec:
    """What the learner needs to know about an environment, without stepping it."""

    name: str
    obs_shape: tuple[int, ...]
    obs_dtype: str
    n_actions: int
    gamma: float
    learning_rate: float
    has_success: bool


class CliffWalk(gym.Env):
    """4×12 cliff walk (Sutton & Barto): +1 at the goal, −1 into the cliff (both end the episode).

    Observation: one-hot of the 48 cells (uint8). Actions: 0 up, 1 right, 2 down, 3 left.
    """

    ROWS, COLS = 4, 12
    START, GOAL = (3, 0), (3, 11)
    MAX_STEPS = 100
    _MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))

    def __init__(self):
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


class MiniGridPaperRewards(gym.Wrapper):
    """The paper's MiniGrid rewards and reduced action sets (spec §6).

    success: +MaxSteps/100; lava: −MaxSteps/100 (episode ends); otherwise −0.01 per step.
    minigrid itself rewards only success (> 0) and ends an episode only on success or lava.
    """

    def __init__(self, env: gym.Env, actions: tuple[int, ...]):
        super().__init__(env)
        self._actions = actions
        self.action_space = gym.spaces.Discrete(len(actions))
        self._scale = env.unwrapped.max_steps / 100.0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(self._actions[int(action)])
        success = bool(terminated and reward > 0)
        if terminated:
            reward = self._scale if success else -self._scale
        else:
            reward = -0.01
        if terminated or truncated:
            info = {**info, "success": success}
        return obs, reward, terminated, truncated, info


def _minatar_env(game: str) -> gym.Env:
    """MinAtar's own Gymnasium env, v0 flavour: the full 6-action set, sticky actions 0.1."""
    # minatar logs a warning at import when seaborn is missing; we never render.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        from minatar.gym import BaseEnv
    finally:
        root.setLevel(level)
    module = "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(game))
    return BaseEnv(game=module, use_minimal_action_set=False)


def _build(name: str) -> tuple[gym.Env, bool]:
    """The raw environment for a canonical name and whether it has a notion of success."""
    if name == "CliffWalk":
        return CliffWalk(), True
    if name.startswith("MinAtar/"):
        game = name.split("/", 1)[1]
        if game not in MINATAR_GAMES:
            raise UnknownEnvError(_unknown(name))
        return _minatar_env(game), False
    if name in MINIGRID_TASKS:
        import minigrid  # noqa: F401  (registers the MiniGrid ids)
        from minigrid.wrappers import FullyObsWrapper, ImgObsWrapper

        gid, actions = MINIGRID_TASKS[name]
        env = gym.make(gid, disable_env_checker=True)
        return MiniGridPaperRewards(ImgObsWrapper(FullyObsWrapper(env)), actions), True
    if name.startswith("MiniGrid-"):
        import minigrid  # noqa: F401
    if name not in gym.registry:
        raise UnknownEnvError(_unknown(name))
    env = gym.make(name)
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise UnknownEnvError(f"env {name!r} has action space {env.action_space}; only Discrete is supported")
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise UnknownEnvError(f"env {name!r} has observation space {env.observation_space}; only Box is supported")
    return env, False


def _unknown(name: str) -> str:
    return (f"unknown env {name!r}; known: {', '.join(known_names())}, "
            "or any registered Gymnasium id with discrete actions")


def make_env(name: str, seed: int | None = None) -> gym.Env:
    """A seeded environment by user-facing name; raises UnknownEnvError with the known names."""
    env, _ = _build(canonical_name(name))
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env


def env_spec(name: str) -> EnvSpec:
    name = canonical_name(name)
    env, has_success = _build(name)
    space = env.observation_space
    spec = EnvSpec(
        name=name,
        obs_shape=tuple(int(d) for d in space.shape),
        obs_dtype=np.dtype(space.dtype).name,
        n_actions=int(env.action_space.n),
        gamma=0.9 if name == "CliffWalk" else 0.99,
        learning_rate=_LEARNING_RATES.get(name, 3e-4),
        has_success=has_success,
    )
    env.close()
    return spec
