"""εz-greedy's acting (Dabney et al. 2021; spec §7): with probability ε (DQN's schedule) a uniformly random
action, taken and then repeated for n ~ Zeta(μ) more steps; greedy otherwise. Per episode it keeps the held action."""

from __future__ import annotations

import numpy as np

from learner.methods.contracts import Episode
from learner.methods.dqn.acting import EpsilonGreedy
from learner.methods.exploration import argmax_random_tie


def zeta_duration(mu: float, rng: np.random.Generator) -> int:
    """n ~ Zeta(μ): P(n) = n^−μ / ζ(μ), n ≥ 1 (εz-greedy's heavy-tailed hold)."""
    return int(rng.zipf(mu))


def ez_greedy(q: np.ndarray, epsilon: float, mu: float, rng: np.random.Generator,
              hold: tuple[int, int]) -> tuple[int, tuple[int, int]]:
    """εz-greedy (Dabney et al. 2021, Algorithm 1): `hold` = (action, steps it is still repeated). With none
    held, with probability ε draw a uniform action and a duration n ~ Zeta(μ), take the action now and repeat it
    for the next n steps (n + 1 in all: spec §7, "start a random action and repeat it for n steps"); otherwise
    act greedily. Returns (action, the hold for the next step)."""
    action, left = hold
    if left > 0:
        return action, (action, left - 1)
    if rng.random() < epsilon:
        action = int(rng.integers(q.shape[0]))
        return action, (action, zeta_duration(mu, rng))
    return argmax_random_tie(q, rng), (0, 0)


class EzGreedy(EpsilonGreedy):
    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        action, ep.memory = ez_greedy(values["q"], self.epsilon(step), self.cfg.flags.ez_mu, rng, ep.memory or (0, 0))
        return action
