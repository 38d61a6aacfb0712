"""The toy method's acting: DQN's ε-greedy, and the parity of each step under the episode's arm as an extra."""

from methods.dqn.acting import EpsilonGreedy
from replay_service.schema import Field


class ParityActing(EpsilonGreedy):
    extras = (Field("parity", "int8", 0, 1),)

    def step_extras(self, ep) -> tuple[int]:
        return (ep.arm_steps % 2,)
