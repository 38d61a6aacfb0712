"""results/beta-epsilon/verdict.py: the preregistered rule decides on exact fractions, so that a bound at 0.5
(a tie) is neither above nor below it, and its exact interval is rliable's."""

import importlib.util
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def verdict():
    spec = importlib.util.spec_from_file_location("be_verdict", ROOT / "results" / "beta-epsilon" / "verdict.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_tie_is_neither_above_nor_below_one_half(verdict):
    from beta_dqn.reporting import stats

    # every run of both arms scores the same in every environment: every resample's P is exactly 1/2
    x = np.full((3, 11), 0.5)
    p, low, high = stats.exact_improvement(x, x.copy(), reps=200)
    assert (p, low, high) == (Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    assert verdict.decide(low, high, 1)[0] == "more-seeds"
    assert verdict.decide(low, high, 2)[0] == "none"  # stage 2: ε only if the lower bound is above 0.5
    # a hair above or below decides, with no rounding in between
    assert verdict.decide(Fraction(1, 2) + Fraction(1, 10**12), Fraction(1), 1)[0] == "eps"
    assert verdict.decide(Fraction(0), Fraction(1, 2) - Fraction(1, 10**12), 1)[0] == "none"


def test_the_exact_interval_is_rliables_own(verdict):
    from beta_dqn.reporting import stats

    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 4, size=(3, 11)).astype(float), rng.integers(0, 4, size=(3, 11)).astype(float)
    p, low, high = stats.exact_improvement(x, y, reps=500)
    point, flow, fhigh = stats.improvement(x, y, reps=500, seed=0)
    assert float(p) == pytest.approx(point, abs=1e-12)
    assert (float(low), float(high)) == (pytest.approx(flow, abs=1e-9), pytest.approx(fhigh, abs=1e-9))
    assert (2 * 3 * 3 * 11) % p.denominator == 0  # a fraction of 2·n·m·K


def test_missing_runs_are_listed_not_decided(verdict, capsys, monkeypatch):
    monkeypatch.setattr(verdict, "collect", lambda roots: {})  # no run recorded yet, whatever has landed since
    assert verdict.main(["--reps", "100"]) == 1
    assert "not in the records yet" in capsys.readouterr().out
    assert verdict.main(["--reps", "10"]) == 2


def test_the_committed_runs_follow_the_plan_and_a_departure_is_named(verdict):
    import copy

    runs = verdict.collect(verdict.records())
    eps, none = runs["DoorKey", "eps", 0], runs["DoorKey", "none", 0]
    assert verdict.off_plan(eps, "eps") == "" and verdict.off_plan(none, "none") == ""
    serial = copy.copy(eps)
    serial.config = {**eps.config, "runtime": "serial"}
    assert verdict.off_plan(serial, "eps") == "runtime is 'serial', not 'ray'"
    short = copy.copy(eps)
    short.config = {**eps.config, "eps_decay_steps": 1_000_000}
    assert verdict.off_plan(short, "eps") == "eps_decay_steps is 1000000, not 100000"
    assert verdict.off_plan(none, "eps").startswith("beta_epsilon is False")


def test_the_dqn_runs_are_serial_from_their_commit_and_the_new_none_runs_are_the_plans_four(verdict):
    import copy

    runs = verdict.collect(verdict.records())
    dqn = runs["DoorKey", "dqn", 0]  # Table 1's DQN under the protocol: serial, at f7c4e83 (PLAN.md, 2026-12-05)
    assert verdict.off_plan(dqn, "dqn") == ""
    on_ray = copy.copy(dqn)
    on_ray.config = {**dqn.config, "runtime": "ray"}
    assert verdict.off_plan(on_ray, "dqn") == "runtime is 'ray', not 'serial'"
    elsewhere = copy.copy(dqn)
    elsewhere.summary = {**dqn.summary, "commit": "7adcac352cc2"}
    assert verdict.off_plan(elsewhere, "dqn").startswith("its commit is '7adcac352cc2', not f7c4e83")
    # the none runs made at the study's commit: the four PLAN.md names, and no other
    new = runs["SimpleCrossing-Easy", "none", 3]
    assert str(new.summary["commit"]).startswith("7adcac3") and verdict.off_plan(new, "none") == ""
    moved = copy.copy(new)
    moved.config = {**new.config, "seed": 0}
    assert verdict.off_plan(moved, "none").startswith("its commit is the study's, 7adcac3, where PLAN.md makes")
