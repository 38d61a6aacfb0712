"""results/minatar-departure/: the runner's cells are PLAN.md's runs with PLAN.md's flags, and stage 1b's verdict
decides on exact fractions (a bound of exactly 0.5 is not above it) and refuses runs off the plan."""

import importlib.util
import json
import math
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


def test_the_cells_are_the_plans_runs(runner, monkeypatch):
    monkeypatch.setattr(runner, "stage_1b_rule", lambda: None)  # (whatever the records hold by now)
    monkeypatch.setattr(runner.rates, "chosen", lambda game, method, roots, check=None: None)
    a, dqn, beta = runner.cells("1a"), runner.cells("1b"), runner.cells("1b-beta")
    b = beta + dqn
    assert len(a) == 55 and len(dqn) == len(beta) == 9
    # PLAN.md's deviation of 2026-12-06: stage 1 is 1a, then 1b's DQN runs; 1b's β-DQN runs are asked for apart
    assert runner.cells("1") == a + dqn and runner.every_cell() == a + dqn + beta + runner.search_cells()
    assert {c.method for c in dqn} == {"dqn"} and {c.method for c in beta} == {"beta"}
    assert len({c.name for c in a + b}) == 73 and len({c.grid for c in a + b}) == 73
    assert {c.method for c in a} == {"beta"} and {c.seed for c in a} == set(range(5))
    assert {c.steps for c in a if c.env.startswith("MinAtar/")} == {1_000_000}
    assert {c.steps for c in a if not c.env.startswith("MinAtar/")} == {500_000}
    assert {(c.env, c.method) for c in b} == {(f"MinAtar/{g}", m) for g in ("Asterix", "Breakout", "Seaquest")
                                              for m in ("beta", "dqn")}
    assert {c.steps for c in b} == {5_000_000} and {c.seed for c in b} == {0, 1, 2}
    cell = next(c for c in beta if c.name == "1b/asterix-beta-s0")
    argv = " ".join(cell.argv())
    # PLAN.md's deviation of 2026-12-07: alone, β's update on the second core (the same math, its Equivalence)
    for flag in ("--algo beta_dqn --bandit-returns raw --beta-epsilon false", "--runtime serial --actors 4",
                 "--arm-exchange episode --beta-thread true", "--total-steps 5000000", "--seeds 0"):
        assert flag in argv
    assert str(cell.record) == "results/minatar-departure/1b/asterix-beta-s0"
    assert all("--beta-thread false" in " ".join(c.argv()) and not c.solo for c in a + dqn)
    assert all(c.solo for c in beta) and not any("--lr" in c.argv() for c in a + b)


def test_stage_2a_searches_the_two_other_rates_at_seeds_0_to_2(runner):
    from beta_dqn.configuration.defaults import env_defaults

    for g in runner.MINATAR:  # the runner's default rates are the code's (unchanged since the study's commit)
        assert float(runner.rates.default(g)) == env_defaults(f"MinAtar/{g}")[1]
    search = runner.search_cells()
    assert len(search) == 60 and len({c.name for c in search}) == 60 and len({c.grid for c in search}) == 60
    assert {c.seed for c in search} == {0, 1, 2} and {c.steps for c in search} == {1_000_000}
    assert all("--beta-thread false" in " ".join(c.argv()) and not c.solo for c in search)
    for g in runner.MINATAR:
        for m in ("beta", "dqn"):
            rates = {c.lr for c in search if c.env == f"MinAtar/{g}" and c.method == m}
            assert rates == set(runner.rates.RATES) - {runner.rates.default(g)}
    cell = next(c for c in search if c.name == "2a/asterix-dqn-lr3e-4-s1")
    assert "--env MinAtar/Asterix --algo dqn --lr 3e-4 --seeds 1 --total-steps 1000000 --runtime serial" in \
        " ".join(cell.argv())
    assert str(cell.grid) == "runs/md-2a-asterix-dqn-lr3e-4-s1"
    assert {c.name for c in runner.every_cell()} >= {c.name for c in search}
    assert {str(runner.rates.record(c.env.removeprefix("MinAtar/"), c.method, c.seed, c.lr)) for c in search} == \
        {str(c.record) for c in search}  # the choice reads the records the runner makes
    assert str(runner.rates.record("Asterix", "dqn", 2, "3e-5")) == "results/table1-protocol/asterix-dqn-s2"
    assert str(runner.rates.record("Asterix", "beta", 2, "3e-5")) == "results/minatar-departure/1a/asterix-beta-s2"


def _record(root, record, score, episodes=30):
    """A record as the runner leaves it: runs.csv (rounded to 4 places, as the report writes it) and the run's
    evals.csv (unrounded) and config.json."""
    run = root / record / "runs" / "r"
    run.mkdir(parents=True)
    (root / record / "runs.csv").write_text(f"env,score\nx,{round(score, 4)}\n")
    (run / "evals.csv").write_text(f"env_steps,return_mean\n100000,0.0\n1000000,{score!r}\n")
    (run / "config.json").write_text(json.dumps({"eval_episodes": episodes}))


