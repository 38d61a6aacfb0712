"""What each part of a run reads of its configuration: the method (`method_settings`: `MethodSettings`) and
each process's small frozen settings object (`settings`: `ActorSettings`, `LearnerSettings`, ...)."""

from __future__ import annotations

import dataclasses

from beta_dqn.configuration.fields import reads
from beta_dqn.configuration.schedule import epsilon_plan
from learner.methods.contracts import MethodSettings
from learner.methods.exploration import EpsilonSchedule


def method_settings(cfg) -> MethodSettings:
    """What the run's method reads (`learner.methods.contracts.MethodSettings`): --algo, --loss, its own flags (typed:
    its
    `Flags`), the ε schedule where it acts on one (in env steps), and the flags of other methods that name it."""
    plan = epsilon_plan(cfg)
    others = {name: flags for name, flags in cfg.methods.items() if name != cfg.algo
              and any(reads(cfg.algo, f.name) for f in dataclasses.fields(flags))}
    return MethodSettings(algo=cfg.algo, loss=cfg.loss,
                          flags=cfg.methods.get(cfg.algo),
                          epsilon=None if plan is None else EpsilonSchedule(plan["start"], plan["end"],
                                                                            plan["decay_steps"]),
                          others=others)


def settings(cls, cfg):
    """The settings a process reads (`cls`, a dataclass: `actors.actor.ActorSettings`, ...), from the run's
    configuration; a field named `method` holds `method_settings(cfg)`."""
    return cls(**{f.name: method_settings(cfg) if f.name == "method" else cfg.value(f.name)
                  for f in dataclasses.fields(cls)})
