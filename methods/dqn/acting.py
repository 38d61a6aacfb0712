"""DQN's acting (spec §4, §7): ε-greedy on Q with ε decayed linearly over `eps_decay_steps` env steps (20% of
the run unless set); one policy for every episode; evaluated greedily. RND acts the same way (its bonus is in
the learning)."""

from __future__ import annotations

import numpy as np

from methods.contracts import BaseActing, Episode
from methods.exploration import epsilon_greedy, scheduled_epsilon


class EpsilonGreedy(BaseActing):
    def epsilon(self, step: int) -> float:
        """ε at the run's env step `step`: DQN's linear schedule."""
        return scheduled_epsilon(self.cfg, step)

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        return epsilon_greedy(values["q"], self.epsilon(step), rng)
