"""The methods. A method is a learning module (torch: its networks and loss, `contracts.Algorithm`), an
acting module (numpy: its arms, actions and evaluation, `contracts.Acting`) and one line in `METHODS`.
The smallest example is εz-greedy: `ez_greedy.py` (DQN's learning) and `ez_greedy_acting.py`.

This file imports no torch (the actors read it); `algorithm(name)` imports a learning module when the
learner asks for it.
"""

from __future__ import annotations

from importlib import import_module

from learner.algorithms.beta_dqn_acting import BetaDQN
from learner.algorithms.bootstrapped_dqn_acting import HeadPerEpisode
from learner.algorithms.contracts import Acting, Algorithm
from learner.algorithms.dqn_acting import EpsilonGreedy
from learner.algorithms.ez_greedy_acting import EzGreedy
from learner.algorithms.lesson_acting import Lesson

# name: (learning module in this package, acting class)
METHODS: dict[str, tuple[str, type]] = {
    "beta_dqn": ("beta_dqn", BetaDQN),
    "dqn": ("dqn", EpsilonGreedy),
    "bootstrapped_dqn": ("bootstrapped_dqn", HeadPerEpisode),
    "ez_greedy": ("ez_greedy", EzGreedy),
    "rnd": ("rnd", EpsilonGreedy),  # RND acts as DQN does; its bonus is in its learning
    "lesson": ("lesson", Lesson),
}


def algorithm(name: str) -> Algorithm:
    """Method `name`'s learning module."""
    return import_module(f"{__name__}.{METHODS[name][0]}")


def acting(cfg) -> Acting:
    """The acting object of the method `cfg.algo`."""
    return METHODS[cfg.algo][1](cfg)
