"""The meta-controller: a sliding-window bandit over the policy set   [eq:policy select] (spec §3).

Plain and seeded; `beta_dqn.driver.runtime` hosts it as a Ray actor. The arm sources of the other
algorithms (`UniformArm`: Bootstrapped DQN's head; `FixedArm`: one policy for DQN, εz-greedy, RND, LESSON)
share the same contract, so choosing a policy per episode is one mechanism for every method. Actors use one
call of it, `exchange(reports, n)`: finished episodes in, arms for the next `n` episodes out (one episode
and one arm per call with `--arm-exchange episode`; an actor's chunk of them with `chunk`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Protocol

import numpy as np


class ArmSource(Protocol):
    """Where each episode's arm comes from: arms handed out in `exchange`s (before or as episodes begin), told
    each episode's return at its end. A central source (β-DQN's bandit, `CentralArmSource`) also answers
    `statistics()` (per arm N(π), μ(π), b(π)) and `summary()` (those and the arms' lag, for the logs)."""

    n_arms: int

    def select(self) -> int:
        """The arm of a new episode."""

    def report(self, arm: int, episode_return: float, bonus: float, stamp: int | None = None) -> None:
        """A finished episode: its arm, return and exploration bonus (and its arm's stamp, when known)."""

    def exchange(self, reports: list, n: int, returned: list | tuple = (), holder: tuple | None = None
                 ) -> tuple[list[int], int]:
        """Take back the arms `returned` unplayed, `report` each finished episode `(arm, return, bonus,
        stamp)`, then `select` `n` arms: the arms and their stamp (the source's count of reports when it
        chose them, handed back with each report). `holder`: the asking actor (its id and process)."""

    def proportions(self) -> np.ndarray:
        """Each arm's share of the episodes it counts."""

    def state_dict(self) -> dict:
        """Its state as plain data (checkpoints)."""

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict()`'s data."""


class CentralArmSource(ArmSource, Protocol):
    """A central source (β-DQN's bandit, `Acting.central`): one for the run, which the logs also read."""

    def statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per arm N(π), μ(π), b(π) over the window."""

    def summary(self) -> dict:
        """A central source's (β-DQN's bandit) state for the logs: per arm N, μ, b, and how late its arms were."""


class _Source:
    """`exchange` from a source's own `report` and `select`."""

    reported = 0  # reports received over the run, an arm's stamp (a source that measures no lag keeps 0)

    if TYPE_CHECKING:  # what a subclass provides (`ArmSource`'s)
        def select(self) -> int: ...

        def report(self, arm: int, episode_return: float, bonus: float, stamp: int | None = None) -> None: ...

    def exchange(self, reports: list, n: int, returned: list | tuple = (), holder: tuple | None = None
                 ) -> tuple[list[int], int]:
        self.take_back(returned)
        for arm, episode_return, bonus, stamp in reports:
            self.report(arm, episode_return, bonus, stamp)
        return self.select_many(n), self.reported

    def take_back(self, arms: list | tuple) -> None:
        """Arms handed out and not played (nothing to undo for a source that keeps no pending count)."""

    def select_many(self, n: int) -> list[int]:
        return [self.select() for _ in range(n)]


class SlidingWindowBandit(_Source):
    """Window of the last L finished episodes (all actors together).

    In the window: N(π) plays, μ(π) the mean return — as it came (`returns="raw"`, as the published text
    reads; the default) or normalised to [0, 1] by the window's min and
    max (0.5 when they are equal; `returns="minmax"`, the paper's commented-out note) — and b(π) the mean
    exploration bonus. `select` returns an arm with
    N(π) = 0 first — arms handed to episodes still running count as played, so concurrent actors
    spread over the unplayed arms — otherwise argmax μ + b with ties broken by the seeded rng.

    Each arm it hands out carries a stamp, its count of reports at that moment; a report that brings the
    stamp back adds to `lag()`: how many episodes (of any actor) the bandit heard of between choosing an arm
    and hearing of the episode that played it. One actor stepping one env (the paper's loop) has lag 0;
    concurrent episodes and arms chosen ahead (`--arm-exchange chunk`) make it larger.
    """

    RETURNS = ("raw", "minmax")

    def __init__(self, n_arms: int, window: int = 1000, seed: int = 0, returns: str = "raw"):
        if n_arms < 1 or window < 1:
            raise ValueError(f"n_arms={n_arms} and window={window} must be >= 1")
        if returns not in self.RETURNS:
            raise ValueError(f"returns={returns!r} is not one of {self.RETURNS}")
        self.n_arms = n_arms
        self.normalise = returns == "minmax"
        self._new_window(window)
        self.pending = np.zeros(n_arms, dtype=np.int64)
        self.holders: dict[int, tuple[str, Counter]] = {}  # actor id -> (process instance, arms it holds)
        self.retired: set[str] = set()  # instances of actor processes that were replaced
        self.rng = np.random.default_rng(seed)
        self.reported = 0
        self.lags = np.zeros(window, dtype=np.int64)  # the lags of the last `window` arms reported, a ring
        self.lags_filled = 0

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
        return self._pick(*self.statistics())

    def select_many(self, n: int) -> list[int]:
        """`n` arms, as `n` selects in a row (the window does not change between them: its statistics are
        computed once; each arm handed out counts as pending for the next)."""
        stats = self.statistics()
        return [self._pick(*stats) for _ in range(n)]

    def _pick(self, plays: np.ndarray, mu: np.ndarray, bonus: np.ndarray) -> int:
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

    def exchange(self, reports: list, n: int, returned: list | tuple = (), holder: tuple | None = None
                 ) -> tuple[list[int], int]:
        """`_Source.exchange`, counting the arms each actor holds (`holder`: its id and process instance):
        when an actor's process is replaced (Ray restarted it), the arms its old process held (running
        episodes, arms in hand) are no longer pending: they will never be reported."""
        held = None
        if holder is not None:
            actor, instance = holder
            known = self.holders.get(actor)
            if known is not None and known[0] != instance:
                if instance in self.retired:  # a call of a replaced process that arrives late: its arms were
                    return super().exchange(reports, 0, returned)  # released, and it takes no more
                self.retired.add(known[0])
                self.take_back(list(known[1].elements()))
                known = None
            if known is None:
                known = self.holders[actor] = (instance, Counter())
            held = known[1]
            held.subtract(returned)
            held.subtract(report[0] for report in reports)
        arms, stamp = super().exchange(reports, n, returned)
        if held is not None:
            held.update(arms)
            held += Counter()  # only the arms it holds (none below 0)
        return arms, stamp

    def take_back(self, arms: list | tuple) -> None:
        """Arms handed out that no episode played: no longer pending."""
        for arm in arms:
            if not 0 <= arm < self.n_arms:
                raise ValueError(f"arm {arm} outside [0, {self.n_arms})")
            if self.pending[arm] > 0:
                self.pending[arm] -= 1

    def report(self, arm: int, episode_return: float, bonus: float, stamp: int | None = None) -> None:
        """A finished episode played with `arm`: return R and bonus B (fraction of exploratory steps);
        `stamp`, when given, is the one its arm was handed out with."""
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm {arm} outside [0, {self.n_arms})")
        if self.pending[arm] > 0:
            self.pending[arm] -= 1
        i = self.cursor
        self.arms[i], self.returns[i], self.bonuses[i] = int(arm), float(episode_return), float(bonus)
        self.cursor = (i + 1) % self.size
        self.filled = min(self.filled + 1, self.size)
        if stamp is not None and 0 <= stamp <= self.reported:
            self.lags[self.lags_filled % self.lags.size] = self.reported - stamp
            self.lags_filled += 1
        self.reported += 1

    def lag(self) -> dict:
        """Median, 95th percentile and largest lag of the last `window` arms whose episodes came back (in
        episodes the bandit heard of between choosing the arm and hearing of its episode; empty before any)."""
        lags = self.lags[:min(self.lags_filled, self.lags.size)]
        if not lags.size:
            return {}
        return {"median": float(np.median(lags)), "p95": float(np.percentile(lags, 95)), "max": int(lags.max())}

    def summary(self) -> dict:
        """Per arm N(π), μ(π), b(π) over the window, and the arms' `lag()`: what the run logs (one call)."""
        plays, mu, bonus = self.statistics()
        return {"plays": [int(n) for n in plays], "mu": [round(float(m), 4) for m in mu],
                "bonus": [round(float(b), 4) for b in bonus], "lag": self.lag()}

    def proportions(self) -> np.ndarray:
        """Share of each arm among the window's episodes."""
        plays = self.statistics()[0]
        return plays / max(plays.sum(), 1.0)

    def state_dict(self) -> dict:
        return {"n_arms": self.n_arms, "window_size": self.size,
                "window": [list(e) for e in self.window], "pending": self.pending.tolist(),
                "rng": self.rng.bit_generator.state, "reported": self.reported}

    def load_state_dict(self, state: dict) -> None:
        self.n_arms = int(state["n_arms"])
        self._new_window(int(state["window_size"]))
        for arm, ret, bonus in state["window"]:
            self.arms[self.cursor], self.returns[self.cursor], self.bonuses[self.cursor] = arm, ret, bonus
            self.cursor = (self.cursor + 1) % self.size
            self.filled = min(self.filled + 1, self.size)
        self.pending = np.asarray(state["pending"], dtype=np.int64)
        self.holders, self.retired = {}, set()
        self.rng.bit_generator.state = state["rng"]
        # stamps count on from the checkpoint's (a checkpoint written before stamps: from the window's episodes)
        self.reported = int(state.get("reported", self.filled))


class FixedArm(_Source):
    """One policy for every episode (DQN): arm 0, nothing learned; counts the episodes reported."""

    n_arms = 1

    def __init__(self):
        self.episodes = 0

    def select(self) -> int:
        return 0

    def report(self, arm: int, episode_return: float, bonus: float, stamp: int | None = None) -> None:
        self.episodes += 1

    def proportions(self) -> np.ndarray:
        return np.ones(1)

    def state_dict(self) -> dict:
        return {"episodes": self.episodes}

    def load_state_dict(self, state: dict) -> None:
        self.episodes = int(state["episodes"])


class UniformArm(_Source):
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

    def report(self, arm: int, episode_return: float, bonus: float, stamp: int | None = None) -> None:
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm {arm} outside [0, {self.n_arms})")
        self.plays[arm] += 1

    def proportions(self) -> np.ndarray:
        return np.asarray(self.plays) / max(sum(self.plays), 1)

    def state_dict(self) -> dict:
        return {"n_arms": self.n_arms, "plays": list(self.plays), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.n_arms = int(state["n_arms"])
        self.plays = [int(p) for p in state["plays"]]
        self.rng.bit_generator.state = state["rng"]
