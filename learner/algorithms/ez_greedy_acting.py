"""εz-greedy's acting (Dabney et al. 2021; spec §7): with probability ε (DQN's schedule) a uniformly random
action repeated for n ~ Zeta(μ) steps; greedy otherwise. Per episode it keeps the held action."""

from __future__ import annotations

import numpy as np

from actors.policies import ez_greedy
from learner.algorithms.contracts import Episode
from learner.algorithms.dqn_acting import EpsilonGreedy


class EzGreedy(EpsilonGreedy):
    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        action, ep.memory = ez_greedy(values["q"], self.epsilon(step), self.cfg.ez_mu, rng, ep.memory or (0, 0))
        return action
