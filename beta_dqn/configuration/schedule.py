"""A run's schedule in env steps: the ε decay it acts by (`epsilon_decay_steps`, `epsilon_plan`, and in words
`epsilon_schedule`), and what of its warm-up, ε decay and evaluation period does not fit inside --total-steps
(`fit_warning`, `no_update_error`)."""

from __future__ import annotations

from beta_dqn.configuration.errors import ConfigError
from beta_dqn.configuration.fields import EPSILON_ALGOS, reads
from learner.methods.exploration import linear_epsilon


def epsilon_decay_steps(cfg) -> int:
    """The env steps over which the run's ε decays (spec §4): --eps-decay-steps where given, else
    --eps-decay-fraction of --total-steps (at least 1)."""
    if cfg.eps_decay_steps is not None:
        return cfg.eps_decay_steps
    return max(1, round(cfg.eps_decay_fraction * cfg.total_steps))


def epsilon_plan(cfg) -> dict | None:
    """The ε schedule the run acts by ({"start", "end", "decay_steps", "decay_share"}: the share of the run's
    env steps), or None where its method acts on none (β-DQN without --beta-epsilon): a run's summary."""
    if not (cfg.algo in EPSILON_ALGOS and reads(cfg.algo, "eps_decay_steps", cfg)):
        return None
    steps = epsilon_decay_steps(cfg)
    return {"start": cfg.eps_start, "end": cfg.eps_end, "decay_steps": steps, "decay_share": steps / cfg.total_steps}


def epsilon_schedule(cfg) -> str | None:
    """`epsilon_plan` in words: "ε 1 → 0.01 over 100,000 env steps (20% of the run), then held"."""
    plan = epsilon_plan(cfg)
    if plan is None:
        return None
    return (f"ε {plan['start']:g} → {plan['end']:g} over {plan['decay_steps']:,} env steps "
            f"({100 * plan['decay_share']:.3g}% of the run), then held")


def fit_warning(cfg) -> str | None:
    """One line naming what of the run's schedule does not fit inside its --total-steps (the warm-up, the ε
    decay, the evaluation period), or None where all fit."""
    problems = []
    if cfg.learning_starts >= cfg.total_steps:
        problems.append(f"--learning-starts {cfg.learning_starts:,} is not below --total-steps {cfg.total_steps:,}: "
                        "the run acts at random throughout and makes no update")
    plan = epsilon_plan(cfg)
    if plan is not None and plan["decay_steps"] > cfg.total_steps:
        ends = linear_epsilon(cfg.total_steps, plan["start"], plan["end"], plan["decay_steps"])
        problems.append(f"ε decays over {plan['decay_steps']:,} env steps, longer than the run: it ends at "
                        f"ε = {ends:.3g}, not --eps-end {plan['end']:g}")
    if cfg.eval_every > cfg.total_steps:
        problems.append(f"--eval-every {cfg.eval_every:,} is longer than the run: it is evaluated once, at its end")
    window = cfg.value("bandit_window")
    if reads(cfg.algo, "bandit_window") and window > cfg.total_steps:  # an episode is a step at least
        problems.append(f"--bandit-window {window:,} episodes is more than the run can have (at most "
                        f"{cfg.total_steps:,}, one a step): the meta-controller's window never fills")
    if cfg.actors * cfg.chunk_steps > cfg.total_steps:
        problems.append(f"--actors {cfg.actors:,} × --chunk-steps {cfg.chunk_steps:,} is more env steps than "
                        f"--total-steps {cfg.total_steps:,}: some actors never collect a chunk")
    return "warning: " + "; ".join(problems) if problems else None


def no_update_error(cfg) -> ConfigError | None:
    """A run whose warm-up takes its whole budget makes no update: an error naming both, unless the user named
    --learning-starts (a run of random acting, on purpose); None where the run learns."""
    if cfg.learning_starts < cfg.total_steps:
        return None
    return ConfigError("learning_starts", f"{cfg.learning_starts:,} (the default for {cfg.env}) is not below "
                                          f"--total-steps {cfg.total_steps:,}: the run would act at random "
                                          "throughout and make no update; give a longer --total-steps or a shorter "
                                          "--learning-starts (naming --learning-starts runs it as asked)")
