"""DQN's acting (spec §4, §7): ε-greedy on Q with ε decayed linearly over `eps_decay_steps` env steps (20% of
the run unless set); one policy for every episode; evaluated greedily. RND acts the same way (its bonus is in
the learning)."""

from __future__ import annotations

import numpy as np

from learner.methods.contracts import BaseActing, Episode
from learner.methods.exploration import epsilon_greedy


class EpsilonGreedy(BaseActing):
    """ε-greedy on Q by the run's ε schedule (`cfg.epsilon`: its method's registry line says `epsilon`)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        if cfg.epsilon is None:
            raise ValueError(f"method {cfg.algo!r} acts ε-greedy, but its line in methods.METHODS does not say "
                             "epsilon=True: it was given no ε schedule")

    def epsilon(self, step: int) -> float:
        """ε at the run's env step `step`: DQN's linear schedule."""
        return self.cfg.epsilon.at(step)

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        return epsilon_greedy(values["q"], self.epsilon(step), rng)
