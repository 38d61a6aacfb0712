"""εz-greedy (Dabney et al. 2021; spec §7): DQN's learning, with temporally-extended ε-greedy acting.

With probability ε (DQN's schedule) an actor starts a uniformly random action and repeats it for
n ~ Zeta(μ = 2) steps (`acting.py`); the networks and the loss are DQN's.
"""

from learner.methods.dqn.learning import acting_networks, loss, networks, targets

__all__ = ["acting_networks", "loss", "networks", "targets"]
