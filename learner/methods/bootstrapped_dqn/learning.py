"""Bootstrapped DQN (Osband et al. 2016; spec §7): K heads on the shared conv layer, each its own DQN.

Head k's target is y_k = r + γ (1 − terminated) max_a′ Q⁻_k(s′,a′) from its own target head. Mask
probability p = 1: every head trains on every sample; the heads' losses are summed and the shared
layer's gradient is scaled by 1/K (`learner.methods.networks.HeadsNet`). Acting
(`acting.py`): one head per training episode, drawn uniformly, ε-greedy on it;
evaluation: the heads' majority vote.
"""

from __future__ import annotations

import torch

from learner.methods.dqn.learning import acting_networks, targets
from learner.methods.networks import network_for
from learner.methods.td import bootstrap, td_loss

__all__ = ["acting_networks", "loss", "networks", "targets"]


def networks(spec, cfg) -> dict:
    return {"q": network_for(spec, spec.n_actions, heads=cfg.flags.boot_heads)}


def loss(nets, frozen, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    q = nets["q"](batch["obs"])  # (N, K, A)
    n, k, _ = q.shape
    q_sa = q.gather(2, batch["action"].view(n, 1, 1).expand(n, k, 1)).squeeze(2)  # (N, K)
    with torch.no_grad():
        next_max = frozen["q"](batch["next_obs"]).amax(2)  # (N, K): each head its own target
        y = bootstrap(batch["reward"][:, None], batch["terminated"][:, None], next_max, gamma)
    # td_loss averages over the N·K pairs: times K, the sum over heads of each head's mean loss
    loss_q = k * td_loss(q_sa, y, cfg.loss)
    return loss_q, {"loss_q": loss_q.detach() / k, "q_mean": q_sa.detach().mean()}
