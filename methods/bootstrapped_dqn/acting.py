"""Bootstrapped DQN's acting (Osband et al. 2016; spec §7): a head drawn uniformly per episode (every actor
draws its own, seeded), ε-greedy on that head's Q (DQN's schedule; greedy with `--boot-epsilon false`);
evaluated by the heads' majority vote."""

from __future__ import annotations

import numpy as np

from meta_controller.bandit import ArmSource, UniformArm
from methods.contracts import Episode
from methods.dqn.acting import EpsilonGreedy
from methods.exploration import argmax_random_tie, epsilon_greedy


def majority_vote(q_heads: np.ndarray, rng: np.random.Generator) -> int:
    """Bootstrapped DQN's evaluation: each head (rows of `q_heads`, (K, A)) votes for its greedy action;
    the most voted action wins (ties broken at random, among the heads' ties too)."""
    votes = np.bincount([argmax_random_tie(q, rng) for q in q_heads], minlength=q_heads.shape[1])
    return argmax_random_tie(votes, rng)


class HeadPerEpisode(EpsilonGreedy):
    logs_arms = True  # the share of episodes per head

    def arm_source(self, seed) -> tuple[type[ArmSource], tuple]:
        return UniformArm, (self.cfg.boot_heads, seed)

    def heads(self, arms: list[int | None]) -> list[int] | None:
        return [arm or 0 for arm in arms]

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        if self.cfg.boot_epsilon:
            return epsilon_greedy(values["q"], self.epsilon(step), rng)
        return argmax_random_tie(values["q"], rng)

    def evaluate(self, policy: str, values: dict[str, np.ndarray], rng: np.random.Generator) -> int:
        return majority_vote(values["q"], rng)
