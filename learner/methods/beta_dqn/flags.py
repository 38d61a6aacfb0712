"""β-DQN's flags (spec §1–3)."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.beta_dqn.policies import POLICY_SETS
from learner.methods.flags import choice, flag, open_unit, positive

COUNT_MODES = ("augment", "simple", "off")
BANDIT_RETURNS = ("raw", "minmax")
ARM_EXCHANGES = ("auto", "episode", "chunk")


@dataclass(frozen=True)
class Flags:
    arm_exchange: str = flag("auto", "how actors reach the bandit: episode (one call per finished episode: it "
                                     "reports the episode and brings its env's next arm), chunk (one call per "
                                     "chunk: its finished episodes, and the arms of the actor's next episodes, "
                                     "chosen ahead), auto (episode on --runtime serial, chunk on Ray)",
                             after="chunk_steps")
    beta_thread: bool = flag(True, "β-DQN: update β on a second learner thread beside Q (same math, faster with 2+ "
                                   "cores)", role="run", after="learner_threads")
    beta_eps: float = flag(0.05, "ε of the in-sample mask β(a|s) > ε")
    policy_set: str = flag("13", "policy set: 13, 8, 23, cov, cor0, cor1")
    count_mode: str = flag("augment", f"episodic counts in π_cov: {', '.join(COUNT_MODES)} (augment: β̃ = (β + "
                                      "c)/(1 + Σc) in π_cov's tests, spec §2; simple: rare = β ≤ δ and not yet "
                                      "taken at this state in the episode; off: the learned β alone)")
    bandit_window: int = flag(1000, "meta-controller window L (episodes; the paper's 1000 for 5M-step runs, "
                                    "and it asks L < K, the episodes of the run)")
    bandit_returns: str = flag("raw", "how returns enter the meta-controller's μ: raw (as they came, as the "
                                      "published text reads) or minmax (normalised to [0, 1] by the window's "
                                      "min and max, as a commented-out note in the paper's source does)")
    beta_epsilon: bool = flag(False, "β-DQN: with probability ε (DQN's schedule: --eps-start, --eps-end, "
                                     "--eps-decay-steps or --eps-decay-fraction) take a uniform random action "
                                     "instead of the episode's policy's, on every arm; false (the paper's "
                                     "Algorithm 1): the policy set alone explores")
    two_q: bool = flag(False, "β-DQN ablation: learn a second Q with the unconstrained target for π_cor's "
                              "optimistic term")
    eval_basic: bool = flag(True, "β-DQN: at every evaluation also evaluate the basic policies argmin β and "
                                  "argmax Q")

    def check(self) -> None:
        choice(self, "arm_exchange", ARM_EXCHANGES)
        choice(self, "count_mode", COUNT_MODES)
        choice(self, "bandit_returns", BANDIT_RETURNS)
        choice(self, "policy_set", tuple(POLICY_SETS))
        positive(self, "bandit_window")
        open_unit(self, "beta_eps")
