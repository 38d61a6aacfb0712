"""What each part of a run reads of its configuration: the method (`method_settings`: `MethodSettings`) and
each process's small frozen settings object (`settings`: `ActorSettings`, `LearnerSettings`, ...)."""

from __future__ import annotations

import dataclasses

from configuration.checks import ALGOS
from configuration.fields import FIELDS, reads
from configuration.schedule import epsilon_decay_steps
from methods.contracts import MethodSettings

METHOD_CORE = ("algo", "loss")  # what every method reads of the core fields (besides the flags that name it)


def method_settings(cfg) -> MethodSettings:
    """What the run's method reads (`methods.contracts.MethodSettings`): `METHOD_CORE`, and the flags whose
    roles name the method (its own, and the ε schedule of the ε-greedy family, its decay in env steps)."""
    values = {name: getattr(cfg, name) for name, f in FIELDS.items() if name in METHOD_CORE
              or (f.metadata["algos"] != ALGOS and reads(cfg.algo, name))}
    if "eps_decay_steps" in values:
        values["eps_decay_steps"] = epsilon_decay_steps(cfg)
    return MethodSettings(**values)


def settings(cls, cfg):
    """The settings a process reads (`cls`, a dataclass: `actors.actor.ActorSettings`, ...), from the run's
    configuration; a field named `method` holds `method_settings(cfg)`."""
    return cls(**{f.name: method_settings(cfg) if f.name == "method" else getattr(cfg, f.name)
                  for f in dataclasses.fields(cls)})
