"""A method is one folder and a registry line: a method defined in the test tree (`tests/toy_method`, never
shipped) with a per-step extra of its own runs end to end on both runtimes and both replay backends, its extra
travelling through the actor's chunk, the replay and the learner's batch, without a line of the project
knowing it."""

import json
import os
import subprocess
import sys

import pytest

from tests.test_imports import ROOT, code_words, modules

SHORT = ["--env", "CliffWalk", "--algo", "toy_parity", "--actors", "2", "--total-steps", "2000",
         "--learning-starts", "500", "--eval-every", "1000", "--eval-episodes", "2", "--progress", "false",
         "--wandb", "disabled"]


def run(args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "learner.main", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("runtime,replay", [("serial", "memory"), ("serial", "redis-local"), ("ray", "memory"),
                                            ("ray", "redis-local")])
def test_a_method_of_the_test_tree_runs_end_to_end_with_its_own_extra(tmp_path, runtime, replay):
    out = tmp_path / "run"
    # (Ray's workers inherit the variables: they register the method and import it from the checkout)
    done = run([*SHORT, "--runtime", runtime, "--replay", replay, "--out", str(out)],
               env={"BETA_DQN_METHODS": "tests.toy_method", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["algo"] == "toy_parity"
    parity = [row["parity_mean"] for row in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
              if "parity_mean" in row]
    # the learner's batches hold the actors' parities: both values, drawn from the replay
    assert parity and all(0.0 < p < 1.0 for p in parity), parity


def test_without_its_registration_the_method_is_unknown_and_nothing_of_the_project_names_it(tmp_path):
    done = run([*SHORT, "--runtime", "serial", "--out", str(tmp_path / "run")])
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("python -m learner.main: error: --algo: ")
    named = [path for path in modules().values() if any("parity" in w.lower() for w in code_words(path))]
    assert named == []
