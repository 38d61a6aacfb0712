"""DQN's learning (spec §7): y = r + γ (1 − terminated) max_a′ Q_θ⁻(s′,a′)   [eq:bellman].

The smallest learning module: the contract `learner.learner.Learner` drives is `contracts.Algorithm`
(`networks`, `targets`, `acting_networks`, `loss`; optionally `fixed`). DQN's ε-greedy acting is
`acting.py` beside it.
"""

from __future__ import annotations

import torch

from learner.methods.networks import network_for
from learner.methods.td import bootstrap, td_loss


def networks(spec, cfg) -> dict:
    return {"q": network_for(spec, spec.n_actions)}


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