def test_stage_2a_chooses_by_the_mean_over_seeds_0_to_2_then_runs_seeds_3_and_4(runner, tmp_path, monkeypatch):
    clone, home = tmp_path / "clone", tmp_path / "main"
    monkeypatch.setattr(runner.grids, "ROOT", clone)
    monkeypatch.setattr(runner.grids, "HOME", home)

    def chosen(game, method):
        return runner.rates.chosen(game, method, (clone, home))

    def scores(game, method, by_rate):
        for rate, values in by_rate.items():
            for seed, v in enumerate(values):
                where = home if seed % 2 else clone  # a record in either checkout counts
                _record(where, runner.rates.record(game, method, seed, rate), v)

    assert chosen("Breakout", "dqn") is None and runner.held_out("Breakout", "dqn") == []
    scores("Breakout", "dqn", {"3e-4": [1, 2, 3], "1e-4": [3, 3, 0]})
    assert chosen("Breakout", "dqn") is None  # 3e-5's runs are not in yet
    scores("Breakout", "dqn", {"3e-5": [2, 2 + 1 / 30, 2]})
    assert chosen("Breakout", "dqn") == "3e-5"  # a mean 1/90 above the two others' 2
    assert [c.name for c in runner.held_out("Breakout", "dqn")] == ["2a/breakout-dqn-lr3e-5-s3",
                                                                     "2a/breakout-dqn-lr3e-5-s4"]
    assert [c.name for c in runner.cells("2a")[60:]] == ["2a/breakout-dqn-lr3e-5-s3", "2a/breakout-dqn-lr3e-5-s4"]
    scores("Seaquest", "beta", {"3e-4": [1, 1, 1], "1e-4": [0, 1, 2], "3e-5": [3, 0, 0]})
    assert chosen("Seaquest", "beta") == "1e-4"  # a three-way tie: the default (1e-4)
    assert runner.held_out("Seaquest", "beta") == []  # the default's seeds 3-4 exist (stage 1a)
    scores("Asterix", "beta", {"3e-4": [0, 0, 0], "1e-4": [1, 1, 1], "3e-5": [0, 0, 0.5]})
    scores("Asterix", "dqn", {"3e-4": [1, 1, 1], "1e-4": [1, 1, 1], "3e-5": [0, 0, 0]})
    assert chosen("Asterix", "beta") == "1e-4"
    assert chosen("Asterix", "dqn") == "3e-4"  # tied without the default (3e-5): the larger rate
    # exact ties that rounding or float sums would break: runs.csv's 4 places read 0.0333 + 0.0333 against 0.0667,
    # and 0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1 in floats; the scores are means of 30 whole returns
    scores("Freeway", "beta", {"3e-4": [1 / 30, 1 / 30, 10], "1e-4": [2 / 30, 0, 10], "3e-5": [0, 0, 0]})
    assert chosen("Freeway", "beta") == "3e-4"  # tied with 1e-4: the default
    scores("Freeway", "dqn", {"3e-4": [0, 0, 0], "1e-4": [0.3, 0.2, 0.1], "3e-5": [0.1, 0.2, 0.3]})
    assert chosen("Freeway", "dqn") == "1e-4"  # tied without the default: the larger rate, though floats differ
    scores("Seaquest", "dqn", {"3e-4": [4, 4, 4], "1e-4": [1, 1, 1], "3e-5": [4, 4, 4]})
    assert chosen("Seaquest", "dqn") == "3e-4"  # tied without the default (1e-4): the larger rate, not the last


def test_the_runners_arguments_are_checked_in_one_line(runner, capsys):
    for argv, says in ((["--stage", "1a", "--until", "25:00"], "--until '25:00' is not a time"),
                       (["--stage", "2"], "argument --stage: invalid choice: '2'"),
                       (["--stage", "1a"], "not the study's commit")):  # this checkout is main, not the clone
        with pytest.raises(SystemExit) as e:
            runner.main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert runner.main(["--check", "1a/nope"]) == 2
    assert "is not a cell of the study" in capsys.readouterr().err


def test_a_record_reaches_main_whole_or_not_at_all(runner, tmp_path, monkeypatch):
    clone, home = tmp_path / "clone", tmp_path / "main"
    cell = runner.cells("1a")[0]
    (clone / cell.record / "runs").mkdir(parents=True)
    (clone / cell.record / "runs.csv").write_text("env,score\n")
    monkeypatch.setattr(runner.grids, "ROOT", clone)
    monkeypatch.setattr(runner.grids, "HOME", home)
    assert runner.grids.recorded(cell)  # the clone's record counts
    (home / cell.record).parent.mkdir(parents=True)
    runner.grids.copy_home(cell)
    assert (home / cell.record / "runs.csv").read_text() == "env,score\n"
    assert [p.name for p in (home / cell.record).parent.iterdir()] == [cell.record.name]  # no part left


