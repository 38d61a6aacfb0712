"""β-DQN's learning (spec §1): β by cross-entropy and Q by in-sample TD, on the same minibatch.

Ablation "two Q" (`--two-q`): a second network `q_full` learned with DQN's unconstrained target
[eq:bellman] beside the in-sample Q; π_cor then takes its optimistic term from `q_full`.
Acting (the arm per episode, π_cov, π_cor, the bonus, pure exploitation) is `acting.py` beside it, over
the pure functions of `policies.py` and the bandit of `meta_controller.bandit`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from learner.methods.dqn import learning as dqn
from learner.methods.networks import network_for
from learner.methods.td import bootstrap, td_loss


def networks(spec, cfg) -> dict:
    nets = {"q": network_for(spec, spec.n_actions), "beta": network_for(spec, spec.n_actions)}
    if cfg.flags.two_q:
        nets["q_full"] = network_for(spec, spec.n_actions)
    return nets


def targets(cfg) -> tuple[str, ...]:
    return ("q", "q_full") if cfg.flags.two_q else ("q",)


def acting_networks(cfg) -> tuple[str, ...]:
    return ("q", "beta", "q_full") if cfg.flags.two_q else ("q", "beta")


def behaviour_loss(beta_logits: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """L_β = −mean log β(a|s)   [eq:behavior policy learning]."""
    return F.cross_entropy(beta_logits, action)


def in_sample_mask(beta_next: torch.Tensor, eps: float) -> torch.Tensor:
    """{a′ : β(a′|s′) > ε}, row by row; when no action passes, the action with the largest β."""
    mask = beta_next > eps
    actions = torch.arange(beta_next.shape[1], device=beta_next.device)
    fallback = actions == beta_next.argmax(1, keepdim=True)
    return torch.where(mask.any(1, keepdim=True), mask, fallback)


def in_sample_max(q_next: torch.Tensor, beta_next: torch.Tensor, eps: float,
                  mask: torch.Tensor | None = None) -> torch.Tensor:
    """max_{a′ : β(a′|s′) > ε} Q(s′,a′) (`mask`: `in_sample_mask(beta_next, eps)`, when already made)."""
    mask = in_sample_mask(beta_next, eps) if mask is None else mask
    return q_next.masked_fill(~mask, float("-inf")).amax(1)


def in_sample_target(reward, terminated, q_next_target, beta_next, gamma: float, eps: float,
                     mask: torch.Tensor | None = None):
    """y = r + γ (1 − terminated) max_{a′ : β(a′|s′) > ε} Q_θ⁻(s′,a′)   [eq:in distribution td learning]."""
    return bootstrap(reward, terminated, in_sample_max(q_next_target, beta_next, eps, mask), gamma)


def mask_drops_argmax(q_next: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The share of next states whose argmax_a′ Q(s′,a′) the in-sample mask leaves out: how often the target
    differs from DQN's max (a diagnostic; ties count as kept only where the first maximal action is)."""
    return (~mask.gather(1, q_next.argmax(1, keepdim=True))).float().mean()


def behaviour_part(beta_net, obs, next_obs, action) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """L_β on s, and β(·|s′) (no gradient) for the target's mask, from one β pass over [s; s′]."""
    n = obs.shape[0]
    beta_logits = beta_net(torch.cat([obs, next_obs]))
    loss_beta = behaviour_loss(beta_logits[:n], action)
    with torch.no_grad():
        beta_next = torch.softmax(beta_logits[n:], dim=1)
        probs = torch.softmax(beta_logits[:n], dim=1)
        entropy = -(probs * torch.log(probs.clamp_min(1e-12))).sum(1).mean()
    return loss_beta, beta_next, {"loss_beta": loss_beta.detach(), "beta_entropy": entropy}


def value_forward(nets, frozen, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Q_θ(s,a) (with gradient) and Q_θ⁻(s′,·) (without): everything of the TD loss that needs no β."""
    q_sa = nets["q"](batch["obs"]).gather(1, batch["action"][:, None]).squeeze(1)
    with torch.no_grad():
        q_next_target = frozen["q"](batch["next_obs"])
    return q_sa, q_next_target


def value_loss(q_sa, q_next_target, beta_next, batch: dict[str, torch.Tensor], gamma: float, cfg,
               nets=None, frozen=None):
    """The in-sample TD loss on Q, given β(·|s′); with two Q, plus `q_full`'s DQN loss."""
    mask = in_sample_mask(beta_next, cfg.flags.beta_eps)
    y = in_sample_target(batch["reward"], batch["terminated"], q_next_target, beta_next, gamma, cfg.flags.beta_eps,
                         mask)
    loss_q = td_loss(q_sa, y, cfg.loss)
    metrics = {"loss_q": loss_q.detach(), "q_mean": q_sa.detach().mean(),
               "mask_drops_argmax": mask_drops_argmax(q_next_target, mask)}
    if cfg.flags.two_q:
        loss_full, q_full_sa = dqn.q_loss(nets["q_full"], frozen["q_full"], batch, batch["reward"], gamma, cfg.loss)
        metrics.update(loss_q_full=loss_full.detach(), q_full_mean=q_full_sa.detach().mean())
        loss_q = loss_q + loss_full
    return loss_q, metrics


def loss(nets, frozen, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    """L_Q + L_β on one minibatch. `learner.Learner` may run the two parts on two threads instead
    (the same computation: they share no parameters, and Q's target only reads β(·|s′))."""
    loss_beta, beta_next, metrics = behaviour_part(nets["beta"], batch["obs"], batch["next_obs"], batch["action"])
    q_sa, q_next_target = value_forward(nets, frozen, batch)
    loss_q, q_metrics = value_loss(q_sa, q_next_target, beta_next, batch, gamma, cfg, nets, frozen)
    return loss_q + loss_beta, {**q_metrics, **metrics}
