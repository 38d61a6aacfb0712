"""The methods. A method is a learning module (torch: its networks and loss, `contracts.Algorithm`), an
acting module (numpy: its arms, actions and evaluation, `contracts.Acting`) and one line in `METHODS`.
The smallest example is εz-greedy: `ez_greedy.py` (DQN's learning) and `ez_greedy_acting.py`.

This file imports no torch (the actors read it); `algorithm(name)` imports a learning module when the
learner asks for it.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple

from learner.algorithms.beta_dqn_acting import BetaDQN
from learner.algorithms.bootstrapped_dqn_acting import HeadPerEpisode
from learner.algorithms.contracts import Acting, Algorithm
from learner.algorithms.dqn_acting import EpsilonGreedy
from learner.algorithms.ez_greedy_acting import EzGreedy
from learner.algorithms.lesson_acting import Lesson


class Method(NamedTuple):
    learning: str  # its learning module in this package
    acting: type  # its acting class
    label: str  # its name in tables and summaries


METHODS: dict[str, Method] = {  # --algo NAME
    "beta_dqn": Method("beta_dqn", BetaDQN, "β-DQN"),
    "dqn": Method("dqn", EpsilonGreedy, "DQN"),
    "bootstrapped_dqn": Method("bootstrapped_dqn", HeadPerEpisode, "Bootstrapped DQN"),
    "ez_greedy": Method("ez_greedy", EzGreedy, "εz-greedy"),
    "rnd": Method("rnd", EpsilonGreedy, "RND"),  # RND acts as DQN does; its bonus is in its learning
    "lesson": Method("lesson", Lesson, "LESSON"),
}


def algorithm(name: str) -> Algorithm:
    """Method `name`'s learning module."""
    return import_module(f"{__name__}.{METHODS[name].learning}")


def acting(cfg) -> Acting:
    """The acting object of the method `cfg.algo`."""
    return METHODS[cfg.algo].acting(cfg)
