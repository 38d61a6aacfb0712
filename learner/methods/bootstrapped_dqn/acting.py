"""Bootstrapped DQN's acting (Osband et al. 2016; spec §7): a head drawn uniformly per episode (every actor
draws its own, seeded), ε-greedy on that head's Q (DQN's schedule; greedy with `--boot-epsilon false`);
evaluated by the heads' majority vote."""

from __future__ import annotations

import numpy as np

from learner.methods.contracts import BaseActing, Episode
from learner.methods.exploration import argmax_random_tie, epsilon_greedy
from learner.methods.numpy_net import NumpyNet, acting_values
from meta_controller.bandit import ArmSource, UniformArm


def majority_vote(q_heads: np.ndarray, rng: np.random.Generator) -> int:
    """Bootstrapped DQN's evaluation: each head (rows of `q_heads`, (K, A)) votes for its greedy action;
    the most voted action wins (ties broken at random, among the heads' ties too)."""
    votes = np.bincount([argmax_random_tie(q, rng) for q in q_heads], minlength=q_heads.shape[1])
    return argmax_random_tie(votes, rng)


class HeadPerEpisode(BaseActing):
    logs_arms = True  # the share of episodes per head

    def arm_source(self, seed) -> tuple[type[ArmSource], tuple]:
        return UniformArm, (self.cfg.flags.boot_heads, seed)

    def outputs(self, nets: dict[str, NumpyNet], obs: np.ndarray,
                arms: list[int | None] | None = None) -> dict[str, np.ndarray]:
        """Every head's Q (N, K, A) in evaluation; acting, only each row's episode head's (N, A)."""
        return acting_values(nets, obs, None if arms is None else [arm or 0 for arm in arms])

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        if self.cfg.flags.boot_epsilon:  # (the run's ε schedule: `cfg.epsilon`, given with --boot-epsilon true)
            return epsilon_greedy(values["q"], self.cfg.epsilon.at(step), rng)
        return argmax_random_tie(values["q"], rng)

    def evaluate(self, policy: str, values: dict[str, np.ndarray], rng: np.random.Generator) -> int:
        return majority_vote(values["q"], rng)
