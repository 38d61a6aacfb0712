"""What a run tells W&B (issue 6): one W&B run per (env, algo, seed), grouped <env>/<algo>, tagged with the
grid, config columns env/algo/seed, and eval/train charts against env steps — checked on the arguments
and calls the run makes, and on a real offline run read back with wandb's own reader (no W&B server here)."""

import sys
import types

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.driver.run import train


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
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", seed=3, runtime="serial", actors=1,
                               envs_per_actor=2, total_steps=1500, learning_starts=500, eval_every=750,
                               eval_episodes=2, wandb="offline", wandb_entity="my-team", grid="g1",
                               progress=False, log_every=0.01,
                               variant="bandit-returns=raw,count-mode=off", bandit_returns="raw",
                               count_mode="off", out=str(tmp_path / "run")))
    train(cfg, spec)
    (run,) = runs
    # a grid's variant: its own group within its grid's, a tag per axis value
    assert run.init["group"] == "g1/CliffWalk/beta_dqn/bandit-returns=raw,count-mode=off"
    assert run.init["entity"] == "my-team"
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


def test_a_score_the_environment_does_not_have_is_not_logged(tmp_path, monkeypatch):
    """CartPole scores by return: its evaluations have no success rate (NaN in evals.csv), and W&B is sent none
    (a NaN chart would say the metric exists); nothing W&B is sent is NaN."""
    import math

    runs = []
    fake = types.SimpleNamespace(init=lambda **kw: runs.append(FakeRun(**kw)) or runs[-1],
                                 Settings=lambda **kw: kw)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    cfg, spec = resolve(Config.of(env="CartPole-v1", algo="dqn", runtime="serial", actors=1, envs_per_actor=1,
                                  total_steps=800, learning_starts=300, eval_every=400, eval_episodes=2,
                                  wandb="offline", progress=False, log_every=0.01, out=str(tmp_path / "run")))
    train(cfg, spec)
    (run,) = runs
    keys = set().union(*run.logged)
    assert "eval/return_mean" in keys and "eval/success_rate" not in keys
    assert "success_rate" in (tmp_path / "run" / "evals.csv").read_text().splitlines()[0]  # the file keeps its form
    assert not [k for row in run.logged for k, v in row.items() if isinstance(v, float) and math.isnan(v)]


def test_a_wandb_entity_is_a_name():
    import pytest

    from beta_dqn.configuration.flags import ConfigError

    with pytest.raises(ConfigError, match="--wandb-entity: 'my team/x': an entity's name is letters, digits"):
        Config.of(wandb_entity="my team/x")


def _wandb_cli() -> list[str]:
    from pathlib import Path

    beside = Path(sys.executable).with_name("wandb")  # the venv's own, whatever PATH says
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "wandb"]


def test_a_real_offline_run_reads_back_with_wandbs_own_reader(tmp_path):
    """No fake: a short run writes its offline .wandb log, and wandb's own reader (`wandb leet inspect`) finds
    the group, tags, config, and eval/* and train/* metrics against env steps in it."""
    import json
    import subprocess

    out = tmp_path / "CliffWalk_beta_dqn_s4"  # a run's W&B name is its directory's
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", seed=4, runtime="serial", actors=1,
                               envs_per_actor=2, total_steps=1500, learning_starts=500, eval_every=750,
                               eval_episodes=2, wandb="offline", progress=False, log_every=0.01, out=str(out)))
    train(cfg, spec)
    (run_dir,) = (out / "wandb").glob("offline-run-*")
    import os

    inspect = [*_wandb_cli(), "leet", "inspect"]
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_ERROR_REPORTING": "false"}  # nothing over the network
    summary = json.loads(subprocess.run([*inspect, "--summary", "--json", str(run_dir)], capture_output=True,
                                        text=True, timeout=120, check=True, env=env).stdout)
    assert summary["name"] == "CliffWalk_beta_dqn_s4" and summary["project"] == "beta-dqn"
    assert {"CliffWalk", "beta_dqn", "seed4"} <= set(summary["tags"])
    config = summary["config"]
    assert (config["env"], config["algo"], config["seed"], config["total_steps"]) == ("CliffWalk", "beta_dqn", 4, 1500)
    assert summary["summary"]["env_steps"] == 1500
    for key in ("eval/return_mean", "eval/success_rate", "train/env_steps_per_s", "train/arms_cov",
                "train/arm_proportions", "train/loss_q"):
        assert key in summary["summary"], key
    records = [json.loads(line) for line in subprocess.run([*inspect, "--json", str(run_dir)], capture_output=True,
                                                           text=True, timeout=120, check=True,
                                                           env=env).stdout.splitlines()]
    (run,) = [r["run"] for r in records if r.get("type") == "run"]
    assert run["run_group"] == "CliffWalk/beta_dqn" and run["display_name"] == "CliffWalk_beta_dqn_s4"
    history = [r["history"]["item"] for r in records if r.get("type") == "history"]
    assert [h["env_steps"] for h in history if "eval/return_mean" in h] == [750, 1500]  # each with its env steps
    assert all("env_steps" in h for h in history if any(k.startswith("train/") for k in h))
    charts = {r["metric"].get("glob_name"): r["metric"].get("step_metric")
              for r in records if r.get("type") == "metric"}
    assert charts["eval/*"] == charts["train/*"] == "env_steps"  # both charted against env steps
