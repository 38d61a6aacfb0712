"""results/minatar-departure/: the runner's cells are PLAN.md's runs with PLAN.md's flags, and stage 1b's verdict
decides on exact fractions (a bound of exactly 0.5 is not above it) and refuses runs off the plan."""

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "results" / "minatar-departure"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"md_{name}", STUDY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look themselves up there)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runner():
    return _load("run")


@pytest.fixture(scope="module")
def verdict():
    return _load("verdict")


def test_the_cells_are_the_plans_runs(runner):
    a, b = runner.cells("1a"), runner.cells("1b")
    assert len(a) == 55 and len(b) == 18 and runner.cells("1") == b + a
    assert len({c.name for c in a + b}) == 73 and len({c.grid for c in a + b}) == 73
    assert {c.method for c in a} == {"beta"} and {c.seed for c in a} == set(range(5))
    assert {c.steps for c in a if c.env.startswith("MinAtar/")} == {1_000_000}
    assert {c.steps for c in a if not c.env.startswith("MinAtar/")} == {500_000}
    assert {(c.env, c.method) for c in b} == {(f"MinAtar/{g}", m) for g in ("Asterix", "Breakout", "Seaquest")
                                              for m in ("beta", "dqn")}
    assert {c.steps for c in b} == {5_000_000} and {c.seed for c in b} == {0, 1, 2}
    cell = next(c for c in b if c.name == "1b/asterix-beta-s0")
    argv = " ".join(cell.argv())
    for flag in ("--algo beta_dqn --bandit-returns raw --beta-epsilon false", "--runtime serial --actors 4",
                 "--arm-exchange episode --beta-thread false", "--total-steps 5000000", "--seeds 0"):
        assert flag in argv
    assert str(cell.record) == "results/minatar-departure/1b/asterix-beta-s0"


def test_the_runners_arguments_are_checked_in_one_line(runner, capsys):
    with pytest.raises(SystemExit) as e:
        runner.main(["--stage", "1a", "--until", "25:00"])
    assert e.value.code == 2 and "--until '25:00' is not a time" in capsys.readouterr().err
    assert runner.main(["--check", "1a/nope"]) == 2
    assert "is not a cell of the study" in capsys.readouterr().err


def test_the_rule_compares_exact_fractions(verdict):
    from reporting import stats

    x = np.full((3, 3), 10.0)  # every run scores the same: every resample's P is exactly 1/2
    p, low, high = stats.exact_improvement(x, x.copy(), reps=200)
    assert (p, low, high) == (Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    assert "stage 2b runs" in verdict.decide(low)  # exactly 0.5 is not above it
    assert "is the budget" in verdict.decide(Fraction(1, 2) + Fraction(1, 10**12))


def test_missing_runs_are_listed_not_decided(verdict, capsys, monkeypatch):
    monkeypatch.setattr(verdict, "collect", lambda: {})
    monkeypatch.setattr(verdict, "study_commit", lambda: "13af96b" + "0" * 33)
    assert verdict.main(["--reps", "100"]) == 1
    assert "18 of stage 1b's 18 runs are not in the records yet" in capsys.readouterr().out


def test_a_run_off_the_plan_is_named(verdict):
    from reporting.results import RunData

    config = {"env": "MinAtar/Breakout", "algo": "beta_dqn", "seed": 0, "runtime": "serial", "actors": 4,
              "envs_per_actor": 4, "arm_exchange": "episode", "total_steps": 5_000_000, "bandit_returns": "raw",
              "beta_epsilon": False, "eps_decay_steps": 1_000_000, "lr": 3e-4, "gamma": 0.99}
    commit = "13af96b" + "0" * 33
    run = RunData("r", config, {"commit": "13af96b00000"}, [])
    assert verdict.off_plan(run, commit) == ""
    assert verdict.off_plan(RunData("r", {**config, "target_update": 4000}, run.summary, []), commit) == \
        "target_update is 4000, not 1000"
    assert verdict.off_plan(RunData("r", {**config, "lr": 1e-4}, run.summary, []), commit) == "lr is 0.0001, not 0.0003"
    assert verdict.off_plan(RunData("r", {**config, "beta_epsilon": True}, run.summary, []), commit) == \
        "beta_epsilon is True, not False"
    assert "not the study's" in verdict.off_plan(RunData("r", config, {"commit": "13af96b00000+dirty"}, []), commit)
    assert "not the study's" in verdict.off_plan(RunData("r", config, {"commit": "6bd091d00000"}, []), commit)
