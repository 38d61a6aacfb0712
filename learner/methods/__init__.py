"""The methods, one folder each: `<method>/learning.py` (torch: its networks and loss, `contracts.Algorithm`),
`<method>/acting.py` (numpy: its arms, actions and evaluation, `contracts.Acting`), the policies that are its
own beside them, and one line in `METHODS`. Helpers shared by several methods: `exploration.py` (ε-greedy,
numpy) and `td.py` (the TD target and loss, torch). The smallest method is εz-greedy (`ez_greedy/`: DQN's
learning, its own acting).

A method may also live outside this package, in a folder of its own: a module that calls `register` and is
named in the environment variable `BETA_DQN_METHODS` (`tests/toy_method` is one, run end to end by
`tests/test_method_folder.py`).

This file imports no torch (the actors read it); `algorithm(name)` imports a learning module when the
learner asks for it.
"""

from __future__ import annotations

from dataclasses import fields
from importlib import import_module
from typing import NamedTuple

from learner.methods.beta_dqn import flags as beta_dqn_flags
from learner.methods.beta_dqn.acting import BetaDQN
from learner.methods.bootstrapped_dqn import flags as bootstrapped_dqn_flags
from learner.methods.bootstrapped_dqn.acting import HeadPerEpisode
from learner.methods.contracts import Acting, Algorithm, BaseActing
from learner.methods.dqn.acting import EpsilonGreedy
from learner.methods.ez_greedy import flags as ez_greedy_flags
from learner.methods.ez_greedy.acting import EzGreedy
from learner.methods.lesson import flags as lesson_flags
from learner.methods.lesson.acting import Lesson
from learner.methods.rnd import flags as rnd_flags
from replay_service.plugins import load_plugins
from replay_service.schema import Field, Schema


class Method(NamedTuple):
    package: str  # its folder, as a package: `<package>.learning` is its learning module
    acting: type[BaseActing]  # its acting class
    label: str  # its name in tables and summaries
    flags: type | None = None  # its own flags (`learner.methods.flags`), a frozen dataclass
    epsilon: bool | str = False  # it acts on DQN's ε schedule (spec §4, `exploration.EpsilonSchedule`): True, or
    #                              the name of its own boolean flag that turns it on


METHODS: dict[str, Method] = {  # --algo NAME
    "beta_dqn": Method("learner.methods.beta_dqn", BetaDQN, "β-DQN", beta_dqn_flags.Flags, epsilon="beta_epsilon"),
    "dqn": Method("learner.methods.dqn", EpsilonGreedy, "DQN", epsilon=True),
    "bootstrapped_dqn": Method("learner.methods.bootstrapped_dqn", HeadPerEpisode, "Bootstrapped DQN",
                               bootstrapped_dqn_flags.Flags, epsilon="boot_epsilon"),
    "ez_greedy": Method("learner.methods.ez_greedy", EzGreedy, "εz-greedy", ez_greedy_flags.Flags, epsilon=True),
    # RND acts as DQN does; its bonus is in its learning
    "rnd": Method("learner.methods.rnd", EpsilonGreedy, "RND", rnd_flags.Flags, epsilon=True),
    "lesson": Method("learner.methods.lesson", Lesson, "LESSON", lesson_flags.Flags),
}
PLUGINS = "BETA_DQN_METHODS"  # environment variable: modules (comma-separated) that `register` methods of their own


def check(name: str, method: Method) -> None:
    """A registry line that can run, else ValueError naming what is wrong: ε-greedy acting (`EpsilonGreedy`) needs
    the ε schedule (`epsilon`), and a flag named as `epsilon` is a boolean flag of the method's own."""
    if issubclass(method.acting, EpsilonGreedy) and not method.epsilon:
        raise ValueError(f"method {name!r}: its acting is ε-greedy (derives from EpsilonGreedy) but its Method does "
                         "not say epsilon=True, so it would be given no ε schedule")
    params = getattr(method.flags, "__dataclass_params__", None)
    if method.flags is not None and (params is None or not params.frozen):  # (a Config is frozen whole)
        raise ValueError(f"method {name!r}: its flags class {method.flags.__name__} is not a frozen dataclass; "
                         "declare it with @dataclass(frozen=True)")
    if method.flags is not None and not callable(getattr(method.flags, "check", None)):
        raise ValueError(f"method {name!r}: its flags class {method.flags.__name__} has no check() (a method that "
                         "raises learner.methods.flags.FlagError at a bad value)")
    if isinstance(method.epsilon, str):
        own = {f.name: f for f in fields(method.flags)} if method.flags is not None else {}
        if method.epsilon not in own or not isinstance(own[method.epsilon].default, bool):
            raise ValueError(f"method {name!r}: epsilon={method.epsilon!r} is not a boolean flag of its own "
                             f"(its flags: {', '.join(own) or 'none'}); give True, False or such a flag's name")


def register(name: str, method: Method) -> None:
    """Add a method whose folder lives outside this package (a module named in `PLUGINS` calls it when
    imported; Ray's workers inherit the variable, so they register it too)."""
    if name in METHODS:
        raise ValueError(f"a method named {name!r} is registered already")
    check(name, method)
    Schema(method.acting.extras)  # extras the replay can hold (else ValueError now, not mid-run)
    METHODS[name] = method


for _name, _method in METHODS.items():  # the built-in lines too
    check(_name, _method)


def algorithm(name: str) -> Algorithm:
    """Method `name`'s learning module."""
    return import_module(f"{METHODS[name].package}.learning")


def extras(name: str) -> tuple[Field, ...]:
    """The per-step fields method `name` stores with each transition besides the core's (`replay_service.schema`):
    its acting class's `extras`, the same for every run of the method."""
    return METHODS[name].acting.extras


def acting(cfg) -> Acting:
    """The acting object of the method `cfg.algo` (`cfg`: what the method reads, `contracts.MethodSettings`)."""
    return METHODS[cfg.algo].acting(cfg)


load_plugins(PLUGINS, "methods")  # (last: a plugin imports this package's names)
