"""A run killed (SIGKILL) after its first checkpoint and resumed with --resume: it reaches the steps asked
for, its evaluations have no gap and no duplicate, the bandit's window is the saved one — for the memory
and the Redis replay."""

import csv
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from driver.cli import resume_config
from driver.config import resolve
from driver.run import Run

pytestmark = pytest.mark.integration

TOTAL, EVERY = 30_000, 2_000


def start_and_kill(out, replay):
    argv = [sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--runtime", "serial", "--actors", "2",
            "--envs-per-actor", "2", "--total-steps", str(TOTAL), "--eval-every", str(EVERY), "--eval-episodes", "3",
            "--checkpoint-every", "3000", "--learning-starts", "1000", "--wandb", "disabled", "--progress", "false",
            "--replay", replay,
            "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = torch.load(out / "checkpoint.pt", weights_only=True)
    assert saved["counters"]["env_steps"] < TOTAL  # killed mid-run
    return saved


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_resume_after_sigkill(tmp_path, redis_url, backend):
    out = tmp_path / "run"
    replay = redis_url if backend == "redis" else "memory"
    saved = start_and_kill(out, replay)
    cfg, ckpt = resume_config(["--resume", str(out), "--progress", "false"]
                              + (["--replay", redis_url] if backend == "redis" else []))
    cfg, spec = resolve(cfg)
    assert (cfg.total_steps, cfg.algo, cfg.run_id) == (TOTAL, "beta_dqn", saved["config"]["run_id"])
    run = Run(cfg, spec, ckpt)
    window = run.backend.get(run.backend.call(run.parts["arm_source"], "state_dict"))["window"]
    assert window == saved["arm_source"]["window"] and len(window) > 0
    summary = run.run()
    assert summary["env_steps"] == TOTAL and summary["updates"] == (TOTAL - cfg.learning_starts) // 4
    with open(out / "evals.csv") as f:
        steps = [int(row["env_steps"]) for row in csv.DictReader(f)]
    assert steps == list(range(EVERY, TOTAL + 1, EVERY))  # no gap, no duplicate
    if backend == "redis":  # every transition of both lives is in the replay, none twice
        assert summary["replay_inserted"] == TOTAL


def test_resume_refuses_a_changed_algorithm(tmp_path, redis_url):
    out = tmp_path / "run"
    start_and_kill(out, "memory")
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(out), "--algo", "dqn"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "--algo: 'dqn' differs from the run being resumed ('beta_dqn')" in proc.stderr


def test_a_lost_redis_local_replay_is_refused_and_no_server_outlives_its_run(tmp_path):
    out = tmp_path / "run"
    start_and_kill(out, "redis-local")  # not persisted
    # the run's server followed its process (SIGKILL) instead of staying behind
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", f"{out}/redis/shard0"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the killed run's redis-server is still running"
        time.sleep(0.1)
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "was not persisted (--replay-persist)" in proc.stderr

