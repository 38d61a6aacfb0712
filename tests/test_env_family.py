"""An environment family is one module and one line: a family defined in the test tree (`tests/toy_env_family`,
never shipped), named in `BETA_DQN_ENVS`, trains, evaluates and reports on both runtimes with its own names,
domain, scoring and defaults, without a line of the project knowing it."""

import json
import os
import subprocess
import sys

import pytest

from tests.test_imports import ROOT, code_words, modules

TOY = {"BETA_DQN_ENVS": "tests.toy_env_family", "PYTHONPATH": str(ROOT)}  # (Ray's workers inherit both)
SHORT = ["--algo", "dqn", "--actors", "2", "--total-steps", "3000", "--learning-starts", "300", "--eval-every",
         "1500", "--eval-episodes", "3", "--progress", "false", "--wandb", "disabled", "--json", "true"]


def command(module, args, env=None):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("runtime", ["serial", pytest.param("ray", marks=pytest.mark.integration)])
def test_a_family_of_the_test_tree_trains_evaluates_and_reports(tmp_path, runtime):
    out = tmp_path / "run"
    done = command("learner.main", ["--env", "ToyChain/Short", *SHORT, "--runtime", runtime, "--out", str(out)],
                   env=TOY)
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads((out / "config.json").read_text())
    assert config["env"] == "ToyChain/Short" and config["gamma"] == 0.95 and config["lr"] == 1e-3  # its defaults
    summary = json.loads(done.stdout)
    assert summary["final_eval"]["success_rate"] is not None  # it reports success, as it declares
    report = command("learner.report", [str(out), "--out", str(tmp_path / "report")], env=TOY)
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "ToyChain" in text and "success rate on CliffWalk and MiniGrid and ToyChain" in text
    # it declares no frames: a video of it is refused in one line, naming it
    video = command("learner.evaluate", [str(out), "--episodes", "1", "--video", str(tmp_path / "v")], env=TOY)
    assert video.returncode == 2 and video.stderr.strip().splitlines() == [
        "python -m learner.evaluate: error: video_dir: ToyChain/Short renders no frames (its family, ToyChain, "
        "declares none)"], video.stderr
    assert not (tmp_path / "v").exists()


def test_its_names_are_known_and_its_mistakes_are_one_line(tmp_path):
    done = command("learner.main", ["--env", "ToyChain/Nope", *SHORT, "--runtime", "serial",
                                    "--out", str(tmp_path / "x")], env=TOY)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "the toy chains are ToyChain/Short, ToyChain/Long" in done.stderr
    done = command("learner.main", ["--env", "NoSuchEnv-v9", *SHORT, "--out", str(tmp_path / "y")], env=TOY)
    assert done.returncode == 2 and "ToyChain/Short, ToyChain/Long" in done.stderr, done.stderr
    done = command("learner.main", ["--env", "ToyChain/Short", "--env-kwargs", '{"n": 3}', *SHORT,
                                    "--out", str(tmp_path / "z")], env=TOY)
    assert done.returncode == 2 and "takes no keyword arguments" in done.stderr, done.stderr


def test_without_its_variable_the_family_is_unknown(tmp_path):
    done = command("learner.main", ["--env", "ToyChain/Short", *SHORT, "--out", str(tmp_path / "x")],
                   env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "unknown env 'ToyChain/Short'" in done.stderr, done.stderr


def test_a_family_that_takes_another_familys_name_is_refused():
    from actors.envs import Family, register
    from actors.envs.registry import register_last

    with pytest.raises(ValueError, match="belong to another family already"):
        register(Family("Mine", names=("CliffWalk",), make=lambda *a: None))
    with pytest.raises(ValueError, match="MinAtar/Pong belong to another family already"):  # MinAtar owns it
        register(Family("Mine", names=("MinAtar/Pong",), make=lambda *a: None))
    with pytest.raises(ValueError, match="DoorKey belong to another family already"):  # it would own DoorKey
        register(Family("Mine", names=(), make=lambda *a: None, owns=lambda name: name.startswith("Door")))
    with pytest.raises(ValueError, match="is registered already"):
        register(Family("MinAtar", names=(), make=lambda *a: None))
    with pytest.raises(ValueError, match="last family is 'Other' already"):
        register_last(Family("Late", names=("LateEnv",), make=lambda *a: None))


def test_the_catalogue_lists_the_built_in_names_in_its_order():
    from actors.envs import known_names, success_domains

    assert known_names() == ["CliffWalk", "MinAtar/Asterix", "MinAtar/Breakout", "MinAtar/Freeway",
                             "MinAtar/Seaquest", "MinAtar/SpaceInvaders", "DoorKey", "Unlock", "SimpleCrossing-Easy",
                             "SimpleCrossing-Hard", "LavaCrossing-Easy", "LavaCrossing-Hard"]
    assert success_domains() == ("CliffWalk", "MiniGrid")


def test_ray_workers_are_given_the_variable(monkeypatch):
    from beta_dqn.driver.cluster import worker_runtime_env

    monkeypatch.setenv("BETA_DQN_ENVS", "tests.toy_env_family")
    assert worker_runtime_env([])["env_vars"]["BETA_DQN_ENVS"] == "tests.toy_env_family"


def test_no_line_of_the_project_names_the_toy_family():
    named = {str(p.relative_to(ROOT)) for p in modules().values() if any("ToyChain" in w for w in code_words(p))}
    assert not named, sorted(named)
