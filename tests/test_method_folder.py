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


@pytest.mark.parametrize("source, says", [
    ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ("def broken(:\n", "SyntaxError: "),
    ("import sys\nsys.exit(0)\n", "it called sys.exit(0) while being imported"),
    ("from learner.methods import register\nregister('bad', object())\n", "AttributeError: "),
    ("from learner.methods import Method, register\nregister('bad', Method('x', 'acting as text', 'X'))\n",
     "TypeError: "),
])
@pytest.mark.parametrize("variable", ["BETA_DQN_METHODS", "BETA_DQN_REPLAYS"])
def test_a_plugin_that_fails_anyhow_is_one_line_and_exit_2_in_every_command(tmp_path, source, says, variable):
    """A plugin that raises, has a syntax error, exits, or registers something that is not a method: every command
    says one line naming the variable and the module, and exits 2 (never 0, never a traceback); in Python, the
    import is an ImportError to catch, not a SystemExit."""
    (tmp_path / "plugin_mod.py").write_text(source)
    env = {**os.environ, variable: "plugin_mod", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    for command in ("learner.main", "learner.report", "learner.evaluate", "learner.search"):
        done = subprocess.run([sys.executable, "-m", command, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=300, env=env)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, (command, done.returncode, done.stderr[-1500:])
        assert lines[0].startswith(f"error: {variable}: cannot register the ") and "'plugin_mod'" in lines[0], lines
        assert says in lines[0], lines[0]
    code = "from beta_dqn import train\n"
    done = subprocess.run([sys.executable, "-c", f"try:\n    {code}except ImportError as e:\n    print('caught', e)\n"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and done.stdout.startswith("caught "), done.stderr[-1500:]


def test_a_relative_plugin_name_is_one_line():
    done = run(["--help"], env={"BETA_DQN_METHODS": ".toy_method"})
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot register the methods of '.toy_method'" in done.stderr
