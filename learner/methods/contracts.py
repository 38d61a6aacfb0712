"""What a method is, as two small contracts: how it learns (`Algorithm`, torch, in the learner) and how it
acts (`Acting`, numpy only, in the actors and the evaluator). A method is a folder with a module of each
(`<method>/learning.py`, `<method>/acting.py`) and one line in `methods.METHODS`. `BaseActing` holds the
defaults of a method that plays one policy in every episode and is evaluated greedily; εz-greedy
(`ez_greedy/`) is the smallest method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from learner.methods.exploration import EpsilonSchedule, argmax_random_tie
from learner.methods.numpy_net import NumpyNet, acting_values
from meta_controller.bandit import ArmSource, FixedArm
from replay_service.schema import Field

F = TypeVar("F")  # a method's `Flags` class (`<method>/flags.py`), or None for a method without flags


@dataclass(frozen=True)
class MethodSettings(Generic[F]):
    """What a method reads of a run's configuration; `beta_dqn.configuration.settings.method_settings` makes it. Its
    acting
    and its learning are given this as `cfg` (the learner passes on its `LearnerSettings.method`).

    - `algo`: the run's --algo; `loss`: its --loss, the TD loss (`learner.methods.td.td_loss`).
    - `flags`: the method's own flags, an instance of its `Flags` class (`<method>/flags.py`, named in its
      `methods.Method` line), or None where it has none: `cfg.flags.beta_eps`.
    - `epsilon`: DQN's ε schedule (`learner.methods.exploration.EpsilonSchedule`, `cfg.epsilon.at(step)`) where the
    method
      acts on one (its `Method.epsilon`: always, or while its own flag named there is on), else None.
    - `others`: the flags of other methods that it reads too (a flag whose `also` names it), by method name, each
      an instance of that method's `Flags`: LESSON reads `cfg.others["rnd"].rnd_scale`.
    """

    algo: str  # --algo
    loss: str  # --loss: the TD loss
    flags: F = None  # type: ignore[assignment]  # its own flags: an instance of its `Flags`, or None
    epsilon: EpsilonSchedule | None = None  # DQN's ε schedule where the method acts on one (`methods.Method.epsilon`)
    others: dict[str, Any] = field(default_factory=dict)  # other methods' flags that it reads too (their `also`
    #                                                       names it), by method: LESSON reads RND's --rnd-scale


class Algorithm(Protocol):
    """How a method learns (a module: `dqn`, `beta_dqn`, ...); `learner.learner.Learner` drives it.

    Optionally `fixed(spec, cfg)`: modules that are state but not trained by a gradient (RND's target
    network and running statistics); β-DQN also offers `behaviour_part`, `value_forward` and `value_loss`,
    which the learner runs on two threads."""

    def networks(self, spec, cfg) -> dict:
        """The trained networks by name (one Adam each)."""

    def targets(self, cfg) -> tuple[str, ...]:
        """The networks that have a target copy (copied every `target_update` env steps)."""

    def acting_networks(self, cfg) -> tuple[str, ...]:
        """The networks the actors and the evaluator need (the weights broadcast to them)."""

    def loss(self, nets, frozen, batch: dict, gamma: float, cfg) -> tuple[Any, dict]:
        """(loss, metrics) on one minibatch; `frozen` holds the target copies (under their network's name)
        and the fixed modules."""


class Episode(Protocol):
    """What an actor keeps of one running episode (`actors.actor.Episode`) that acting reads and writes."""

    arm: int | None  # the episode's arm (a policy of the set, a head, or 0)
    arm_steps: int  # steps acted under the arm so far, this one included
    memory: Any  # the method's own per-episode state (None at the episode's start)


class Acting(Protocol):
    """How a method acts: where an episode's arm comes from, the action at each step, what it keeps per
    episode, and how it is evaluated. Pure numpy (actors import no torch); randomness from the rng given."""

    central: bool  # arms come from one source for the run (β-DQN's bandit, with `statistics()` and `summary()`,
    #                reached per `--arm-exchange`); else every actor holds a copy
    logs_arms: bool  # the logs show each arm's share of the episodes (β-DQN's policies, Bootstrapped DQN's heads)
    arm_groups: tuple[str, ...] | None  # each arm's group (a key of `group_labels`), for the logs' shares
    group_labels: dict[str, str]  # groups of arms whose share of the episodes the logs give (`arms_<group>`), with
    #                               their labels in reports, in order (β-DQN: π_cov, π_cor(α>0), π_cor(0)); {}: none
    eval_policies: tuple[str, ...]  # the evaluation's policies: "main" (the method's score) first
    eval_labels: dict[str, str]  # what a report calls each evaluation policy where it draws more than "main"
    extras: tuple[Field, ...]  # per-step fields stored with each transition besides the core's (`step_extras`)

    def arm_source(self, seed) -> tuple[type[ArmSource], tuple]:
        """The arm source's class and its constructor's arguments (the runtime builds it where it runs)."""

    def outputs(self, nets: dict[str, NumpyNet], obs: np.ndarray,
                arms: list[int | None] | None = None) -> dict[str, np.ndarray]:
        """The acting networks' outputs for a batch of states, once per batch, as `act` and `evaluate` read them
        (`learner.methods.numpy_net.acting_values`; β-DQN: β as probabilities). `arms`: each row's episode arm when
        acting (Bootstrapped DQN computes only that head), None in evaluation."""

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        """The action of episode `ep` at `obs` under its arm, given `outputs` at `obs` and the run's env step
        `step` (ε schedules)."""

    def bonus(self, ep: Episode) -> float:
        """What the arm source hears with a finished episode's return (β-DQN's B(π))."""

    def step_extras(self, ep: Episode) -> tuple:
        """The values of the method's `extras` for the step episode `ep` just took (LESSON: its option)."""

    def evaluate(self, policy: str, values: dict[str, np.ndarray], rng: np.random.Generator) -> int:
        """The action of evaluation policy `policy` (one of `eval_policies`) from the networks' outputs."""

    @staticmethod
    def arms_of(config: dict) -> list[tuple[str, str]]:
        """Each arm's (label, group) for a run of this method, from its saved config (what a report reads)."""


class BaseActing:
    """The defaults: one policy for every episode (arm 0, nothing chosen centrally), no per-episode state,
    evaluated greedily on Q. A method overrides what differs."""

    central = False
    logs_arms = False
    arm_groups: tuple[str, ...] | None = None
    group_labels: dict[str, str] = {}
    eval_policies: tuple[str, ...] = ("main",)
    eval_labels: dict[str, str] = {"main": "greedy"}
    extras: tuple[Field, ...] = ()

    def __init__(self, cfg):
        self.cfg = cfg

    if TYPE_CHECKING:  # every method's own (`Acting.act`)
        def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
                rng: np.random.Generator) -> int: ...

    def arm_source(self, seed) -> tuple[type[ArmSource], tuple]:
        return FixedArm, ()

    def outputs(self, nets: dict[str, NumpyNet], obs: np.ndarray,
                arms: list[int | None] | None = None) -> dict[str, np.ndarray]:
        return acting_values(nets, obs)

    def bonus(self, ep: Episode) -> float:
        return 0.0

    def step_extras(self, ep: Episode) -> tuple:
        return ()

    def evaluate(self, policy: str, values: dict[str, np.ndarray], rng: np.random.Generator) -> int:
        return argmax_random_tie(values["q"], rng)

    @staticmethod
    def arms_of(config: dict) -> list[tuple[str, str]]:
        return []
