"""RND (Burda et al. 2019; spec §7) on DQN: a bonus for observations the predictor has not learned yet.

A fixed random target network f and a trained predictor f̂ (the same architecture, 128 outputs) see the
next observation normalised by running mean/std and clipped to [−5, 5]. The intrinsic reward is the
prediction error e = ‖f̂(x) − f(x)‖² / 128 divided by the running std of those errors (spec §7), or with
`--rnd-bonus centred` (e − running mean) / running std, as LESSON's code has it: the spec's bonus is always
positive, so an episode that goes on is paid for each step; the centred one averages zero only while the errors
keep their level (falling errors leave it below zero: results/rnd-bonus-check). The TD target of Q uses
r + scale · bonus (scale 10). The predictor is trained on the same minibatch. The running statistics
are updated from each minibatch, by the learner, and saved with the learner's state.
"""

from __future__ import annotations

import torch

from learner.methods.dqn.learning import acting_networks, q_loss, targets
from learner.methods.networks import RunningMeanStd, network_for

__all__ = ["acting_networks", "fixed", "intrinsic_reward", "loss", "networks", "targets"]

FEATURES = 128
OBS_CLIP = 5.0


def networks(spec, cfg) -> dict:
    return {"q": network_for(spec, spec.n_actions),
            "rnd_predictor": network_for(spec, FEATURES, scaled=False)}


def fixed(spec, cfg) -> dict:
    return {"rnd_target": network_for(spec, FEATURES, scaled=False).requires_grad_(False),
            "obs_norm": RunningMeanStd(tuple(spec.obs_shape)), "bonus_norm": RunningMeanStd(())}


def intrinsic_reward(predictor, frozen, next_obs: torch.Tensor, centred: bool = False
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """(bonus per sample, no gradient; the predictor's loss). Updates both running statistics first; `centred`:
    the error less its running mean, over its running std."""
    obs_norm, bonus_norm = frozen["obs_norm"], frozen["bonus_norm"]
    obs_norm.update(next_obs)
    x = ((next_obs.double() - obs_norm.mean) / obs_norm.std()).clamp(-OBS_CLIP, OBS_CLIP).float()
    with torch.no_grad():
        target = frozen["rnd_target"](x)
    error = (predictor(x) - target).square().mean(1)
    bonus_norm.update(error.detach())
    e = error.detach()  # float32, with the statistics' float64 scalars: the arithmetic in float32
    bonus = ((e - bonus_norm.mean if centred else e) / bonus_norm.std()).float()
    return bonus, error.mean()


def loss(nets, frozen, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    bonus, loss_rnd = intrinsic_reward(nets["rnd_predictor"], frozen, batch["next_obs"],
                                       cfg.flags.rnd_bonus == "centred")
    loss_q, q_sa = q_loss(nets["q"], frozen["q"], batch, batch["reward"] + cfg.flags.rnd_scale * bonus, gamma, cfg.loss)
    return loss_q + loss_rnd, {"loss_q": loss_q.detach(), "q_mean": q_sa.detach().mean(),
                               "loss_rnd": loss_rnd.detach(), "intrinsic_mean": bonus.mean()}
