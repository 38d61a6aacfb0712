"""A method is one folder and a registry line: a method defined in the test tree (`tests/toy_method`, never
shipped) with a flag and a per-step extra of its own runs end to end on both runtimes and both replay backends,
its flag on the command line and its extra travelling through the actor's chunk, the replay and the learner's
batch, without a line of the project knowing it."""

import json
import os
import subprocess
import sys

import pytest

from tests.test_imports import ROOT, code_words, modules

SHORT = ["--env", "CliffWalk", "--algo", "toy", "--actors", "2", "--total-steps", "2000",
         "--learning-starts", "500", "--eval-every", "1000", "--eval-episodes", "2", "--progress", "false",
         "--wandb", "disabled"]


# (Ray's workers inherit the variables: they register the method and import it from the checkout)
TOY = {"BETA_DQN_METHODS": "tests.toy_method", "PYTHONPATH": str(ROOT)}


def run(args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "learner.main", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("runtime,replay", [("serial", "memory"), ("serial", "redis-local"),
                                            *(pytest.param("ray", replay, marks=pytest.mark.integration)
                                              for replay in ("memory", "redis-local"))])
def test_a_method_of_the_test_tree_runs_end_to_end_with_its_own_extra(tmp_path, runtime, replay):
    out = tmp_path / "run"
    done = run([*SHORT, "--toy-period", "3", "--runtime", runtime, "--replay", replay, "--out", str(out)],
               env=TOY)
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads((out / "config.json").read_text())
    assert config["algo"] == "toy" and config["toy_period"] == 3
    phases = [row["toy_phase_max"] for row in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
              if "toy_phase_max" in row]
    # the learner's batches hold the actors' phases, drawn from the replay: 0 to 2 under --toy-period 3 (a metric
    # line averages its interval's batches; the first batches may hold only the warm-up's steps, all 0)
    assert phases and max(phases) > 1.0 and all(p <= 2.0 for p in phases), phases


def test_its_flag_is_checked_by_its_own_rule():
    done = run([*SHORT, "--toy-period", "1", "--runtime", "serial"], env=TOY)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["python -m learner.main: error: --toy-period: must be in [2, 100], "
                                                "got 1"]


def test_without_its_registration_the_method_is_unknown_and_nothing_of_the_project_names_it(tmp_path):
    done = run([*SHORT, "--runtime", "serial", "--out", str(tmp_path / "run")])
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("python -m learner.main: error: --algo: ")
    named = [path for path in modules().values() if any("toy" in w.lower() for w in code_words(path))]
    assert named == []


def test_a_module_that_cannot_be_registered_is_one_line():
    done = run(["--help"], env={"BETA_DQN_METHODS": "tests.no_such_module"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: BETA_DQN_METHODS: cannot register the methods of 'tests.no_such_module': No module named "
        "'tests.no_such_module'"]
