"""DQN (spec §7): y = r + γ (1 − terminated) max_a′ Q_θ⁻(s′,a′)   [eq:bellman]; ε-greedy acting.

Every algorithm module offers the same contract to `learner.learner.Learner`:
`networks(spec, cfg)` the trained networks (one Adam each), `targets(cfg)` those with a target copy,
`acting(cfg)` those the actors need, optionally `fixed(spec, cfg)` modules that are state but not
trained by a gradient (RND's target network, running statistics), and
`loss(nets, frozen, batch, gamma, cfg) -> (loss, metrics)` where `frozen` holds the target copies
(under their network's name) and the fixed modules.
"""

from __future__ import annotations

import torch

from learner.algorithms.common import bootstrap, td_loss
from learner.networks import make_network


def networks(spec, cfg) -> dict:
    return {"q": make_network(spec.obs_shape, spec.n_actions)}


def targets(cfg) -> tuple[str, ...]:
    return ("q",)


def acting_networks(cfg) -> tuple[str, ...]:
    return ("q",)


def q_loss(q_net, target_net, batch: dict[str, torch.Tensor], reward: torch.Tensor, gamma: float,
           kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """TD loss of [eq:bellman] on Q(s,a), with `reward` (the extrinsic reward, or RND's sum); and Q(s,a)."""
    q_sa = q_net(batch["obs"]).gather(1, batch["action"][:, None]).squeeze(1)
    with torch.no_grad():
        y = bootstrap(reward, batch["terminated"], target_net(batch["next_obs"]).amax(1), gamma)
    return td_loss(q_sa, y, kind), q_sa


def loss(nets, frozen, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    loss_q, q_sa = q_loss(nets["q"], frozen["q"], batch, batch["reward"], gamma, cfg.loss)
    return loss_q, {"loss_q": loss_q.detach(), "q_mean": q_sa.detach().mean()}
