"""The toy method's acting: DQN's ε-greedy, and each step's phase under the episode's arm as an extra."""

from learner.methods.dqn.acting import EpsilonGreedy
from replay_service.schema import Field


class PhaseActing(EpsilonGreedy):
    extras = (Field("toy_phase", "int8", 0, 99),)

    def step_extras(self, ep) -> tuple[int]:
        return (ep.arm_steps % self.cfg.flags.toy_period,)
