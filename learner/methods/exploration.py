"""Action selection every ε-greedy method shares (numpy only: actors import no torch). Every function takes
Q(s,·) as a 1-D array and a seeded `np.random.Generator`; ties in any argmax are broken uniformly at random
with that rng."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def argmax_random_tie(values: np.ndarray, rng: np.random.Generator) -> int:
    best = np.flatnonzero(values == values.max())
    return int(best[0]) if best.size == 1 else int(rng.choice(best))


def epsilon_greedy(q: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    if rng.random() < epsilon:
        return int(rng.integers(q.shape[0]))
    return argmax_random_tie(q, rng)


def linear_epsilon(step: int, start: float, end: float, decay_steps: int) -> float:
    """ε decayed linearly from `start` to `end` over `decay_steps` env steps, then held."""
    frac = min(max(step, 0) / decay_steps, 1.0)
    return start + frac * (end - start)


@dataclass(frozen=True)
class EpsilonSchedule:
    """DQN's ε-greedy schedule (spec §4), the block a method composes when it acts on one: ε from `start` to
    `end` over `decay_steps` env steps (`beta_dqn.configuration.settings.method_settings` gives them: --eps-start,
    --eps-end, and the decay in env steps, 20% of the run unless set), then held."""

    start: float
    end: float
    decay_steps: int

    def at(self, step: int) -> float:
        """ε at the run's env step `step`."""
        return linear_epsilon(step, self.start, self.end, self.decay_steps)