def test_the_rule_compares_exact_fractions(verdict):
    from beta_dqn.reporting import stats

    x = np.full((3, 3), 10.0)  # every run scores the same: every resample's P is exactly 1/2
    p, low, high = stats.exact_improvement(x, x.copy(), reps=200)
    assert (p, low, high) == (Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    assert "stage 2b runs" in verdict.decide(low)  # exactly 0.5 is not above it
    assert "is the budget" in verdict.decide(Fraction(1, 2) + Fraction(1, 10**12))


def test_missing_runs_are_listed_not_decided(verdict, capsys, monkeypatch):
    monkeypatch.setattr(verdict, "collect", lambda homes=None: {})
    monkeypatch.setattr(verdict, "study_commit", lambda: "13af96b" + "0" * 33)
    assert verdict.main(["--reps", "100"]) == 1
    assert "18 of stage 1b's 18 runs are not in the records yet" in capsys.readouterr().out


def _runs(verdict, beta_score, dqn_score):
    from beta_dqn.reporting.results import RunData

    runs = {}
    for g in verdict.GAMES:
        for algo, score in (("beta_dqn", beta_score), ("dqn", dqn_score)):
            for seed in verdict.SEEDS:
                evals = [{"env_steps": 100_000, "return_mean": score(seed) / 2},
                         {"env_steps": 5_000_000, "return_mean": score(seed)}]
                runs[g, algo, seed] = RunData(f"{g}-{algo}-{seed}", {"env": g, "algo": algo, "seed": seed},
                                              {"final_eval": {"return_mean": score(seed)}, "commit": "x"}, evals)
    return runs


@pytest.mark.parametrize("beta_ahead", [True, False])
def test_the_rule_reads_beta_against_dqn_the_right_way_round(verdict, capsys, monkeypatch, beta_ahead):
    """β-DQN's runs all above DQN's: P = 1, the departure is the budget; the other way round: stage 2b runs."""
    high, low = (lambda seed: 10.0 + seed), (lambda seed: 1.0 + seed)
    runs = _runs(verdict, high if beta_ahead else low, low if beta_ahead else high)
    monkeypatch.setattr(verdict, "collect", lambda homes=None: runs)
    monkeypatch.setattr(verdict, "study_commit", lambda: "0" * 40)
    monkeypatch.setattr(verdict, "off_plan", lambda run, commit: "")
    assert verdict.main(["--reps", "200"]) == 0
    out = capsys.readouterr().out
    assert f"P(β-DQN > DQN) = {1.0 if beta_ahead else 0.0:.4f}" in out
    assert ("is the budget" in out) == beta_ahead and ("stage 2b runs" in out) != beta_ahead
    assert "NOT the verdict: 200 resamples" in out
    ahead, behind = ("β-DQN", "DQN") if beta_ahead else ("DQN", "β-DQN")
    assert f"every {ahead} run above every {behind} run on: Asterix, Breakout, Seaquest" in out
    assert f"every {behind} run above" not in out


def test_a_run_off_the_plan_is_named(verdict):
    from beta_dqn.reporting.results import RunData

    config = {"env": "MinAtar/Breakout", "algo": "beta_dqn", "seed": 0, "runtime": "serial", "actors": 4,
              "envs_per_actor": 4, "arm_exchange": "episode", "total_steps": 5_000_000, "bandit_returns": "raw",
              "beta_epsilon": False, "eps_decay_steps": 1_000_000, "lr": 3e-4, "gamma": 0.99}
    commit = "13af96b" + "0" * 33
    run = RunData("r", config, {"commit": "13af96b00000"}, [])
    assert verdict.off_plan(RunData("r", {**config, "seed": 3}, run.summary, []), commit) == \
        "its seed is 3, not one of (0, 1, 2)"
    assert verdict.off_plan(RunData("r", {**config, "loss": "mse"}, run.summary, []), commit) == \
        "loss is 'mse', not 'huber'"
    assert "not the study's" in verdict.off_plan(RunData("r", config, {"commit": "1"}, []), commit)
    assert verdict.off_plan(run, commit) == ""
    assert verdict.off_plan(RunData("r", {**config, "target_update": 4000}, run.summary, []), commit) == \
        "target_update is 4000, not 1000"
    assert verdict.off_plan(RunData("r", {**config, "lr": 1e-4}, run.summary, []), commit) == "lr is 0.0001, not 0.0003"
    assert verdict.off_plan(RunData("r", {**config, "beta_epsilon": True}, run.summary, []), commit) == \
        "beta_epsilon is True, not False"
    assert "not the study's" in verdict.off_plan(RunData("r", config, {"commit": "13af96b00000+dirty"}, []), commit)
    assert "not the study's" in verdict.off_plan(RunData("r", config, {"commit": "6bd091d00000"}, []), commit)


def test_a_1b_beta_run_cut_off_continues_from_its_checkpoint_and_its_record_says_where(runner, tmp_path,
                                                                                     monkeypatch):
    """PLAN.md's deviation of 2026-12-06: stage 1b's β-DQN runs (5M env steps, longer than a session) continue
    from their last checkpoint, each resume's env steps in `resumes.json` (the run's, then its record's); every
    other run cut off starts again from its beginning."""
    import torch

    clone, home = tmp_path / "clone", tmp_path / "main"
    monkeypatch.setattr(runner.grids, "ROOT", clone)
    monkeypatch.setattr(runner.grids, "HOME", home)
    launched = []

    def launch(cmd, log):  # the run and its report, as files
        launched.append(cmd)
        if "learner.report" in cmd:
            (clone / cmd[cmd.index("--out") + 1]).mkdir(parents=True)
            (clone / cmd[cmd.index("--out") + 1] / "runs.csv").write_text("env,score\n")
        else:
            grid = cmd[cmd.index("--resume") + 1] if "--resume" in cmd else cmd[cmd.index("--out") + 1]
            (clone / grid / "run").mkdir(parents=True, exist_ok=True)
            (clone / grid / "run" / "summary.json").write_text("{}")
        return 0

    monkeypatch.setattr(runner.grids, "launch", launch)
    beta = next(c for c in runner.cells("1b-beta") if c.name == "1b/asterix-beta-s0")
    (clone / beta.grid / "run").mkdir(parents=True)
    torch.save({"counters": {"env_steps": 300_000}}, clone / beta.grid / "run" / "checkpoint.pt")
    (clone / beta.grid / runner.RESUMES).write_text("[100000]\n")  # resumed once before, at 100k
    assert runner.grids.run(beta)
    assert launched[0][1:] == ["-m", "learner.main", "--resume", str(beta.grid)]
    assert json.loads((clone / beta.record / runner.RESUMES).read_text()) == [100_000, 300_000]
    assert json.loads((home / beta.record / runner.RESUMES).read_text()) == [100_000, 300_000]  # in main's copy

    dqn, launched[:] = runner.cells("1b")[0], []
    (clone / dqn.grid / "run").mkdir(parents=True)
    torch.save({"counters": {"env_steps": 300_000}}, clone / dqn.grid / "run" / "checkpoint.pt")
    assert runner.grids.run(dqn)  # not resumable: moved aside and run from its beginning, no resumes.json
    assert "--resume" not in launched[0] and "--out" in launched[0]
    assert any(p.name.startswith(dqn.grid.name + "-cut-") for p in (clone / dqn.grid).parent.iterdir())
    assert not (clone / dqn.record / runner.RESUMES).exists()


def test_a_1b_beta_run_starts_only_if_what_is_left_of_it_fits(runner, tmp_path, monkeypatch):
    """PLAN.md's deviation of 2026-12-07: a machine may not keep runs/ to the next session, so a 1b β-DQN run starts
    only where its estimate fits, or, resumed, the estimate of what its checkpoint leaves."""
    import time

    import torch

    monkeypatch.setattr(runner.grids, "ROOT", tmp_path)
    ran = []
    monkeypatch.setattr(runner.grids, "run", lambda cell: ran.append(cell.name) or True)
    beta, other = runner.cells("1b-beta")[:2]
    assert beta.minutes == 170 and runner.grids.minutes_left(beta) == 170
    assert runner.grids.work([beta], 1, time.time() + 100 * 60) == 0 and ran == []  # 170 min do not fit in 100
    (tmp_path / beta.grid / "run").mkdir(parents=True)
    torch.save({"counters": {"env_steps": 3_000_000}}, tmp_path / beta.grid / "run" / "checkpoint.pt")
    assert runner.grids.minutes_left(beta) == pytest.approx(170 * 0.4)
    assert runner.grids.work([other, beta], 1, time.time() + 100 * 60) == 0 and ran == [beta.name]
    (tmp_path / beta.grid / "run" / "summary.json").write_text("{}")  # it ran to its end: only its record is left
    assert runner.grids.minutes_left(beta) == 1
    dqn = runner.cells("1b")[0]  # a checkpoint does not shorten a run that is never resumed
    (tmp_path / dqn.grid / "run").mkdir(parents=True)
    torch.save({"counters": {"env_steps": 3_000_000}}, tmp_path / dqn.grid / "run" / "checkpoint.pt")
    assert runner.grids.minutes_left(dqn) == dqn.minutes == 100


def test_1b_beta_runs_one_at_a_time(runner, capsys, monkeypatch):
    with pytest.raises(SystemExit) as e:
        runner.main(["--stage", "1b-beta", "--jobs", "2"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "its runs run one at a time" in err and len(err.strip().splitlines()) == 1
    jobs = {}
    monkeypatch.setattr(runner, "at_study_commit", lambda: "")
    monkeypatch.setattr(runner.grids, "copy_home", lambda cell: None)
    monkeypatch.setattr(runner.grids.os, "nice", lambda n: 0)
    monkeypatch.setattr(runner.grids, "work", lambda todo, n, end: jobs.setdefault(todo[0].stage + str(todo[0].solo), n)
                        and 0)
    for stage in ("1b-beta", "2a"):
        runner.main(["--stage", stage])
    assert jobs == {"1bTrue": 1, "2aFalse": 2}  # 1b's β-DQN runs one at a time by default, the others two


def test_a_finished_1b_beta_run_is_recorded_not_resumed_and_a_failed_resume_is_not_counted(runner, tmp_path,
                                                                                         monkeypatch):
    import torch

    clone, home = tmp_path / "clone", tmp_path / "main"
    monkeypatch.setattr(runner.grids, "ROOT", clone)
    monkeypatch.setattr(runner.grids, "HOME", home)
    launched = []

    def launch(cmd, log):
        launched.append(cmd)
        if "learner.report" in cmd:
            (clone / cmd[cmd.index("--out") + 1]).mkdir(parents=True)
            (clone / cmd[cmd.index("--out") + 1] / "runs.csv").write_text("env,score\n")
            return 0
        return 1  # a resume that fails at once

    monkeypatch.setattr(runner.grids, "launch", launch)
    beta = runner.cells("1b-beta")[0]
    (clone / beta.grid / "run").mkdir(parents=True)
    torch.save({"counters": {"env_steps": 300_000}}, clone / beta.grid / "run" / "checkpoint.pt")
    assert not runner.grids.run(beta)
    assert json.loads((clone / beta.grid / runner.RESUMES).read_text()) == []  # it made no progress: not counted
    (clone / beta.grid / "run" / "summary.json").write_text("{}")  # it ran to its end; the record was not made
    launched[:] = []
    assert runner.grids.run(beta)
    assert ["learner.report" in cmd for cmd in launched] == [True]  # recorded, not run again
    assert json.loads((home / beta.record / runner.RESUMES).read_text()) == []


def test_holms_correction_and_the_late_bins():
    table1, late = _load("table1"), _load("late")
    # Holm: sorted p times (m - i), never below the one before, at most 1
    assert table1.holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert table1.holm({"a": 0.5, "b": 0.9}) == {"a": 1.0, "b": 1.0}
    rows = [{"env_steps": 50_000, "arm_proportions": [0.5, 0.5], "arm_bonus": [0.2, 0.0], "arms_cov": 0.5,
             "arms_cor": 0.5, "arms_cor0": 0.0, "q_mean": 1.0},
            {"env_steps": 100_000, "arm_proportions": [1.0, 0.0], "arm_bonus": [0.4, 0.0], "arms_cov": 1.0,
             "arms_cor": 0.0, "arms_cor0": 0.0, "q_mean": 3.0},
            {"env_steps": 100_001, "q_mean": 5.0, "beta_entropy": 0.5}]
    bins = late.per_bin(rows)  # a bin ends at its env steps: (0, 100k], (100k, 200k]
    assert bins["cov"] == {100_000: 0.75} and bins["bonus"] == {100_000: pytest.approx(0.25)}
    assert bins["q_mean"] == {100_000: 2.0, 200_000: 5.0} and bins["beta_entropy"] == {200_000: 0.5}


def test_stage_2a_report_chooses_holds_out_and_applies_the_default_rule(tmp_path, monkeypatch, capsys):
    """search.py: a choice and its held-out seeds only on whole sets of runs; a default rate changes only where both
    methods chose the same other rate and both beat the default at seeds 3-4; P waits for every game."""
    search = _load("search")
    monkeypatch.setattr(search, "ROOTS", (tmp_path,))
    monkeypatch.setattr(search, "TEXT", tmp_path / "search.txt")
    monkeypatch.setattr(search.verdict, "check_record", lambda *args: None)  # (made-up records: no run to check)
    record = search.rates.record

    def runs(game, method, by_rate, seeds=range(3)):
        for rate, values in by_rate.items():
            for seed, v in zip(seeds, values, strict=True):
                _record(tmp_path, record(game, method, seed, rate), v)

    # Freeway (default 3e-4): both choose 1e-4; at seeds 3-4 both beat the default: it changes
    for m in ("beta", "dqn"):
        runs("Freeway", m, {"3e-4": [10, 10, 10], "1e-4": [20, 20, 20], "3e-5": [0, 0, 0]})
        runs("Freeway", m, {"3e-4": [10, 10], "1e-4": [11, 12]}, seeds=(3, 4))
    # Breakout (default 3e-4): both choose 3e-5, but DQN's seeds 3-4 do not beat the default: it stays
    for m, held in (("beta", [5, 6]), ("dqn", [3, 4])):
        runs("Breakout", m, {"3e-4": [4, 4, 4], "1e-4": [1, 1, 1], "3e-5": [9, 9, 9]})
        runs("Breakout", m, {"3e-4": [4, 4], "3e-5": held}, seeds=(3, 4))
    runs("Asterix", "beta", {"3e-4": [1, 1, 1], "1e-4": [2, 2, 2]})  # 3e-5 (the default) missing
    assert search.default_changes("Freeway") == ("1e-4", "changes to 1e-4: both chose it and both score above the "
                                                          "default at seeds 3-4")
    assert search.default_changes("Breakout") == (None, "stays: both chose 3e-5, but at seeds 3-4 DQN does not "
                                                        "score above the default")
    assert search.default_changes("Asterix") == (None, "waits for both methods' choices")
    line, chosen = search.row("Asterix", "beta")
    assert chosen is None and "0/3 runs*" in line and "waits for its 9 runs" in line
    line, chosen = search.row("Freeway", "dqn")
    assert chosen == "1e-4" and "seeds 3-4  11.50 (default  10.00)  seeds 0-4  16.60" in line
    assert search.main(reps=10) == 0
    out = capsys.readouterr().out
    assert "waits for runs" in out and "nan" not in out
    assert (tmp_path / "search.txt").read_text() == out


def test_stage_2a_report_compares_the_methods_over_the_five_games(tmp_path, monkeypatch):
    """P(β-DQN > DQN) reads runs × games: at seeds 0-4 β-DQN wins four games outright and loses the fifth in every
    pairing (P = 4/5), at seeds 3-4 at the chosen rates (each the default here) the same."""
    search = _load("search")
    monkeypatch.setattr(search, "ROOTS", (tmp_path,))
    monkeypatch.setattr(search.verdict, "check_record", lambda *args: None)  # (made-up records: no run to check)
    for game in search.GAMES:
        default = search.rates.default(game)
        for method in ("beta", "dqn"):
            ahead = (method == "beta") != (game == "Seaquest")
            for seed in range(5):
                for rate in search.rates.RATES:
                    # games far apart: a games × runs reading would compare across games (P = 14/25 at seeds 0-4)
                    score = 100 * search.GAMES.index(game) + (10 if ahead else 0) + seed + (rate == default)
                    _record(tmp_path, search.rates.record(game, method, seed, rate), score)
    chosen = {(g, m): search.rates.chosen(g, m, search.ROOTS) for g in search.GAMES for m in search.METHODS}
    assert set(chosen.values()) == {"3e-5", "1e-4", "3e-4"} and all(r == search.rates.default(g)
                                                                     for (g, _), r in chosen.items())
    for seeds in ((3, 4), tuple(range(5))):
        p, low, high = search.improvement(chosen, seeds, reps=10)
        assert p == pytest.approx(4 / 5) and low <= p <= high


def test_table1_passes_its_commit_check_on_the_committed_records(monkeypatch):
    """table1.py reads the study's commit through the runner it shares; on the committed records it gets past the
    check to the report (stopped there: the report takes minutes)."""
    table1 = _load("table1")
    if not table1.run.grids.git(ROOT, "log", "--format=%H", "--", "results/minatar-departure/PLAN.md"):
        pytest.skip("this clone lacks the history that names the study's commit (a shallow clone)")

    class Reached(Exception):
        pass

    real = table1.subprocess.run

    def report(cmd, **kw):  # git answers (the runner's commit check); the report is where it stops
        if cmd[0] == "git":
            return real(cmd, **kw)
        raise Reached(cmd)

    monkeypatch.setattr(table1.subprocess, "run", report)
    with pytest.raises(Reached) as e:
        table1.main()
    assert "learner.report" in e.value.args[0]


@pytest.mark.parametrize("rule", [None, False, "a record does not read"])
def test_stage_2b_has_no_runs_until_stage_1bs_rule_says_it_runs(runner, monkeypatch, capsys, rule):
    monkeypatch.setattr(runner, "stage_1b_rule", lambda: rule)
    monkeypatch.setattr(runner.rates, "chosen", lambda game, method, roots, check=None: "1e-4")
    assert runner.cells("2b") == [] and runner.waiting("2b") and runner.waiting("2a") == ""
    assert {c.stage for c in runner.every_cell()} == {"1a", "1b", "2a"}
    assert runner.main(["--stage", "2b", "--list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stage 2b ") and ("is the budget" in out) == (rule is False) and "0 of 0 recorded" in out


def test_stage_2b_runs_each_reading_at_the_chosen_rate_seeds_3_to_5(runner, monkeypatch):
    """PLAN.md's note of 2026-12-06: 4 readings × 5 games × seeds 3-5 at the method's chosen rate, and the default
    flags at seed 5 (10 runs): 70; a game and method whose choice is not made has none; each reading's flag is the
    one PLAN.md's table names, and the run resolves to stage 2b's plan (readings.py checks its records by it)."""
    from beta_dqn.configuration.cli import parse_config
    from beta_dqn.configuration.flags import public, resolve
    from beta_dqn.reporting.results import RunData

    monkeypatch.setattr(runner, "stage_1b_rule", lambda: True)
    choice = {("Asterix", "beta"): "3e-5", ("Asterix", "dqn"): "1e-4"}
    monkeypatch.setattr(runner.rates, "chosen",
                        lambda game, method, roots, check=None: choice.get((game, method), "3e-4"))
    assert runner.waiting("2b") == ""
    cells = runner.cells("2b")
    assert len(cells) == 70 and len({c.name for c in cells}) == 70 and {c.seed for c in cells} == {3, 4, 5}
    assert [c.seed for c in cells] == sorted(c.seed for c in cells)  # seed by seed
    assert {c.reading for c in cells if c.seed < 5} == {"eps", "target4k", "nocount"}
    assert sum(c.reading == "" for c in cells) == 10 and all(c.seed == 5 for c in cells if not c.reading)
    assert {c.name for c in runner.every_cell()} >= {c.name for c in cells}
    by_name = {c.name: c for c in cells}
    names = ("2b/asterix-beta-eps-lr3e-5-s3", "2b/asterix-dqn-target4k-lr1e-4-s4", "2b/breakout-beta-nocount-lr3e-4-s5",
             "2b/breakout-beta-lr3e-4-s5")
    argv = {n: " ".join(by_name[n].argv()) for n in names}
    assert "--algo beta_dqn --bandit-returns raw --beta-epsilon true --lr 3e-5 --seeds 3" in argv[
        "2b/asterix-beta-eps-lr3e-5-s3"]
    assert argv["2b/asterix-dqn-target4k-lr1e-4-s4"].endswith("--wandb disabled --target-update 4000")
    assert argv["2b/breakout-beta-nocount-lr3e-4-s5"].endswith("--count-mode off")
    assert "--beta-epsilon false --lr 3e-4" in argv["2b/breakout-beta-lr3e-4-s5"]  # the default's rate named too
    assert all("--beta-thread false" in a and "--total-steps 1000000" in a for a in argv.values())
    readings = _load("readings")
    commit = "13af96b" + "0" * 33
    for cell in cells:
        args = ["--seed" if a == "--seeds" else a for a in cell.argv()]
        config = public(resolve(parse_config(args))[0])
        run = RunData(cell.name, config, {"commit": commit[:12]}, [])
        plan = readings.plan(cell.method, cell.reading, cell.lr)
        assert readings.verdict.off_plan(run, commit, plan, games=(cell.env,), seeds=(3, 4, 5)) == "", cell.name
        if cell.reading:  # without its reading's flag the run is off the plan
            field, value = readings.FIELD[runner.READINGS[cell.method, cell.reading][0]]
            plain = RunData(cell.name, {**config, field: public(resolve(parse_config(["--env", cell.env, "--algo",
                            config["algo"]]))[0])[field]}, run.summary, [])
            assert field in readings.verdict.off_plan(plain, commit, plan, games=(cell.env,), seeds=(3, 4, 5))


def test_stage_2b_report_applies_its_rule_once_per_reading(monkeypatch, capsys, tmp_path):
    """readings.py: a reading passes only on a lower bound above 0.5 over the five games; the target period changes
    only if both target4k readings pass; a reading with runs missing is not decided and names them."""
    readings = _load("readings")
    monkeypatch.setattr(readings.verdict, "stage_2b_runs", lambda homes=None: True)
    monkeypatch.setattr(readings.verdict, "study_commit", lambda: "0" * 40)
    monkeypatch.setattr(readings.rates, "chosen", lambda game, method, roots, check=None: "1e-4")
    monkeypatch.setattr(readings, "TEXT", tmp_path / "readings.txt")
    ahead = {("beta", "eps"): 5.0, ("beta", "nocount"): -5.0, ("beta", "target4k"): 5.0, ("dqn", "target4k"): 0.0}

    def score(game, method, reading, seed, rate, commit):
        return 10.0 * (1 + readings.GAMES.index(game)) + seed + (ahead[method, reading] if reading else 0.0)

    monkeypatch.setattr(readings, "score", score)
    assert readings.main(reps=200) == 0
    out = capsys.readouterr().out
    assert "eps (β-DQN)" in out and out.count(": passes") == 2 and out.count("does not pass") == 2
    assert "eps (β-DQN) changes; nocount (β-DQN) stays; the target period stays" in out
    assert out.count("NOT the rule: 200 resamples") == 6 and (tmp_path / "readings.txt").read_text() == out
    assert out.count("every run of the reading below every default run on:") == 1  # nocount's, on all five
    assert "default run on: Asterix, Breakout, Freeway, Seaquest, SpaceInvaders" in out
    # DQN's target4k against its own default flags: the same scores, so the same IQM over DQN's mean (1.0 here)
    assert "IQM over DQN's default-flag mean: reading 1.000 [" in out
    ahead["dqn", "target4k"] = 5.0
    assert readings.main(reps=200) == 0
    assert "; the target period changes" in capsys.readouterr().out
    monkeypatch.setattr(readings, "score", lambda g, m, r, s, rate, c: None if r == "nocount" and s == 5 else
                        score(g, m, r, s, rate, c))
    assert readings.main(reps=200) == 0
    out = capsys.readouterr().out
    assert ("nocount (β-DQN)    waits for 5 runs: minatar-departure/2b/asterix-beta-nocount-lr1e-4-s5, "
            "minatar-departure/2b/breakout-beta-nocount-lr1e-4-s5") in out
    assert out.count(": passes") == 3 and "Defaults for" not in out
    monkeypatch.setattr(readings.verdict, "stage_2b_runs", lambda homes=None: None)
    assert readings.main(reps=200) == 1 and "waits for stage 1b's rule" in capsys.readouterr().out


def test_stage_2b_report_checks_every_run_it_reads(monkeypatch, capsys, tmp_path):
    """readings.score on the study's own records, copied: the reused default-flag runs read (stage 1a's at the
    study's commit, Table 1's DQN column's at f7c4e83); a stage-2b record off its reading's flag, under another
    seed's name, made at another commit or of the other method is an error naming it."""
    import shutil

    readings = _load("readings")
    monkeypatch.setattr(readings, "ROOT", tmp_path)
    commit = readings.verdict.study_commit()
    beta, dqn = "results/minatar-departure/1a/asterix-beta-s3", "results/table1-protocol/asterix-dqn-s3"
    for record in (beta, dqn):
        shutil.copytree(ROOT / record, tmp_path / record)
    assert readings.score("Asterix", "beta", "", 3, "3e-5", commit) == pytest.approx(13.7666666)
    assert readings.score("Asterix", "dqn", "", 3, "3e-5", commit) == pytest.approx(15.4333333)
    assert readings.score("Asterix", "beta", "", 4, "3e-5", commit) is None  # not copied: unrecorded

    def as_2b(source, name, **config):
        target = tmp_path / "results/minatar-departure/2b" / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ROOT / source, target)
        (path,) = target.glob("runs/*/config.json")
        path.write_text(json.dumps({**json.loads(path.read_text()), **config}))

    as_2b(beta, "asterix-beta-nocount-lr3e-5-s3")
    with pytest.raises(readings.verdict.ReportError, match="nocount-lr3e-5-s3: count_mode is 'augment', not 'off'"):
        readings.score("Asterix", "beta", "nocount", 3, "3e-5", commit)
    as_2b(beta, "asterix-beta-nocount-lr3e-5-s3", count_mode="off")
    assert readings.score("Asterix", "beta", "nocount", 3, "3e-5", commit) == pytest.approx(13.7666666)
    as_2b(beta, "asterix-beta-nocount-lr3e-5-s4", count_mode="off")  # seed 3's run under seed 4's name
    with pytest.raises(readings.verdict.ReportError, match="its seed is 3, not one of"):
        readings.score("Asterix", "beta", "nocount", 4, "3e-5", commit)
    with pytest.raises(readings.verdict.ReportError, match="not the study's"):  # made at another commit
        readings.score("Asterix", "beta", "nocount", 3, "3e-5", readings.verdict.DQN_COLUMN)
    as_2b(dqn, "asterix-beta-nocount-lr3e-5-s3", count_mode="off")  # DQN's run under β-DQN's name
    with pytest.raises(readings.verdict.ReportError, match="its method is dqn, not beta_dqn"):
        readings.score("Asterix", "beta", "nocount", 3, "3e-5", commit)


def test_a_rule_that_cannot_be_computed_leaves_stage_2b_empty_and_the_others_running(runner, monkeypatch):
    import types

    def fails():
        raise FileNotFoundError("results/minatar-departure/1b/x/runs.csv")

    monkeypatch.setitem(sys.modules, "verdict", types.SimpleNamespace(stage_2b_runs=lambda homes: fails()))
    said = runner.stage_1b_rule.__wrapped__()  # (uncached)
    assert said == "FileNotFoundError: results/minatar-departure/1b/x/runs.csv"
    monkeypatch.setattr(runner, "stage_1b_rule", lambda: said)
    monkeypatch.setattr(runner.rates, "chosen", lambda game, method, roots, check=None: None)
    assert runner.cells("2b") == [] and said in runner.waiting("2b")
    assert runner.every_cell() == runner.cells("1") + runner.cells("1b-beta") + runner.cells("2a")


def test_stage_2b_waits_for_stage_2as_choices_and_the_rule_reads_the_clones_records_too(runner, verdict, tmp_path,
                                                                                       monkeypatch):
    import shutil

    monkeypatch.setattr(runner, "stage_1b_rule", lambda: True)
    monkeypatch.setattr(runner.rates, "chosen", lambda game, method, roots, check=None: None)
    assert runner.cells("2b") == [] and "waits for stage 2a's choices" in runner.waiting("2b")
    # a record the clone holds and main does not counts; one both hold counts once
    record = ROOT / "results/minatar-departure/1b/asterix-beta-s0"
    main, clone = tmp_path / "main", tmp_path / "clone"
    shutil.copytree(record, clone / "1b" / record.name)
    assert list(verdict.collect((main, clone))) == [("MinAtar/Asterix", "beta_dqn", 0)]
    shutil.copytree(record, main / "1b" / record.name)
    assert list(verdict.collect((main, clone))) == [("MinAtar/Asterix", "beta_dqn", 0)]
    assert verdict.checked((main, clone)) and verdict.stage_2b_runs((main, clone)) is None  # 17 missing


def test_stage_2a_report_refuses_a_run_off_the_plan_in_one_line(tmp_path, monkeypatch, capsys):
    import shutil

    search = _load("search")
    monkeypatch.setattr(search, "ROOTS", (tmp_path,))
    monkeypatch.setattr(search, "TEXT", tmp_path / "search.txt")
    record = "results/minatar-departure/2a/asterix-dqn-lr1e-4-s0"  # holding the run at 3e-4
    shutil.copytree(ROOT / record.replace("lr1e-4", "lr3e-4"), tmp_path / record)
    assert search.main(reps=10) == 2
    err = capsys.readouterr().err
    assert err == f"search.py: error: {record}: lr is 0.0003, not 0.0001\n" and not (tmp_path / "search.txt").exists()


def test_the_calibrations_bootstrap_is_rliables_and_its_exact_rate_is_the_simulated_one():
    """calibration.py: its numpy resampling gives rliable's lower bound of P(X > Y) on a dataset where resampling
    the two sides together would not (0.70, not 0.37); its grouping of datasets gives what every dataset one by one
    gives; its rule for numpy's percentile is numpy's; and the exact rate agrees with simulated datasets."""
    import itertools

    from beta_dqn.reporting import stats

    calibration = _load("calibration")
    y = np.array([[0.0] * 3, [1.0] * 3, [2.0] * 3])
    x = y + 0.1
    ours = calibration.lower_bounds(x, y, 20_000, np.random.default_rng(0))
    theirs = stats.improvement(x, y, reps=3_000, seed=0)[1]
    assert abs(ours - theirs) < 0.02 and abs(ours - 10 / 27) < 0.02
    u = calibration.u_distribution((2, 4, 5))  # X's ranks 2, 4, 5 of 0-5: U = 0 only when every draw is rank 2
    assert u[0] * 729 == pytest.approx(1) and u[:5].sum() * 729 == pytest.approx(13)
    # every dataset of 3 games, one by one, against the grouped computation
    dists = [calibration.u_distribution(split) for split in calibration.splits()]
    below = []
    for combo in itertools.product(dists, repeat=3):
        dist = np.convolve(np.convolve(combo[0], combo[1]), combo[2])
        below.append(dist[:14].sum())  # P below 0.5: at most 13 of the 27 pairs
    assert calibration.exact_rate(3, None) == pytest.approx(np.mean(np.array(below) < 0.025), abs=1e-12)
    assert calibration.exact_rate(5) == pytest.approx(0.0449903, abs=1e-7)  # PLAN.md's 0.0450
    assert calibration.exact_rate(3) == pytest.approx(0.0506297, abs=1e-7)  # PLAN.md's 0.0506
    # numpy's percentile over 50,000 resamples of a P on 45ths: 1,250 below 0.5 leaves it above, 1,251 do not
    for below_count, above in ((1_250, True), (1_251, False)):
        sample = np.array([22 / 45] * below_count + [23 / 45] * (50_000 - below_count))
        assert (np.percentile(sample, 2.5) > 0.5) == above
    assert math.floor(0.025 * 49_999) + (0.025 * 49_999 % 1 > 0.5) == 1_250
    rng = np.random.default_rng(7)
    n = 3_000
    fired = sum(calibration.lower_bounds(rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), 4_000, rng) > 0.5
                for _ in range(n))
    assert abs(fired / n - calibration.exact_rate(3, 4_000)) < 4 * np.sqrt(0.05 * 0.95 / n)


def test_stage_2b_report_checks_the_records_behind_each_choice(monkeypatch, capsys, tmp_path):
    """A stage-2a record off the plan (here DQN's run under β-DQN's name) would move a chosen rate: readings.py stops
    on it in one line, as search.py does."""
    import shutil

    readings = _load("readings")
    monkeypatch.setattr(readings, "ROOT", tmp_path)
    monkeypatch.setattr(readings.verdict, "stage_2b_runs", lambda homes=None: True)
    record = "results/minatar-departure/2a/asterix-beta-lr3e-4-s0"
    shutil.copytree(ROOT / record.replace("-beta-", "-dqn-"), tmp_path / record)
    assert readings.main(reps=200) == 2
    assert capsys.readouterr().err == f"readings.py: error: {record}: its method is dqn, not beta_dqn\n"
    assert readings.main(["--reps", "5"]) == 2 and "--reps 5: give 100 to" in capsys.readouterr().err


def test_the_reports_check_names_a_record_it_cannot_place_and_the_runner_survives_one_it_cannot_read(runner, verdict,
                                                                                                   tmp_path,
                                                                                                   monkeypatch):
    check = verdict.checker("0" * 40)
    for name in ("results/minatar-departure/2a/pong-dqn-lr1e-4-s0", "results/minatar-departure/2a/asterix-dqn-s0"):
        with pytest.raises(verdict.ReportError, match="not a record of stage 2a's runs|not where stage 2a's"):
            check(Path(name), tmp_path)

    def unreadable(*args, **kwargs):
        raise ValueError("results/minatar-departure/2a/x: the last return_mean is no mean of 30 whole returns")

    monkeypatch.setattr(runner.rates, "chosen", unreadable)
    assert runner.choice("Asterix", "dqn") is None and runner.held_out("Asterix", "dqn") == []


def test_the_late_sections_run_table_is_the_records(tmp_path, monkeypatch):
    """docs/reproducing.md's table of stage 1b's 5M runs is what late.py computes from the records in the tree, row
    for row; and a row's figures are the ones its caption names (1M, the best at its earliest tie, 5M; the means over
    (1M, 2M] and (4M, 5M]; the bins ending at 1M, 2M and 5M), its ranges run from the bin ending at 1M (Q: 2M), a
    figure a record lacks is "—", and β-DQN's rows come first, by game and seed."""
    late = _load("late")
    docs = (ROOT / "docs" / "reproducing.md").read_text()
    head = late.RUNS_HEAD.splitlines()[0]
    assert head in docs, "docs/reproducing.md has no late table headed as late.py prints it"
    start = docs.index(head)
    assert docs[start:docs.index("\n\n", start)] == late.runs_table("1b"), (
        "docs/reproducing.md's late table is not stage 1b's records: paste the first table that "
        "`python results/minatar-departure/late.py` prints")

    def record(name: str, scores: dict[int, float], rows: list[dict]) -> Path:
        run = tmp_path / "1b" / name / "runs" / "r"
        run.mkdir(parents=True)
        (run.parents[1] / "runs.csv").write_text("")
        (run / "evals.csv").write_text("env_steps,return_mean,return_std\n"
                                       + "".join(f"{end},{v},0\n" for end, v in scores.items()))
        (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
        return run.parents[1]

    flat = {n * 100_000: 1.0 for n in range(1, 51)}
    dqn = record("seaquest-dqn-s2", flat | {1_000_000: 3.0, 1_500_000: 9.0, 4_200_000: 9.0, 5_000_000: 2.0},
                 [{"env_steps": 1_950_000, "q_mean": 4.0}, {"env_steps": 2_000_000, "q_mean": 5.0},
                  {"env_steps": 4_999_999, "q_mean": 7.3}])
    assert late.run_row(dqn) == ("| Seaquest, DQN, 2 | 3.00 / 9.00 (1.5M) / 2.00 | 1.80 / 1.90 | 14.66 | — → — | — "
                                 "| 4.5 → 7.3 |")
    assert late.range_row(dqn) == "| seaquest-dqn-s2 | — | — | — | — | — | — | 4.500–7.300 |"  # from the 2M bin

    def beta_line(steps: int, cor0: float, entropy: float, mask: float) -> dict:
        return {"env_steps": steps, "arm_proportions": [0.5, 0.5], "arm_bonus": [0.1, 0.3], "arms_cov": 0.01,
                "arms_cor": 0.99 - cor0, "arms_cor0": cor0, "beta_entropy": entropy, "mask_drops_argmax": mask,
                "q_mean": 2.0}

    beta = record("asterix-beta-s0", {n * 100_000: 1.0 for n in range(1, 41)},  # stopped at 4M: no 5M, no last mean
                  [beta_line(950_000, 0.9, 0.9, 0.5), beta_line(1_000_000, 0.4, 0.8, 0.1),
                   beta_line(3_000_000, 0.65, 0.6, 0.3), beta_line(4_000_000, 0.2, 0.5, 0.2)])
    assert late.run_row(beta) == ("| Asterix, β-DQN, 0 | 1.00 / 1.00 (0.1M) / — | 1.00 / — | 39.09 | 0.85 → — | — "
                                  "| — → — |")
    # the 950k line is in the 1M bin with the 1M line: their means; π_cor(0)'s tie at 1M and 3M goes to 1M
    assert late.range_row(beta) == ("| asterix-beta-s0 | 0.010–0.010 | 0.200–0.200 | 0.340–0.790 | 0.65 (1M) | "
                                    "0.500–0.850 | 0.200–0.300 | 2.000–2.000 |")
    monkeypatch.setattr(late, "HERE", tmp_path)
    record("breakout-dqn-s0", flat, [])
    record("breakout-beta-s1", flat, [])
    assert [r.name for r in late.records("1b")] == ["asterix-beta-s0", "breakout-beta-s1", "breakout-dqn-s0",
                                                     "seaquest-dqn-s2"]
