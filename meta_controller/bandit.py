"""The meta-controller: a sliding-window bandit over the policy set   [eq:policy select] (spec §3).

Plain and seeded; `driver.runtime` hosts it as a Ray actor. The arm sources of the other
algorithms (`UniformArm`: Bootstrapped DQN's head; `FixedArm`: one policy for DQN, εz-greedy, RND, LESSON)
share the same `select()/report_and_select()` contract, so choosing a policy per episode is one mechanism
for every method.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class ArmSource(Protocol):
    """Where each episode's arm comes from: asked at an episode's start, told its return at its end. A
    central source (β-DQN's bandit) also answers `statistics()`: per arm N(π), μ(π), b(π)."""

    n_arms: int

    def select(self) -> int:
        """The arm of a new episode."""

    def report(self, arm: int, episode_return: float, bonus: float) -> None:
        """A finished episode: its arm, return and exploration bonus."""

    def report_and_select(self, arm: int, episode_return: float, bonus: float) -> int:
        """`report`, then `select` for the next episode (one round trip for a remote source)."""

    def proportions(self) -> np.ndarray:
        """Each arm's share of the episodes it counts."""

    def state_dict(self) -> dict:
        """Its state as plain data (checkpoints)."""

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()`'s data."""


class SlidingWindowBandit:
    """Window of the last L finished episodes (all actors together).

    In the window: N(π) plays, μ(π) the mean return — normalised to [0, 1] by the window's min and max
    (0.5 when they are equal; `returns="minmax"`, the spec's default) or as it came (`returns="raw"`, as the
    published text reads) — and b(π) the mean exploration bonus. `select` returns an arm with
    N(π) = 0 first — arms handed to episodes still running count as played, so concurrent actors
    spread over the unplayed arms — otherwise argmax μ + b with ties broken by the seeded rng.
    """

    RETURNS = ("minmax", "raw")

    def __init__(self, n_arms: int, window: int = 1000, seed: int = 0, returns: str = "minmax"):
        if n_arms < 1 or window < 1:
            raise ValueError(f"n_arms={n_arms} and window={window} must be >= 1")
        if returns not in self.RETURNS:
            raise ValueError(f"returns={returns!r} is not one of {self.RETURNS}")
        self.n_arms = n_arms
        self.normalise = returns == "minmax"
        self._new_window(window)
        self.pending = np.zeros(n_arms, dtype=np.int64)
        self.rng = np.random.default_rng(seed)

    def _new_window(self, size: int) -> None:
        # a ring of the last `size` episodes as arrays: statistics are a few vectorised passes, so
        # a select costs tens of microseconds at L = 1000 (it runs at every episode start)
        self.size = size
        self.arms = np.zeros(size, dtype=np.int64)
        self.returns = np.zeros(size)
        self.bonuses = np.zeros(size)
        self.filled = 0
        self.cursor = 0

    @property
    def window(self) -> list[tuple[int, float, float]]:
        """The window's episodes, oldest first, as (arm, return, bonus)."""
        order = np.arange(self.cursor - self.filled, self.cursor) % self.size
        return [(int(self.arms[i]), float(self.returns[i]), float(self.bonuses[i])) for i in order]

    def statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N(π), μ(π), b(π)) over the window; μ and b are 0 where N(π) = 0."""
        plays = np.zeros(self.n_arms)
        mu = np.zeros(self.n_arms)
        bonus = np.zeros(self.n_arms)
        if not self.filled:
            return plays, mu, bonus
        arms, returns, bonuses = self.arms[:self.filled], self.returns[:self.filled], self.bonuses[:self.filled]
        normed = returns
        if self.normalise:
            lo, hi = returns.min(), returns.max()
            normed = np.full_like(returns, 0.5) if hi == lo else (returns - lo) / (hi - lo)
        plays = np.bincount(arms, minlength=self.n_arms).astype(np.float64)
        played = plays > 0
        mu[played] = np.bincount(arms, weights=normed, minlength=self.n_arms)[played] / plays[played]
        bonus[played] = np.bincount(arms, weights=bonuses, minlength=self.n_arms)[played] / plays[played]
        return plays, mu, bonus

    def select(self) -> int:
        plays, mu, bonus = self.statistics()
        unplayed = np.flatnonzero(plays + self.pending == 0)
        if unplayed.size:
            arm = int(unplayed[0])
        elif not plays.any():
            # every arm is already handed out and none has finished: spread the load
            arm = int(np.argmin(self.pending))
        else:
            score = np.where(plays > 0, mu + bonus, -np.inf)
            best = np.flatnonzero(score == score.max())
            arm = int(best[0]) if best.size == 1 else int(self.rng.choice(best))
        self.pending[arm] += 1
        return arm

    def report(self, arm: int, episode_return: float, bonus: float) -> None:
        """A finished episode played with `arm`: return R and bonus B (fraction of exploratory steps)."""
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm {arm} outside [0, {self.n_arms})")
        if self.pending[arm] > 0:
            self.pending[arm] -= 1
        i = self.cursor
        self.arms[i], self.returns[i], self.bonuses[i] = int(arm), float(episode_return), float(bonus)
        self.cursor = (i + 1) % self.size
        self.filled = min(self.filled + 1, self.size)

    def report_and_select(self, arm: int, episode_return: float, bonus: float) -> int:
        """`report` a finished episode, then `select` the arm of the next one (one call per episode)."""
        self.report(arm, episode_return, bonus)
        return self.select()

    def proportions(self) -> np.ndarray:
        """Share of each arm among the window's episodes."""
        plays = self.statistics()[0]
        return plays / max(plays.sum(), 1.0)

    def state_dict(self) -> dict:
        return {"n_arms": self.n_arms, "window_size": self.size,
                "window": [list(e) for e in self.window], "pending": self.pending.tolist(),
                "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.n_arms = int(state["n_arms"])
        self._new_window(int(state["window_size"]))
        for arm, ret, bonus in state["window"]:
            self.arms[self.cursor], self.returns[self.cursor], self.bonuses[self.cursor] = arm, ret, bonus
            self.cursor = (self.cursor + 1) % self.size
            self.filled = min(self.filled + 1, self.size)
        self.pending = np.asarray(state["pending"], dtype=np.int64)
        self.rng.bit_generator.state = state["rng"]


class FixedArm:
    """One policy for every episode (DQN): arm 0, nothing learned; counts the episodes reported."""

    n_arms = 1

    def __init__(self):
        self.episodes = 0

    def select(self) -> int:
        return 0

    def report(self, arm: int, episode_return: float, bonus: float) -> None:
        self.episodes += 1

    def report_and_select(self, arm: int, episode_return: float, bonus: float) -> int:
        self.report(arm, episode_return, bonus)
        return 0

    def proportions(self) -> np.ndarray:
        return np.ones(1)

    def state_dict(self) -> dict:
        return {"episodes": self.episodes}

    def load_state_dict(self, state: dict) -> None:
        self.episodes = int(state["episodes"])


class UniformArm:
    """One of `n_arms` drawn uniformly per episode, from a seeded rng (Bootstrapped DQN's head per episode);
    counts the episodes each arm played."""

    def __init__(self, n_arms: int, seed=0):
        self.n_arms = n_arms
        self.rng = np.random.default_rng(seed)
        # a list, not an array: a copy that reaches an actor process through Ray's object store would
        # hold a read-only array
        self.plays = [0] * n_arms

    def select(self) -> int:
        return int(self.rng.integers(self.n_arms))

    def report(self, arm: int, episode_return: float, bonus: float) -> None:
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm {arm} outside [0, {self.n_arms})")
        self.plays[arm] += 1

    def report_and_select(self, arm: int, episode_return: float, bonus: float) -> int:
        self.report(arm, episode_return, bonus)
        return self.select()

    def proportions(self) -> np.ndarray:
        return np.asarray(self.plays) / max(sum(self.plays), 1)

    def state_dict(self) -> dict:
        return {"n_arms": self.n_arms, "plays": list(self.plays), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.n_arms = int(state["n_arms"])
        self.plays = [int(p) for p in state["plays"]]
        self.rng.bit_generator.state = state["rng"]
