"""The methods, one folder each: `<method>/learning.py` (torch: its networks and loss, `contracts.Algorithm`),
`<method>/acting.py` (numpy: its arms, actions and evaluation, `contracts.Acting`), the policies that are its
own beside them, and one line in `METHODS`. Helpers shared by several methods: `exploration.py` (ε-greedy,
numpy) and `td.py` (the TD target and loss, torch). The smallest method is εz-greedy (`ez_greedy/`: DQN's
learning, its own acting).

This file imports no torch (the actors read it); `algorithm(name)` imports a learning module when the
learner asks for it.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple

from methods.beta_dqn.acting import BetaDQN
from methods.bootstrapped_dqn.acting import HeadPerEpisode
from methods.contracts import Acting, Algorithm
from methods.dqn.acting import EpsilonGreedy
from methods.ez_greedy.acting import EzGreedy
from methods.lesson.acting import Lesson
from replay_service.schema import Field


class Method(NamedTuple):
    learning: str  # the folder whose learning.py is its learning module
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
    return import_module(f"{__name__}.{METHODS[name].learning}.learning")


def extras(name: str) -> tuple[Field, ...]:
    """The per-step fields method `name` stores with each transition besides the core's (`replay_service.schema`)."""
    return METHODS[name].acting.extras


def acting(cfg) -> Acting:
    """The acting object of the method `cfg.algo`."""
    return METHODS[cfg.algo].acting(cfg)
