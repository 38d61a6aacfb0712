"""DQN (spec §7): y = r + γ (1 − terminated) max_a′ Q_θ⁻(s′,a′)   [eq:bellman]; ε-greedy acting."""

from __future__ import annotations

import torch

from learner.algorithms.common import bootstrap, td_loss

NETWORKS = ("q",)


def loss(nets, target_q, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    q = nets["q"](batch["obs"])
    q_sa = q.gather(1, batch["action"][:, None]).squeeze(1)
    with torch.no_grad():
        y = bootstrap(batch["reward"], batch["terminated"], target_q(batch["next_obs"]).amax(1), gamma)
    loss_q = td_loss(q_sa, y, cfg.loss)
    return loss_q, {"loss_q": loss_q.detach(), "q_mean": q_sa.detach().mean()}
