"""The toy method's learning: DQN's, and the batch's largest phase as a metric (so the extra is seen to arrive)."""

from learner.methods.dqn.learning import acting_networks, networks, targets
from learner.methods.dqn.learning import loss as dqn_loss

__all__ = ["acting_networks", "loss", "networks", "targets"]


def loss(nets, frozen, batch, gamma, cfg):
    value, metrics = dqn_loss(nets, frozen, batch, gamma, cfg)
    return value, {**metrics, "toy_phase_max": batch["toy_phase"].max().float()}
