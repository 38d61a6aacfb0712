"""LESSON (Kim et al. 2023; spec §7): exploration strategies as options, chosen by an option-value network.

Options (`learner.methods.lesson.options.lesson_act`): uniform random each step; repeat one random action; greedy on
an intrinsic Q; greedy on the task Q. The option network has one torso and two heads, as in the
authors' code: Q_Ω(s,·) and the termination logits of β_ω(s) (one output layer of 2·4 units here, the
MinAtar baseline network like every function of this project). Networks: task Q, intrinsic Q, option
network, RND predictor (+ RND's fixed target and statistics, `learner.methods.rnd.learning`); the three Q-like
networks have target copies. On one minibatch, with ω the option stored with each transition and
r_i the RND bonus of s′:

- task Q:       y = r + γ m max_a Q⁻(s′,a)                         (DQN, `dqn.q_loss`; m = 1 − terminated)
- intrinsic Q:  y = scale · r_i + γ m max_a Q_I⁻(s′,a)              (scale = `--rnd-scale`, the code's 10)
- option value: g = r + α r_i + γ m [(1 − β′) Q_Ω⁻(s′,ω) + β′ max_ω′ Q_Ω⁻(s′,ω′)],
                β′ = clip(β_ω(s′), 0.1, 0.9) from the online network, no gradient   (option-critic's U);
                loss ½ mean (Q_Ω(s,ω) − g)², the authors' code's, whatever `--loss` says (`option_value_loss`)
- termination:  L = mean[β_ω(s) (A + ξ) m], A = Q_Ω⁻(s,ω) − max_ω′ Q_Ω⁻(s,ω′) (no gradient), ξ = −mean A
- RND predictor: as `learner.methods.rnd.learning`.
"""

from __future__ import annotations

import torch

from learner.methods.dqn import learning as dqn
from learner.methods.lesson.options import LESSON_OPTIONS, TERMINATION_CLIP
from learner.methods.networks import network_for
from learner.methods.rnd import learning as rnd
from learner.methods.td import bootstrap

N_OPTIONS = len(LESSON_OPTIONS)
fixed = rnd.fixed


def networks(spec, cfg) -> dict:
    return {"q": network_for(spec, spec.n_actions),
            "q_int": network_for(spec, spec.n_actions),
            "option": network_for(spec, 2 * N_OPTIONS),
            "rnd_predictor": network_for(spec, rnd.FEATURES, scaled=False)}


def targets(cfg) -> tuple[str, ...]:
    return ("q", "q_int", "option")


def acting_networks(cfg) -> tuple[str, ...]:
    return ("q", "q_int", "option")


def split_option_output(out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The option network's output -> (Q_Ω(s,·), β_·(s) as probabilities)."""
    return out[:, :N_OPTIONS], torch.sigmoid(out[:, N_OPTIONS:])


def option_value_target(reward, terminated, option, beta_next, q_option_next_target, gamma: float):
    """g = r + γ m [(1 − β′) Q_Ω⁻(s′,ω) + β′ max_ω′ Q_Ω⁻(s′,ω′)], β′ = clip(β_ω(s′), 0.1, 0.9)."""
    b = beta_next.gather(1, option[:, None]).squeeze(1).clamp(*TERMINATION_CLIP)
    same = q_option_next_target.gather(1, option[:, None]).squeeze(1)
    u = (1.0 - b) * same + b * q_option_next_target.amax(1)
    return bootstrap(reward, terminated, u, gamma)


def option_value_loss(q_option_sa: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """½ mean (Q_Ω(s,ω) − g)²: the option-value loss of LESSON's code (spec §7: its losses), not `--loss`."""
    return 0.5 * (q_option_sa - g).pow(2).mean()


def termination_loss(beta_s, option, q_option_target_s, terminated) -> torch.Tensor:
    """mean[β_ω(s) (A + ξ) m] with A = Q_Ω⁻(s,ω) − max Q_Ω⁻(s,·), ξ = −mean A: an option that is worse than
    the batch's average advantage learns to end, a better one to continue."""
    with torch.no_grad():
        advantage = q_option_target_s.gather(1, option[:, None]).squeeze(1) - q_option_target_s.amax(1)
        centred = advantage - advantage.mean()
    b = beta_s.gather(1, option[:, None]).squeeze(1)
    return (b * centred * (1.0 - terminated.float())).mean()


def loss(nets, frozen, batch: dict[str, torch.Tensor], gamma: float, cfg) -> tuple[torch.Tensor, dict]:
    n, option = batch["obs"].shape[0], batch["option"]
    bonus, loss_rnd = rnd.intrinsic_reward(nets["rnd_predictor"], frozen, batch["next_obs"],
                                           cfg.others["rnd"].rnd_bonus == "centred")
    loss_q, q_sa = dqn.q_loss(nets["q"], frozen["q"], batch, batch["reward"], gamma, cfg.loss)
    scale = cfg.others["rnd"].rnd_scale  # RND's --rnd-scale
    loss_int, _ = dqn.q_loss(nets["q_int"], frozen["q_int"], batch, scale * bonus, gamma, cfg.loss)
    q_option, beta = split_option_output(nets["option"](batch["obs"]))  # with gradient: s only
    with torch.no_grad():
        beta_next = split_option_output(nets["option"](batch["next_obs"]))[1]
        target_out = frozen["option"](torch.cat([batch["obs"], batch["next_obs"]]))
        g = option_value_target(batch["reward"] + cfg.flags.lesson_alpha * bonus, batch["terminated"], option,
                                beta_next, target_out[n:, :N_OPTIONS], gamma)
    q_option_sa = q_option.gather(1, option[:, None]).squeeze(1)
    loss_option = option_value_loss(q_option_sa, g)
    loss_term = termination_loss(beta, option, target_out[:n, :N_OPTIONS], batch["terminated"])
    total = loss_q + loss_int + loss_option + loss_term + loss_rnd
    return total, {"loss_q": loss_q.detach(), "q_mean": q_sa.detach().mean(), "loss_q_int": loss_int.detach(),
                   "loss_option": loss_option.detach(), "loss_termination": loss_term.detach(),
                   "loss_rnd": loss_rnd.detach(), "intrinsic_mean": bonus.mean(),
                   "termination_mean": beta.detach().mean(),
                   # which exploration strategies collected the minibatch (warm-up steps count as "random")
                   **{f"option_share_{name}": (option == k).float().mean() for k, name in enumerate(LESSON_OPTIONS)}}
