"""bench/arithmetic.py counts an update's FLOPs: on CliffWalk's MLP its count equals the products' sizes worked out
by hand; --baseline runs each side's code in its own processes and says a failing side in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from beta_dqn.configuration.flags import Config, resolve

ROOT = Path(__file__).resolve().parents[1]


def test_the_bench_counts_a_dqn_update_as_its_matrix_products(tmp_path):
    out = tmp_path / "a.json"
    proc = subprocess.run([sys.executable, "bench/arithmetic.py", "--env", "CliffWalk", "--algos", "dqn",
                           "--rounds", "1", "--updates", "2", "--envs-per-actor", "3", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="dqn", wandb="disabled"))
    n, d, h, a = cfg.batch_size, spec.obs_shape[0], 128, spec.n_actions
    forward = 2 * n * d * h + 2 * n * h * a  # fc1, out (one network, one batch)
    backward = 2 * h * n * a + 2 * n * a * h + 2 * d * n * h  # out's weight and input gradients, fc1's weight's
    (row,) = json.loads(out.read_text())["learner"]
    assert row["algo"] == "dqn" and row["flops_per_update"] == 2 * forward + backward  # online and target forwards
    assert row["matrix_ops"] == 7
    assert 0 < row["share_of_yardstick"] and 0 < row["ops_alone_ms"] and row["conv_gflops"] is None
    (actor,) = json.loads(out.read_text())["actor"]
    assert actor["envs"] == 3 and actor["flops_per_step"] == 2 * 3 * d * h + 2 * 3 * h * a
    assert "learner update on one thread" in proc.stdout


def test_baseline_runs_both_sides_and_a_bad_flag_is_one_line_before_any_run(tmp_path):
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "bench/arithmetic.py", "--baseline", str(ROOT), "--env", "CliffWalk",
                           "--algos", "dqn", "--repeats", "1", "--rounds", "1", "--updates", "1", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    (row,) = result["rows"]
    assert row["algo"] == "dqn" and len(row["this_runs_ms"]) == len(row["baseline_runs_ms"]) == 1
    assert result["command"].split().count("DIR") == 1 and str(ROOT) not in json.dumps(result["this"])
    bad = subprocess.run([sys.executable, "bench/arithmetic.py", "--baseline", str(ROOT), "--env", "Nope"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "unknown env 'Nope'" in bad.stderr
