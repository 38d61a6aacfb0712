"""What a run tells W&B (issue 6): one W&B run per (env, algo, seed), grouped <env>/<algo>, tagged with the
grid, config columns env/algo/seed, and eval/train charts against env steps — checked on the arguments
and calls the run makes (no W&B server here)."""

import sys
import types

from driver.config import Config, resolve
from driver.run import train


class FakeRun:
    def __init__(self, **kwargs):
        self.init, self.logged, self.metrics, self.summary, self.id = kwargs, [], [], {}, "abc123"

    def define_metric(self, name, step_metric=None):
        self.metrics.append((name, step_metric))

    def log(self, row):
        self.logged.append(row)

    def finish(self, exit_code=0):
        self.exit_code = exit_code


def test_a_run_reports_to_wandb_grouped_tagged_and_charted(tmp_path, monkeypatch):
    runs = []
    fake = types.SimpleNamespace(init=lambda **kw: runs.append(FakeRun(**kw)) or runs[-1],
                                 Settings=lambda **kw: kw)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    cfg, spec = resolve(Config(env="CliffWalk", algo="beta_dqn", seed=3, runtime="serial", actors=1,
                               envs_per_actor=2, total_steps=1500, learning_starts=500, eval_every=750,
                               eval_episodes=2, wandb="offline", grid="g1", progress=False, log_every=0.01,
                               variant="bandit-returns=raw,count-mode=off", bandit_returns="raw",
                               count_mode="off", out=str(tmp_path / "run")))
    train(cfg, spec)
    (run,) = runs
    # a grid's variant: its own group, a tag per axis value
    assert run.init["group"] == "CliffWalk/beta_dqn/bandit-returns=raw,count-mode=off"
    assert run.init["mode"] == "offline"
    tags = {"CliffWalk", "beta_dqn", "seed3", "grid:g1", "bandit-returns=raw", "count-mode=off"}
    assert tags <= set(run.init["tags"])
    assert (run.init["config"]["env"], run.init["config"]["algo"], run.init["config"]["seed"]) == (
        "CliffWalk", "beta_dqn", 3)
    assert ("eval/*", "env_steps") in run.metrics and ("train/*", "env_steps") in run.metrics
    keys = set().union(*run.logged)
    for key in ("eval/return_mean", "eval/argmin_beta_return_mean", "train/env_steps_per_s",
                "train/arm_proportions", "train/arms_cov", "train/arm_mu", "train/arm_bonus", "train/loss_q"):
        assert key in keys, key
    assert run.summary["env_steps"] == 1500 and run.exit_code == 0
