"""β-DQN's learning (spec §1): β by cross-entropy and Q by in-sample TD, on the same minibatch.

Acting (π_cov, π_cor, Q̂, the bandit) lives in `actors.policies` and `meta_controller.bandit`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from learner.algorithms.common import bootstrap, td_loss

NETWORKS = ("q", "beta")


def behaviour_loss(beta_logits: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """L_β = −mean log β(a|s)   [eq:behavior policy learning]."""
    return F.cross_entropy(beta_logits, action)


def in_sample_max(q_next: torch.Tensor, beta_next: torch.Tensor, eps: float) -> torch.Tensor:
    """max_{a′ : β(a′|s′) > ε} Q(s′,a′); when no action passes, the action with the largest β."""
    mask = beta_next > eps
    fallback = F.one_hot(beta_next.argmax(1), beta_next.shape[1]).bool()
    mask = torch.where(mask.any(1, keepdim=True), mask, fallback)
    return q_next.masked_fill(~mask, float("-inf")).amax(1)


def in_sample_target(reward, terminated, q_next_target, beta_next, gamma: float, eps: float):
    """y = r + γ (1 − terminated) max_{a′ : β(a′|s′) > ε} Q_θ⁻(s′,a′)   [eq:in distribution td learning]."""
    return bootstrap(reward, terminated, in_sample_max(q_next_target, beta_next, eps), gamma)


def loss(nets, target_q, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    obs, next_obs, action = batch["obs"], batch["next_obs"], batch["action"]
    n = obs.shape[0]
    # one β pass over [s; s′]: s gets the gradient of L_β, s′ only feeds the mask
    beta_logits = nets["beta"](torch.cat([obs, next_obs]))
    loss_beta = behaviour_loss(beta_logits[:n], action)
    q = nets["q"](obs)
    q_sa = q.gather(1, action[:, None]).squeeze(1)
    with torch.no_grad():
        beta_next = torch.softmax(beta_logits[n:].detach(), dim=1)
        y = in_sample_target(batch["reward"], batch["terminated"], target_q(next_obs), beta_next,
                             gamma, cfg.beta_eps)
    loss_q = td_loss(q_sa, y, cfg.loss)
    probs = torch.softmax(beta_logits[:n].detach(), dim=1)
    entropy = -(probs * torch.log(probs.clamp_min(1e-12))).sum(1).mean()
    metrics = {"loss_q": loss_q.detach(), "loss_beta": loss_beta.detach(), "q_mean": q_sa.detach().mean(),
               "beta_entropy": entropy}
    return loss_q + loss_beta, metrics
