"""β-DQN's acting (spec §2–3): the meta-controller picks a policy of the set Π for each episode
[eq:policy select]; the episode acts by π_cov(δ) [eq:policy cov] (with the episode's visit counts) or
π_cor(α) [eq:policy cor]; with `--beta-epsilon` a uniform random action (DQN's ε schedule) replaces the
policy's with probability ε; its bonus B(π) is the share of steps off pure exploitation, whichever chose the
action. Evaluated by pure exploitation [eq:q mask greedy]; with `--eval-basic` also by the two other basic
policies, argmin β and argmax Q (the optimistic Q under `--two-q`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from learner.methods.beta_dqn.policies import (
    GROUP_LABELS,
    act_beta_dqn,
    argmin_beta,
    is_exploitation,
    policy_set,
    pure_exploitation,
)
from learner.methods.contracts import BaseActing, Episode
from learner.methods.exploration import argmax_random_tie
from learner.methods.numpy_net import NumpyNet, acting_values
from meta_controller.bandit import ArmSource, SlidingWindowBandit

BASIC = ("argmin_beta", "argmax_q")  # the paper's basic policies besides pure exploitation (the main one)


@dataclass
class BetaEpisode:
    """What β-DQN keeps per episode."""

    counts: dict[bytes, np.ndarray] = field(default_factory=dict)  # c(s,·): the episode's actions per state
    explored: int = 0  # steps off pure exploitation (the bonus B = explored / steps under the arm)


class BetaDQN(BaseActing):
    central = True  # one meta-controller for the run: it sees every actor's episodes
    logs_arms = True
    group_labels = GROUP_LABELS
    eval_labels = {"main": "argmax_{a: β>ε} Q (pure exploitation)", "argmax_q": "argmax_a Q",
                   "argmin_beta": "argmin_a β"}

    def __init__(self, cfg):
        super().__init__(cfg)
        self.arms = policy_set(cfg.flags.policy_set)
        self.arm_groups = tuple(arm.group for arm in self.arms)
        self.eval_policies = ("main", *BASIC) if cfg.flags.eval_basic else ("main",)

    @staticmethod
    def arms_of(config: dict) -> list[tuple[str, str]]:
        return [(arm.label.replace("pi_", "π_"), arm.group) for arm in policy_set(config.get("policy_set", "13"))]

    def arm_source(self, seed) -> tuple[type[ArmSource], tuple]:
        flags = self.cfg.flags
        return SlidingWindowBandit, (len(self.arms), flags.bandit_window, seed, flags.bandit_returns)

    def outputs(self, nets: dict[str, NumpyNet], obs: np.ndarray,
                arms: list[int | None] | None = None) -> dict[str, np.ndarray]:
        """Q(s,·) and β's logits as probabilities β(·|s)."""
        raw = acting_values(nets, obs)
        logits = raw["beta"]
        z = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return {**raw, "beta": z / z.sum(axis=-1, keepdims=True)}

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        cfg, arm = self.cfg, self.arms[ep.arm]
        if ep.memory is None:
            ep.memory = BetaEpisode()
        q, beta, counts = values["q"], values["beta"], None
        if arm.kind == "cov" and cfg.flags.count_mode != "off":
            counts = ep.memory.counts.setdefault(obs.tobytes(), np.zeros(len(q)))
        if cfg.flags.beta_epsilon and rng.random() < cfg.epsilon.at(step):  # --beta-epsilon: ε on every arm
            action = int(rng.integers(len(q)))
        else:
            action = act_beta_dqn(arm, q, beta, cfg.flags.beta_eps, rng, counts, cfg.flags.count_mode,
                                  values.get("q_full"))
        if counts is not None:
            counts[action] += 1
        if not is_exploitation(action, q, beta, cfg.flags.beta_eps):
            ep.memory.explored += 1
        return action

    def bonus(self, ep: Episode) -> float:
        return (0 if ep.memory is None else ep.memory.explored) / max(ep.arm_steps, 1)

    def evaluate(self, policy: str, values: dict[str, np.ndarray], rng: np.random.Generator) -> int:
        if policy == "argmin_beta":
            return argmin_beta(values["beta"], rng)
        if policy == "argmax_q":
            return argmax_random_tie(values.get("q_full", values["q"]), rng)
        return pure_exploitation(values["q"], values["beta"], self.cfg.flags.beta_eps, rng)
