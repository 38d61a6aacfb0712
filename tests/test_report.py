"""`python -m learner.report`: Table 1 from a hand-made set of runs (values computed by hand), the figures,
and the refusal to compare runs whose configurations differ in more than the seed."""

import csv
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.reporting import stats
from beta_dqn.reporting.records import load_all
from beta_dqn.reporting.report import ReportError, _names, write_report
from beta_dqn.reporting.report import main as report_main
from beta_dqn.reporting.results import copies_once, load_runs, train_window

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("env_steps", "return_mean", "return_std", "success_rate")
BASIC = [f"{p}_{k}" for p in ("argmin_beta", "argmax_q") for k in FIELDS[1:]]


def make_run(root: Path, env: str, algo: str, seed: int, final: float, rate: float, bandit=None, **config) -> Path:
    variant = f"_{config['variant']}" if config.get("variant") else ""
    out = root / f"{env.replace('/', '-')}_{algo}{variant}_s{seed}"
    out.mkdir(parents=True)
    cfg, spec = resolve(Config.of(env=env, algo=algo, seed=seed, total_steps=2000, eval_every=1000, out=str(out),
                               wandb="disabled", **config))
    (out / "config.json").write_text(json.dumps(cfg.flat()))
    success = env == "CliffWalk"
    score = {"return_mean": 0.0 if success else final, "success_rate": final if success else None}
    summary = {"env": env, "algo": algo, "seed": seed, "env_steps": 2000, "env_steps_per_s": rate,
               "final_eval": {"env_steps": 2000, "return_std": 0.0, **score}}
    if success:
        summary["state_visits"] = [seed + 1] * 48
    if bandit:
        summary["bandit"] = bandit
    (out / "summary.json").write_text(json.dumps(summary))
    fields = FIELDS + (tuple(BASIC) if algo == "beta_dqn" else ())
    with open(out / "evals.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for step, value in ((1000, final / 2), (2000, final)):
            row = {"env_steps": step, "return_mean": 0.0 if success else value, "return_std": 0.0,
                   "success_rate": value if success else "", **{k: 0.1 for k in BASIC}}
            w.writerow([row[k] for k in fields])
    # training episodes of the last evaluation interval (1000 < steps ≤ 2000): the line at 500 is outside, the
    # one at 1500 half inside (10 of its 20 episodes count), the last all inside: (10 × 0.6 + 10 × 1.0) / 20 = 0.8
    lines = [{"env_steps": s, "arms_cov": 0.2, "arms_cor": 0.5, "arms_cor0": 0.3, "train_episodes": n,
              "train_return_mean": 0.0 if success else part * final, **({"train_success_rate": part * final}
                                                                        if success else {})}
             for s, n, part in ((500, 10, 0.2), (1500, 20, 0.6), (2000, 10, 1.0))]
    (out / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return out


def fixture(root: Path) -> None:
    for env, dqn, beta, rate in (("CliffWalk", (1.0, 0.8), (1.0, 1.0), 1000.0),
                                 ("MinAtar/Breakout", (4.0, 6.0), (8.0, 10.0), 2000.0),
                                 ("MinAtar/SpaceInvaders", (10.0, 10.0), (20.0, 20.0), 2000.0)):
        for seed in (0, 1):
            make_run(root, env, "dqn", seed, dqn[seed], rate)
            make_run(root, env, "beta_dqn", seed, beta[seed], rate / 2)


def test_table_one_by_hand(tmp_path):
    fixture(tmp_path / "runs")
    report = write_report(tmp_path / "runs").read_text()
    # no grid made these runs: the block of commands holds the one that makes this report again
    assert report.startswith(f"# Report: runs\n\n```bash\npython -m learner.report {tmp_path / 'runs'}\n```\n")
    # two seeds: the bootstrap's 2.5th/97.5th percentiles are the smaller and the larger (each resample of
    # both seeds being the smaller one has probability 1/4, far above 2.5%)
    # and Student's t interval beside it, mean ± t(0.975, n − 1) · s/√n: for 4 and 6, 5 ± 12.706 · 1.414/1.414
    assert ("| CliffWalk | CliffWalk | 0.90 [0.80, 1.00] t[-0.37, 2.17] (n=2) | "
            "1.00 [1.00, 1.00] t[1.00, 1.00] (n=2) |") in report
    assert ("| MinAtar | MinAtar/Breakout | 5.00 [4.00, 6.00] t[-7.71, 17.71] (n=2) | "
            "9.00 [8.00, 10.00] t[-3.71, 21.71] (n=2) |") in report
    assert "| MinAtar | average | 7.50 | 14.50 |" in report  # (5 + 10) / 2, (9 + 20) / 2
    # β-DQN takes twice DQN's seconds per step everywhere; performance relative to DQN: 1.0/0.9, 9/5, 20/10
    assert "| Computational cost |  | 100% | 200% |" in report
    assert f"| Performance/cost |  | 1.00 | {((1.0 / 0.9 + 9 / 5 + 20 / 10) / 3) / 2:.2f} |" in report
    assert report.index("| DQN | β-DQN |") > 0
    out = tmp_path / "runs" / "report"
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12 and list(rows[0]) == ["env", "algo", "variant", "seed", "env_steps", "score", "metric",
                                                  "train_score", "wall_seconds", "env_steps_per_s", "commit", "cpu"]
    assert rows[0] == {"env": "CliffWalk", "algo": "beta_dqn", "variant": "", "seed": "0", "env_steps": "2000",
                       "score": "1", "metric": "success_rate", "train_score": "0.8", "wall_seconds": "",
                       "env_steps_per_s": "500.0", "commit": "", "cpu": ""}
    # rliable's aggregates, by hand: scores over DQN's mean (CliffWalk 0.9, Breakout 5, SpaceInvaders 10);
    # β-DQN's runs are 1/0.9 twice, 8/5, 10/5 and 2 twice: mean 1.64, median 1.8; P(β-DQN > DQN) is 3/4 on
    # CliffWalk (1 against 0.8, and a tie with 1.0, per run), 1 on both games: 0.92
    assert f"| all | 3 | β-DQN | {np.mean(sorted([1 / 0.9] * 2 + [1.6, 2, 2, 2])[1:5]):.2f} [" in report
    assert f"| {(2 / 0.9 + 1.6 + 2 + 4) / 6:.2f} [" in report and "| 1.80 [" in report
    assert "| all | 3 | DQN | 1.00 [" in report
    assert "| all | β-DQN | DQN | 3 | 0.92 [" in report and "![performance profile](profile.png)" in report
    # and per domain: CliffWalk's 3/4 alone, MinAtar's two games 1 each
    assert "| CliffWalk | β-DQN | DQN | 1 | 0.75 [" in report and "| MinAtar | β-DQN | DQN | 2 | 1.00 [" in report
    improvement = json.loads((tmp_path / "runs" / "report" / "report.json").read_text())["improvement"]
    assert sorted(improvement) == ["CliffWalk|β-DQN|DQN", "MinAtar|β-DQN|DQN", "all|β-DQN|DQN"]
    assert [round(improvement[k][0], 4) for k in sorted(improvement)] == [0.75, 1.0, round(2.75 / 3, 4)]
    breakout_dqn = [r for r in rows if r["env"] == "MinAtar/Breakout" and r["algo"] == "dqn"]
    assert [(r["seed"], r["score"], r["metric"], r["train_score"]) for r in breakout_dqn] == [
        ("0", "4", "return_mean", "3.2"), ("1", "6", "return_mean", "4.8")]  # 0.8 × final (make_run)
    for name in ("curves_CliffWalk.png", "curves_MinAtar-Breakout.png", "selection_CliffWalk.png",
                 "basic_CliffWalk.png", "visits_CliffWalk.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
        assert f"({name})" in report


def test_several_runs_dirs_make_one_report(tmp_path):
    """One grid per domain, one Table 1: the same rows as one directory holding both; a run under two of the
    directories (one inside the other) counts once; several directories need --out."""
    fixture(tmp_path / "all")
    for env in ("CliffWalk", "MinAtar-Breakout", "MinAtar-SpaceInvaders"):
        for run in (tmp_path / "all").glob(f"{env}_*"):
            (tmp_path / "grids" / env).mkdir(parents=True, exist_ok=True)
            run.rename(tmp_path / "grids" / env / run.name)
    (tmp_path / "grids" / "MinAtar-Breakout" / "grid.json").write_text(json.dumps({"args": {
        "env": "MinAtar/Breakout", "algo": "beta_dqn,dqn", "seeds": "0-1", "total_steps": 2000}}))
    dirs = [tmp_path / "grids" / name for name in ("CliffWalk", "MinAtar-Breakout", "MinAtar-SpaceInvaders")]
    report = write_report(dirs, tmp_path / "table1").read_text()
    fixture(tmp_path / "one")
    whole = write_report(tmp_path / "one").read_text()
    assert report.startswith("# Report: CliffWalk + MinAtar-Breakout + MinAtar-SpaceInvaders\n")
    command = next(line for line in report.splitlines() if line.startswith("python -m learner.main "))
    assert all(part in command for part in ("--env MinAtar/Breakout --algo beta_dqn,dqn", "--seeds 0-1",
                                            "--total-steps 2000"))
    assert f"python -m learner.report {' '.join(map(str, dirs))} --out {tmp_path / 'table1'}" in report
    table = [line for line in report.splitlines() if line.startswith("| ")]
    assert table == [line for line in whole.splitlines() if line.startswith("| ")] and len(table) > 8
    assert write_report([dirs[1], tmp_path / "grids"], tmp_path / "again").read_text().count(
        "| MinAtar | MinAtar/Breakout | 5.00 [4.00, 6.00] t[-7.71, 17.71] (n=2) |") == 1
    with open(tmp_path / "again" / "runs.csv") as f:
        assert len(list(csv.DictReader(f))) == 12
    with pytest.raises(ReportError, match="3 RUNS_DIRs need --out"):
        write_report(dirs)
    # the same directory twice is read once; an empty one (a mistyped domain) and a copied run are refused
    assert write_report([dirs[0], dirs[0]]).read_text().startswith("# Report: CliffWalk\n")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match=f"no run \\(a directory with config.json\\) under {tmp_path / 'empty'}, "
                                          "and it is not a report's directory \\(with runs.csv\\)$"):
        write_report([dirs[0], tmp_path / "empty"], tmp_path / "t")
    make_run(tmp_path / "other", "CliffWalk", "dqn", 0, 1.0, 1000.0, lr=1e-4)  # another run of that seed
    with pytest.raises(ReportError, match=r"CliffWalk: runs differ in lr "):
        write_report([dirs[0], tmp_path / "other"], tmp_path / "t")
    shutil.copytree(dirs[0] / "CliffWalk_dqn_s0", tmp_path / "copy" / "CliffWalk_dqn_s0")
    with pytest.raises(ReportError, match=f"DQN seed 0 appears twice \\({dirs[0] / 'CliffWalk_dqn_s0'}, "
                                          f"{tmp_path / 'copy' / 'CliffWalk_dqn_s0'}\\)"):
        write_report([dirs[0], tmp_path / "copy"], tmp_path / "t")
    proc = subprocess.run([sys.executable, "-m", "learner.report", *map(str, dirs[:2])], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == "python -m learner.report: error: 2 RUNS_DIRs need --out " \
                                                          "(where their one report goes)"


def test_intervals_come_from_rliable_seeded():
    assert stats.mean_ci([3.0]) == (3.0, 3.0, 3.0)
    mean, lo, hi = stats.mean_ci(list(range(10)))
    assert mean == 4.5 and 2.5 < lo < 4.5 < hi < 6.5
    assert stats.mean_ci(list(range(10))) == (mean, lo, hi)  # seeded
    mean, low, high = stats.curve_ci([[0, 1, 2], [2, 3, 4]])
    assert list(mean) == [1, 2, 3] and list(low) == [0, 1, 2] and list(high) == [2, 3, 4]
    # P(X > Y) by hand: in the first environment every run of X is above every run of Y (1), in the second they
    # tie (1/2): 0.75; an interval around it
    x, y = [[2.0, 1.0], [3.0, 1.0]], [[0.0, 1.0], [1.0, 1.0]]
    p, lo, hi = stats.improvement(x, y, reps=200)
    assert p == 0.75 and lo <= 0.75 <= hi
    assert stats.improvement(y, x, reps=200)[0] == 0.25
    # IQM of 8 values: the mean of the middle 4; median, mean
    values = stats.aggregates([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 100.0]], reps=200)
    assert values["IQM"][0] == 4.5 and values["median"][0] == 4.5 and values["mean"][0] == 16.0


def test_the_intervals_the_study_decides_on_are_the_ones_it_preregistered():
    """The bandit-returns study's verdict (results/bandit-returns/verdict.py) reads these functions: their
    intervals, to the last digit, as ace2226 computed them (before rliable was imported at first use; PLAN.md's
    deviation of 2026-11-28). A change in how they compute is a change of the study's computation."""
    x = np.array([[0.1, 0.5, 0.9, 0.3], [0.2, 0.6, 0.7, 0.4], [0.0, 0.8, 1.0, 0.35]])
    y = np.array([[0.15, 0.4, 0.8, 0.3], [0.1, 0.5, 0.9, 0.2], [0.05, 0.7, 0.85, 0.25]])
    assert stats.improvement(x, y, 200, 0) == (0.6944444444444444, 0.4861111111111111, 0.8888888888888888)
    assert stats.aggregates(x, 200, 0) == {"IQM": (0.4749999999999999, 0.4247916666666667, 0.5502083333333333),
                                           "mean": (0.4875, 0.42072916666666665, 0.5458333333333334),
                                           "median": (0.4916666666666667, 0.4247916666666667, 0.5668750000000001)}
    assert stats.mean_ci(x[:, 1], 200, 0) == (0.6333333333333334, 0.5, 0.8000000000000002)


def test_runs_that_differ_in_more_than_the_seed_are_refused(tmp_path):
    make_run(tmp_path, "CliffWalk", "dqn", 0, 1.0, 1000.0)
    make_run(tmp_path, "CliffWalk", "beta_dqn", 1, 1.0, 1000.0, lr=1e-4)
    with pytest.raises(ReportError, match=r"CliffWalk: runs differ in lr .*only the seed, the algorithm and a grid"):
        write_report(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "learner.report", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "runs differ in lr" in proc.stderr and "Traceback" not in proc.stderr


def test_a_methods_own_flags_may_differ_from_the_others_but_not_between_its_seeds(tmp_path):
    make_run(tmp_path / "ok", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    make_run(tmp_path / "ok", "CliffWalk", "beta_dqn", 0, 1.0, 500.0, policy_set="8")
    make_run(tmp_path / "ok", "CliffWalk", "beta_dqn", 1, 1.0, 500.0, policy_set="8")
    assert "(n=2)" in write_report(tmp_path / "ok").read_text()
    make_run(tmp_path / "bad", "CliffWalk", "beta_dqn", 0, 1.0, 500.0, policy_set="8")
    make_run(tmp_path / "bad", "CliffWalk", "beta_dqn", 1, 1.0, 500.0)
    with pytest.raises(ReportError, match="runs differ in policy_set"):
        write_report(tmp_path / "bad")


def test_runs_from_before_the_arm_exchange_flag_compare_with_runs_that_asked_per_episode(tmp_path):
    old = make_run(tmp_path / "mixed", "CliffWalk", "beta_dqn", 0, 1.0, 500.0, arm_exchange="episode")
    config = json.loads((old / "config.json").read_text())
    del config["arm_exchange"]  # a run made before the flag asked the bandit once per episode
    (old / "config.json").write_text(json.dumps(config))
    make_run(tmp_path / "mixed", "CliffWalk", "beta_dqn", 1, 1.0, 500.0, arm_exchange="episode")
    assert "(n=2)" in write_report(tmp_path / "mixed").read_text()
    study = json.loads((tmp_path / "mixed" / "report" / "study.json").read_text())
    assert all("--arm-exchange episode" in r["cmd"] for r in study["runs"])  # the old run computed again
    make_run(tmp_path / "mixed", "CliffWalk", "beta_dqn", 2, 1.0, 500.0, arm_exchange="chunk")
    with pytest.raises(ReportError, match=r"runs differ in arm_exchange .*'episode'.*'chunk'"):
        write_report(tmp_path / "mixed")
    # a grid over --runtime: each runtime's own exchange (auto) is part of that axis
    for runtime in ("serial", "ray"):
        for seed in (0, 1):
            make_run(tmp_path / "runtimes", "CliffWalk", "beta_dqn", seed, 1.0, 500.0, runtime=runtime,
                     variant=f"runtime={runtime}")
    assert write_report(tmp_path / "runtimes").read_text().count("(n=2)") >= 2


def test_runs_of_different_lengths_compare_when_their_epsilon_decays_over_the_same_share_of_the_run(tmp_path):
    """ε decays over 20% of each run: two lengths decay over two step counts by one rule, so a grid over
    --total-steps reports; a decay given in steps is a difference of its own."""
    for steps in (2000, 4000):
        for seed in (0, 1):
            out = make_run(tmp_path / "grid", "CliffWalk", "dqn", seed, 0.5, 1000.0, variant=f"total-steps={steps}")
            config = json.loads((out / "config.json").read_text())
            (out / "config.json").write_text(json.dumps({**config, "total_steps": steps,
                                                         "eps_decay_steps": steps // 5}))
    write_report(tmp_path / "grid", tmp_path / "report")
    report = (tmp_path / "report" / "report.md").read_text()
    assert "ε 1 → 0.01 over 400 env steps (20% of the run)" in report
    assert "ε 1 → 0.01 over 800 env steps (20% of the run)" in report
    out = make_run(tmp_path / "other", "CliffWalk", "dqn", 0, 0.5, 1000.0, variant="total-steps=4000")
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "total_steps": 4000, "eps_decay_steps": 400}))
    with pytest.raises(ReportError, match="runs differ in eps_decay_steps"):
        write_report([tmp_path / "grid", tmp_path / "other"], tmp_path / "mixed")
    # one column whose environments run different lengths (Table 1: MiniGrid 500k, MinAtar 1M): each schedule
    # names the run length it is for, and β-DQN (no ε) says so once
    for env, steps in (("CliffWalk", 2000), ("MinAtar/Breakout", 4000)):
        for algo in ("dqn", "beta_dqn"):
            out = make_run(tmp_path / "lengths", env, algo, 0, 0.5, 1000.0)
            config = json.loads((out / "config.json").read_text())
            (out / "config.json").write_text(json.dumps({**config, "total_steps": steps,
                                                         "eps_decay_steps": steps // 5}))
    report = write_report(tmp_path / "lengths", tmp_path / "lengths-report").read_text()
    assert ("- DQN: ε 1 → 0.01 over 400 env steps (20% of the run), then held (runs of 2,000 env steps); "
            "ε 1 → 0.01 over 800 env steps (20% of the run), then held (runs of 4,000 env steps).") in report
    assert "- β-DQN: no ε." in report


def test_each_environment_is_tested_against_dqn(tmp_path):
    """Per environment, a column's final scores against DQN's: Welch's p, Mann–Whitney's with the least it can
    reach, and whether it is called; identical constant scores are not tested."""
    for seed, (beta, dqn) in enumerate(((10.0, 2.0), (11.0, 3.0), (12.0, 2.5))):
        make_run(tmp_path / "g", "MinAtar/Breakout", "beta_dqn", seed, beta, 500.0)
        make_run(tmp_path / "g", "MinAtar/Breakout", "dqn", seed, dqn, 1000.0)
        make_run(tmp_path / "g", "CliffWalk", "beta_dqn", seed, 0.0, 500.0)
        make_run(tmp_path / "g", "CliffWalk", "dqn", seed, 0.0, 1000.0)
    write_report(tmp_path / "g", tmp_path / "r")
    tests = json.loads((tmp_path / "r" / "report.json").read_text())["tests"]
    breakout = tests["MinAtar/Breakout|β-DQN"]
    assert breakout["difference"] == pytest.approx(8.5) and breakout["welch_p"] < 0.01
    assert breakout["mann_whitney_p"] == pytest.approx(0.1) and breakout["mann_whitney_least_p"] == pytest.approx(0.1)
    assert tests["CliffWalk|β-DQN"]["welch_p"] is None
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| MinAtar/Breakout | β-DQN | 3, 3 | +8.50 |" in report
    assert "| CliffWalk | β-DQN | 3, 3 | +0.00 | — |" in report
    # seeds that all scored the same non-zero rate (4 of 30 episodes each) are a constant sample: Welch's test
    # rests on the other's variance, as for a sample of zeros, and scipy's "precision loss" warning is not shown
    # (it was, on every report of Table 1)
    rate = 4 / 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        constant = stats.difference([rate, rate], [0.6, rate])["welch_p"]
    assert constant == pytest.approx(stats.difference([0.0, 0.0], [0.6 - rate, 0.0])["welch_p"])
    # a spread of rounding only (0.1 + 0.2 beside 0.3) is no variance: no test, not p = 1e-32
    assert stats.difference([0.5] * 3, [0.1 + 0.2, 0.3, 0.3])["welch_p"] is None
    # otherwise the p is scipy's Welch test
    from scipy import stats as scipy_stats

    rng = np.random.default_rng(0)
    for n, m in ((3, 3), (5, 5), (2, 7)):
        x, y = rng.normal(0, 1, n), rng.normal(0.5, 2, m)
        assert stats.difference(x, y)["welch_p"] == pytest.approx(
            scipy_stats.ttest_ind(x, y, equal_var=False).pvalue, rel=1e-9)


def test_a_run_counted_twice_is_refused(tmp_path):
    make_run(tmp_path / "a", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    make_run(tmp_path / "b", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    with pytest.raises(ReportError, match="DQN seed 0 appears twice"):
        write_report(tmp_path)


def test_variants_are_columns_side_by_side_with_their_selection_and_commands(tmp_path):
    """A grid's axes: each variant is a column (CI, seeds solved, first evaluation ≥ 0.9, the window's shares);
    study.json gives each run the command that computes it again; a difference no axis names is refused."""
    plays = [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 90]  # π_cov(0.05) 10%, π_cor(1) 90%
    bandit = {"plays": plays, "mu": [0.5] + [0.0] * 11 + [1.0], "bonus": [0.9] + [0.0] * 11 + [0.3]}
    for seed, (minmax, raw) in enumerate(((0.0, 1.0), (1.0, 0.95))):
        make_run(tmp_path, "CliffWalk", "beta_dqn", seed, minmax, 500.0, bandit=bandit,
                 variant="bandit-returns=minmax", bandit_returns="minmax")
        make_run(tmp_path, "CliffWalk", "beta_dqn", seed, raw, 500.0, bandit=bandit,
                 variant="bandit-returns=raw", bandit_returns="raw")
        make_run(tmp_path, "CliffWalk", "dqn", seed, 1.0, 1000.0)
    report = write_report(tmp_path).read_text()
    assert "| DQN | β-DQN [bandit-returns=minmax] | β-DQN [bandit-returns=raw] |" in report
    assert ("| CliffWalk | CliffWalk | 1.00 [1.00, 1.00] t[1.00, 1.00] (n=2) | "
            "0.50 [0.00, 1.00] t[-5.85, 6.85] (n=2) | 0.97 [0.95, 1.00] t[0.66, 1.29] (n=2) |") in report
    # one seed of minmax solves at its last evaluation (2000), none at the first (1.0 / 2 < 0.9); raw: both
    assert "| β-DQN [bandit-returns=minmax] | 0.50 [0.00, 1.00] (n=2) | 1 of 2 | 2k (2k–2k), 1 of 2 seeds | " \
           "0.40 [0.00, 0.80] (n=2) | 0.10 / 0.90 / 0.00 |" in report  # training: 0.8 × final
    assert "| column | seed | final | first ≥ 0.9 | training success, last 1k | top arm: share, μ, b |" in report
    assert ("| β-DQN [bandit-returns=raw] | 0 | 1.00 | 2k | 0.80 | π_cor(1): 0.90, 1.00, 0.30 | "
            "π_cov(0.05): 0.10, 0.50, 0.90 |") in report
    assert "| β-DQN | bandit-returns=minmax | 0.50 [0.00, 1.00] (n=2) | 1 of 2 |" in report  # the axis' effect
    assert "| β-DQN | bandit-returns=raw | 0.97 [0.95, 1.00] (n=2) | 2 of 2 |" in report
    study = json.loads((tmp_path / "report" / "study.json").read_text())
    row = next(r for r in study["runs"] if r["variant"] == "bandit-returns=raw" and r["seed"] == 1)
    assert row["final_success"] == 0.95 and row["first_success_step"] == 2000 and row["algo"] == "beta_dqn"
    # (a Ray run's exchange with the bandit, settled when it was made, is part of what it computed; so is its
    # runtime, named whatever its value since grids default to serial)
    assert row["cmd"] == ("python -m learner.main --env CliffWalk --algo beta_dqn --seed 1 --total-steps 2000 "
                          "--runtime ray --arm-exchange chunk --device cpu --bandit-returns raw --eval-every 1000")
    make_run(tmp_path, "CliffWalk", "beta_dqn", 2, 1.0, 500.0, variant="bandit-returns=raw", bandit_returns="raw",
             count_mode="off")
    with pytest.raises(ReportError, match="runs differ in count_mode"):
        write_report(tmp_path)
    # columns of two grids may differ along an axis both name, not along one only one of them names
    other = tmp_path / "other"
    make_run(other, "CliffWalk", "beta_dqn", 0, 1.0, 500.0, variant="bandit-returns=raw", bandit_returns="raw",
             count_mode="off")
    make_run(other, "CliffWalk", "beta_dqn", 0, 1.0, 500.0, variant="count-mode=simple", count_mode="simple",
             bandit_returns="minmax")
    with pytest.raises(ReportError, match="runs differ in bandit_returns"):
        write_report(other)


def test_a_bandit_run_on_a_return_task_shows_its_training_return_not_a_success_step(tmp_path):
    """MinAtar scores a return: the per-run meta-controller table has no "first ≥ 0.9" column, and gives the
    training episodes' return over the last evaluation interval (0.8 × final in make_run)."""
    bandit = {"plays": [90] + [0] * 11 + [10], "mu": [0.1] + [0.0] * 11 + [0.4], "bonus": [0.5] + [0.0] * 12}
    for seed, final in ((0, 5.0), (1, 10.0)):
        make_run(tmp_path, "MinAtar/Asterix", "beta_dqn", seed, final, 500.0, bandit=bandit)
    report = write_report(tmp_path).read_text()
    assert "| column | seed | final | training return, last 1k | top arm: share, μ, b | best other by μ + b: " \
           "share, μ, b |" in report and "first ≥ 0.9" not in report
    assert "| β-DQN | 1 | 10.00 | 8.00 | π_cov(0.05): 0.90, 0.10, 0.50 | π_cor(1): 0.10, 0.40, 0.00 |" in report


def test_column_by_puts_two_grids_that_differ_in_a_flag_side_by_side(tmp_path):
    """A probe with --bandit-returns raw beside the grid it departs from: refused as it is (a difference no
    axis names), two β-DQN columns with --column-by; DQN, which does not read the flag, stays one column."""
    for seed, (minmax, raw) in enumerate(((2.0, 6.0), (4.0, 8.0))):
        make_run(tmp_path / "grid", "MinAtar/Asterix", "beta_dqn", seed, minmax, 500.0, bandit_returns="minmax")
        make_run(tmp_path / "grid", "MinAtar/Asterix", "dqn", seed, 3.0, 1000.0)
        make_run(tmp_path / "probe", "MinAtar/Asterix", "beta_dqn", seed, raw, 500.0, bandit_returns="raw")
    roots = [tmp_path / "grid", tmp_path / "probe"]
    for root, algo, extra in ((roots[0], "beta_dqn,dqn", {}), (roots[1], "beta_dqn", {"bandit_returns": "raw"})):
        (root / "grid.json").write_text(json.dumps({"args": {"env": "MinAtar/Asterix", "algo": algo, "seeds": "0-1",
                                                             "total_steps": 2000, **extra}}))
    with pytest.raises(ReportError, match="runs differ in bandit_returns"):
        write_report(roots, tmp_path / "r")
    report = write_report(roots, tmp_path / "r", column_flags="bandit-returns").read_text()
    assert "| Domain | Environment | DQN | β-DQN [bandit-returns=minmax] | β-DQN [bandit-returns=raw] |" in report
    assert "| MinAtar | MinAtar/Asterix | 3.00 [3.00, 3.00] t[3.00, 3.00] (n=2) | " \
           "3.00 [2.00, 4.00] t[-9.71, 15.71] (n=2) | 7.00 [6.00, 8.00] t[-5.71, 19.71] (n=2) |" in report
    assert f"python -m learner.report {roots[0]} {roots[1]} --out {tmp_path / 'r'} --column-by bandit-returns" \
        in report
    with open(tmp_path / "r" / "runs.csv") as f:
        assert sorted((r["algo"], r["variant"]) for r in csv.DictReader(f)) == [
            ("beta_dqn", "bandit-returns=minmax")] * 2 + [("beta_dqn", "bandit-returns=raw")] * 2 + [("dqn", "")] * 2
    # the flag spelled with "--", spaces, twice and with a blank entry: the same report
    again = write_report(roots, tmp_path / "r2", column_flags=" --bandit-returns, ,bandit-returns").read_text()
    assert again.split("\n", 6)[6] == report.split("\n", 6)[6]  # all but the command block (its --out differs)
    # a grid whose axes already name the flag (count-mode=off,bandit-returns=raw: a grid writes its variant's
    # parts in the flags' order), and a copy of its runs that names neither: one column, and the copies refused
    for seed in (0, 1):
        make_run(tmp_path / "axes", "MinAtar/Asterix", "beta_dqn", seed, 5.0, 500.0, count_mode="off",
                 bandit_returns="raw", variant="count-mode=off,bandit-returns=raw")
    make_run(tmp_path / "copy", "MinAtar/Asterix", "beta_dqn", 0, 5.0, 500.0, count_mode="off", bandit_returns="raw")
    axes = write_report([tmp_path / "axes"], tmp_path / "r3", column_flags="bandit-returns,count-mode").read_text()
    assert "| Domain | Environment | β-DQN [count-mode=off, bandit-returns=raw] |" in axes
    with pytest.raises(ReportError, match="β-DQN \\[count-mode=off, bandit-returns=raw\\] seed 0 appears twice"):
        write_report([tmp_path / "axes", tmp_path / "copy"], tmp_path / "r3", column_flags="bandit-returns,count-mode")
    # a run made before a field existed has the value such runs had (LEGACY, else the default)
    legacy = next((tmp_path / "grid").glob("*beta_dqn_s0")) / "config.json"
    config = json.loads(legacy.read_text())
    del config["bandit_returns"]
    legacy.write_text(json.dumps(config))
    assert write_report(roots, tmp_path / "r4", column_flags="bandit-returns").read_text().split("\n", 6)[6] == \
        report.split("\n", 6)[6]
    # still refused: a probe that differs in another flag too (a column of its own), whatever --column-by says
    make_run(tmp_path / "lr", "MinAtar/Asterix", "beta_dqn", 0, 1.0, 500.0, bandit_returns="raw", lr=1e-3)
    with pytest.raises(ReportError, match="runs differ in lr .*or a flag --column-by names"):
        write_report([roots[0], tmp_path / "lr"], tmp_path / "r", column_flags="bandit-returns")
    # flags that cannot split columns, or that no run's method reads, in one line each
    for bad in ("out", "env", "seed", "bandit-return"):
        with pytest.raises(ReportError, match=f"^--column-by '{bad}' is not a flag that can split columns \\(.*\\); "
                                              "allowed: .*bandit-returns"):
            write_report(roots, tmp_path / "r", column_flags=bad)
    with pytest.raises(ReportError, match="^--column-by rnd-scale: none of the runs' methods reads it "
                                          "\\(DQN, β-DQN\\)$"):
        write_report(roots, tmp_path / "r", column_flags="rnd-scale")
    proc = subprocess.run([sys.executable, "-m", "learner.report", str(roots[0]), "--column-by", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("python -m learner.report: error: --column-by 'nope' is "
                                                           "not a flag") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("damage", ["summary", "evals", "config", "metrics", "metrics_value", "metrics_bool",
                                    "metrics_nan", "summary_steps", "final_eval"])
def test_a_damaged_run_is_left_out_with_a_warning_naming_its_file(tmp_path, capsys, damage):
    fixture(tmp_path / "runs")
    run = tmp_path / "runs" / "MinAtar-Breakout_dqn_s1"
    name, text = {"summary": ("summary.json", '{"env": '), "evals": ("evals.csv", "env_steps,return_mean\nx,y\n"),
                  "config": ("config.json", "{}"), "metrics": ("metrics.jsonl", '{"env_steps": 1}\n{"env_st'),
                  "metrics_value": ("metrics.jsonl", '{"env_steps": 1, "train_episodes": "many"}\n'),
                  "metrics_bool": ("metrics.jsonl", '{"env_steps": true}\n'),
                  "metrics_nan": ("metrics.jsonl", '{"env_steps": 1, "train_return_mean": NaN}\n'),
                  "summary_steps": ("summary.json", '{"env_steps_per_s": 1.0, "env_steps": "2000", "final_eval": {}}'),
                  "final_eval": ("summary.json", '{"env_steps_per_s": 1.0, "final_eval": null}')}[damage]
    (run / name).write_text(text)
    report = write_report(tmp_path / "runs").read_text()
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and f"warning: {run / name}" in warning[0]
    assert warning[0].endswith("the report leaves this run out")
    assert "11 finished runs (1 unfinished or damaged left out)" in report
    assert "| MinAtar | MinAtar/Breakout | 4.00 (n=1) | 9.00 [8.00, 10.00] t[-3.71, 21.71] (n=2) |" in report


def test_training_score_reads_the_last_evaluation_interval_each_log_line_by_its_share_in_it(tmp_path):
    """What the behaviour did at the end: the training episodes of the last evaluation interval (eval_every,
    1000 steps here; the whole run if shorter), a log line that straddles its start counting with the share
    of its steps inside; a run that logged no training episode shows a dash."""
    for seed in (0, 1):
        make_run(tmp_path, "CliffWalk", "dqn", seed, 0.0, 1000.0)
        make_run(tmp_path, "CliffWalk", "beta_dqn", seed, 0.0, 500.0)
    # 900 is outside (1000, 2000]; the line at 1200 covers (900, 1200]: 2/3 inside, 20 × 2/3 of its episodes
    # count; the last line all 30: (40/3 × 0.5 + 30 × 1.0) / (40/3 + 30) = 11/13
    rows = [(900, 50, 0.0), (1200, 20, 0.5), (2000, 30, 1.0)]
    (tmp_path / "CliffWalk_beta_dqn_s0" / "metrics.jsonl").write_text("".join(
        json.dumps({"env_steps": s, "train_episodes": n, "train_return_mean": 0.0, "train_success_rate": v}) + "\n"
        for s, n, v in rows))
    for seed, algo in ((1, "beta_dqn"), (0, "dqn"), (1, "dqn")):  # runs from before the training columns
        (tmp_path / f"CliffWalk_{algo}_s{seed}" / "metrics.jsonl").write_text(json.dumps({"env_steps": 1000}) + "\n")
    report = write_report(tmp_path).read_text()
    assert "| training success, last 1k |" in report
    assert "| DQN | 0.00 [0.00, 0.00] (n=2) | 0 of 2 | never | — | — |" in report
    assert "| β-DQN | 0.00 [0.00, 0.00] (n=2) | 0 of 2 | never | 0.85 (n=1) | — |" in report
    with open(tmp_path / "report" / "runs.csv") as f:
        assert [r["train_score"] for r in csv.DictReader(f)] == [f"{11 / 13:.6g}", "", "", ""]
    run = load_runs(tmp_path)[0][0]
    assert train_window(run) == 1000
    run.config["eval_every"] = 5000  # longer than the run: the whole run
    assert train_window(run) == 2000


def _table(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("| ")]


def test_a_reports_directory_gives_its_runs_to_a_later_report(tmp_path):
    """A committed results directory (runs.csv and study.json) stands for its runs when their directories are
    gone: the same Table 1, runs.csv and commands as from the runs themselves, beside runs that are still
    there; curves only from those."""
    fixture(tmp_path / "all")
    for run in (tmp_path / "all").glob("MinAtar-SpaceInvaders_*"):
        (tmp_path / "new").mkdir(exist_ok=True)
        run.rename(tmp_path / "new" / run.name)
    (tmp_path / "all" / "grid.json").write_text(json.dumps({"args": {
        "env": "CliffWalk,MinAtar/Breakout", "algo": "beta_dqn,dqn", "seeds": "0-1", "total_steps": 2000}}))
    write_report(tmp_path / "all", tmp_path / "results" / "old")
    shutil.rmtree(tmp_path / "all")  # the runs' directories are gone; their report is what is left
    shutil.rmtree(tmp_path / "results" / "old" / "runs")  # as in a record made before reports kept copies
    fixture(tmp_path / "one")
    whole = write_report(tmp_path / "one").read_text()
    report = write_report([tmp_path / "results" / "old", tmp_path / "new"], tmp_path / "table1").read_text()
    # the same numbers; β-DQN's window at the end is in no record (the fixture's runs have none either)
    shown = "| in the record's report.md |"
    assert _table(report.replace(shown, "| — |")) == _table(whole) and shown in report
    assert "python -m learner.main --env CliffWalk,MinAtar/Breakout --algo beta_dqn,dqn --total-steps 2000" in report
    assert f"8 of the runs are a report's record (its runs.csv and study.json: {tmp_path / 'results' / 'old'})" \
        in report
    assert (tmp_path / "table1" / "curves_MinAtar-SpaceInvaders.png").is_file()
    assert not (tmp_path / "table1" / "curves_MinAtar-Breakout.png").exists()
    assert not (tmp_path / "table1" / "visits_CliffWalk.png").exists()  # visits are in the runs' directories
    # the training return as recorded: 0.8 of the final return (make_run), 3.2 and 4.8
    assert "| DQN | 5.00 [4.00, 6.00] (n=2) | 4.00 [3.20, 4.80] (n=2) | — |" in report
    assert (tmp_path / "table1" / "runs.csv").read_text() == (tmp_path / "one" / "report" / "runs.csv").read_text()
    study = json.loads((tmp_path / "table1" / "study.json").read_text())
    assert study["runs"] == json.loads((tmp_path / "one" / "report" / "study.json").read_text())["runs"]
    # a record read again is the same record
    write_report(tmp_path / "table1", tmp_path / "again")
    assert (tmp_path / "again" / "runs.csv").read_text() == (tmp_path / "table1" / "runs.csv").read_text()
    # a run both recorded and present counts twice: refused, naming both places
    with pytest.raises(ReportError,
                       match="CliffWalk: β-DQN seed 0 appears twice .*old/runs.csv, .*CliffWalk_beta_dqn_s0"):
        write_report([tmp_path / "results" / "old", tmp_path / "one"], tmp_path / "t")
    # the record's commands are compared as a run's configuration is
    make_run(tmp_path / "probe", "CliffWalk", "dqn", 5, 1.0, 1000.0, batch_size=64)
    with pytest.raises(ReportError, match=r"CliffWalk: runs differ in batch_size \(.*: 32, .*: 64\)"):
        write_report([tmp_path / "results" / "old", tmp_path / "probe"], tmp_path / "t")


def test_a_records_copies_give_back_its_runs_whole(tmp_path):
    """A report keeps a copy of each run's directory (runs/<run>/: config, summary, evaluations, the metrics it
    reads): when the runs are gone, a report of the record alone is the report of the runs, curves, window
    shares and meta-controller included, and no machine path is in the copies."""
    plays = [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 90]
    bandit = {"plays": plays, "mu": [0.5] + [0.0] * 11 + [1.0], "bonus": [0.9] + [0.0] * 11 + [0.3]}
    for seed in (0, 1):
        make_run(tmp_path / "runs", "CliffWalk", "beta_dqn", seed, 0.5 + seed / 2, 500.0, bandit=bandit)
        make_run(tmp_path / "runs", "MinAtar/Breakout", "dqn", seed, 4.0 + seed, 1000.0)
        make_run(tmp_path / "runs", "CliffWalk", "dqn", seed, 1.0, 1000.0)
    whole = write_report(tmp_path / "runs", tmp_path / "whole").read_text()
    copies = sorted(p.name for p in (tmp_path / "whole" / "runs").iterdir())
    assert copies == ["CliffWalk_beta_dqn_s0", "CliffWalk_beta_dqn_s1", "CliffWalk_dqn_s0", "CliffWalk_dqn_s1",
                      "MinAtar-Breakout_dqn_s0", "MinAtar-Breakout_dqn_s1"]
    for copy in (tmp_path / "whole" / "runs").iterdir():
        assert sorted(p.name for p in copy.iterdir()) == ["config.json", "evals.csv", "metrics.jsonl", "summary.json"]
        assert str(tmp_path) not in (copy / "config.json").read_text()
    shutil.move(tmp_path / "runs", tmp_path / "gone")
    again = write_report(tmp_path / "whole", tmp_path / "again").read_text()
    assert again.split("\n", 4)[4] == whole.split("\n", 4)[4]  # all but the command block
    for name in ("runs.csv", "curves_CliffWalk.png", "selection_CliffWalk.png", "visits_CliffWalk.png"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert "0.10 / 0.90 / 0.00" in again and "in the record's report.md" not in again
    # a copy that is not the run runs.csv lists is refused
    _edit(tmp_path / "whole" / "runs" / "CliffWalk_dqn_s1" / "summary.json", '"success_rate": 1.0',
          '"success_rate": 0.5')
    with pytest.raises(ReportError, match=r"copy .*CliffWalk_dqn_s1 is not the run runs.csv lists there"):
        write_report(tmp_path / "whole", tmp_path / "t")


def test_metrics_are_thinned_before_the_training_window_only():
    """A copy's metrics.jsonl: the lines before the last evaluation interval merged (episodes summed, their score
    weighted by episodes; the window's state at the last line), those inside it as they were."""
    from beta_dqn.reporting.records import thin_metrics

    rows = [{"env_steps": 100 * (i + 1), "train_episodes": 2, "train_return_mean": float(i), "arms_cov": i / 10,
             "replay_ratio": 0.25} for i in range(10)]
    thin = thin_metrics(rows, cut=600, limit=7)
    assert [r["env_steps"] for r in thin] == [200, 400, 600, 700, 800, 900, 1000]
    assert thin[0] == {"env_steps": 200, "train_episodes": 4, "train_return_mean": 0.5, "arms_cov": 0.1}
    assert thin[2]["train_return_mean"] == 4.5 and thin[3:] == [{k: v for k, v in r.items() if k != "replay_ratio"}
                                                               for r in rows[6:]]
    assert thin_metrics(rows, cut=600) == [{k: v for k, v in r.items() if k != "replay_ratio"} for r in rows]
    # the learner's diagnostics stay (the late-training study reads them); its losses do not
    learner = {"q_mean": 1.5, "beta_entropy": 0.7, "mask_drops_argmax": 0.25, "loss_q": 0.1}
    assert thin_metrics([{"env_steps": 100, **learner}], cut=0) == [{"env_steps": 100, "q_mean": 1.5,
                                                                     "beta_entropy": 0.7, "mask_drops_argmax": 0.25}]


def test_a_record_from_before_the_arm_exchange_flag_and_with_the_old_study_format_is_read(tmp_path):
    make_run(tmp_path / "runs", "CliffWalk", "beta_dqn", 0, 1.0, 500.0, arm_exchange="episode")
    make_run(tmp_path / "runs", "CliffWalk", "beta_dqn", 1, 0.5, 500.0, arm_exchange="episode")
    write_report(tmp_path / "runs", tmp_path / "old")
    shutil.rmtree(tmp_path / "old" / "runs")  # a record from before reports kept copies of their runs
    study = json.loads((tmp_path / "old" / "study.json").read_text())
    for run in study["runs"]:  # a run made before the flag: its command does not name it
        run["cmd"] = run["cmd"].replace(" --arm-exchange episode", "")
    (tmp_path / "old" / "study.json").write_text(json.dumps({"command": "python -m learner.main --env CliffWalk",
                                                             "runs": study["runs"]}))
    plays = [10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 90]  # π_cov(0.05) 10%, π_cor(1) 90%
    bandit = {"plays": plays, "mu": [0.5] + [0.0] * 11 + [1.0], "bonus": [0.9] + [0.0] * 11 + [0.3]}
    make_run(tmp_path / "new", "CliffWalk", "beta_dqn", 2, 1.0, 500.0, bandit=bandit, arm_exchange="episode")
    make_run(tmp_path / "new", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    report = write_report([tmp_path / "old", tmp_path / "new"], tmp_path / "t").read_text()
    assert "| CliffWalk | CliffWalk | 1.00 (n=1) | 0.83 [0.50, 1.00] t[0.12, 1.55] (n=3) |" in report
    # (its grid command, written when min-max and Ray were the defaults, as it ran: pinned_command)
    assert ("```bash\npython -m learner.main --env CliffWalk --bandit-returns minmax --runtime ray\n"
            "python -m learner.report") in report
    # the window's shares: of the one run whose directory is there, and said so
    # (the first evaluation at ≥ 0.9 and the training success of the recorded seeds as their record says)
    assert ("| β-DQN | 0.83 [0.50, 1.00] (n=3) | 2 of 3 | 2k (2k–2k), 2 of 3 seeds | 0.67 [0.40, 0.80] (n=3) | "
            "0.10 / 0.90 / 0.00 (n=1) |") in report
    # a record alone, one column: no curve, so the section gives its numbers
    alone = write_report(tmp_path / "old", tmp_path / "alone").read_text()
    assert "## CliffWalk\n\n| column |" in alone and "| β-DQN | 0.75 [0.50, 1.00] (n=2) | 1 of 2 |" in alone
    assert "![learning curves]" not in alone
    make_run(tmp_path / "chunk", "CliffWalk", "beta_dqn", 2, 1.0, 500.0, arm_exchange="chunk")
    with pytest.raises(ReportError, match=r"runs differ in arm_exchange .*'episode'.*'chunk'"):
        write_report([tmp_path / "old", tmp_path / "chunk"], tmp_path / "t")


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def _study(d: Path, change) -> None:
    study = json.loads((d / "study.json").read_text())
    change(study)
    (d / "study.json").write_text(json.dumps(study))


def test_a_record_gives_the_numbers_of_the_report_that_made_it_to_the_last_digit(tmp_path):
    for seed, (dqn, beta) in enumerate(((1 / 3, 2 / 3), (2 / 3, 0.7))):
        make_run(tmp_path / "runs", "CliffWalk", "dqn", seed, dqn, 1000 / 3)
        make_run(tmp_path / "runs", "CliffWalk", "beta_dqn", seed, beta, 1000 / 7)
        make_run(tmp_path / "runs", "MinAtar/Breakout", "dqn", seed, 10 / 3 + seed, 1000 / 3)
        make_run(tmp_path / "runs", "MinAtar/Breakout", "beta_dqn", seed, 10 / 7 + seed, 1000 / 9)
    write_report(tmp_path / "runs", tmp_path / "old")
    write_report(tmp_path / "old", tmp_path / "new")
    for name in ("runs.csv", "report.json"):
        assert (tmp_path / "new" / name).read_text() == (tmp_path / "old" / name).read_text()
    runs = json.loads((tmp_path / "new" / "study.json").read_text())["runs"]
    assert runs == json.loads((tmp_path / "old" / "study.json").read_text())["runs"]
    assert runs[0]["final_score"] == 1 / 3  # the exact score (runs.csv has 6 digits)


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "study.json").unlink(), "study.json is missing"),
    (lambda d: (d / "study.json").write_text(json.dumps({"commands": [], "runs": []})),
     "study.json lacks CliffWalk dqn seed 0, which the other lists"),
    (lambda d: _edit(d / "runs.csv", "CliffWalk,dqn,,1,", "CliffWalk,dqn,,0,"),
     "runs.csv lists CliffWalk dqn seed 0 twice"),
    (lambda d: _edit(d / "runs.csv", ",1,success_rate", ",x,success_rate"),
     "runs.csv or study.json has a value of CliffWalk dqn seed 0 that does not parse: CliffWalk,dqn,,0,2000,x"),
    (lambda d: _edit(d / "runs.csv", "1000.0,", "nan,"), "runs.csv or study.json has a score, speed or time of "),
    (lambda d: _edit(d / "runs.csv", ",1,success_rate", ",0.9,success_rate"),
     "study.json's final score of CliffWalk dqn seed 0 (1.0) is not runs.csv's (0.9)"),
    (lambda d: _edit(d / "runs.csv", ",success_rate,", ",return_mean,"),
     "runs.csv scores CliffWalk by 'return_mean', where the report's score is 'success_rate'"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(cmd=None)), "study.json gives CliffWalk dqn seed 0 no command"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(first_success_step="x")),
     "study.json's first_success_step of CliffWalk dqn seed 0 is not a step count: 'x'"),
    (lambda d: _study(d, lambda s: s.update(commands="python -m learner.main")),
     "study.json's commands are not a list of command lines"),
    (lambda d: _edit(d / "study.json", "--seed 1", "--seed 1 'x"), "study.json has a command that does not split"),
    (lambda d: _edit(d / "study.json", "--seed 1", "--seed 7"),
     "study.json's command for CliffWalk dqn seed 1 runs something else: python -m learner.main"),
    (lambda d: _edit(d / "study.json", "--seed 1", "--sed 1"), "study.json has a command that does not parse"),
    (lambda d: _edit(d / "study.json", "--seed 1", "--seed 1 --help"),
     "study.json has a command that does not parse (it asks for the help)"),
    (lambda d: _edit(d / "study.json", "--seed 1", "--seed 1 --lr 0.1,0.2"), "study.json has a command of a grid"),
    (lambda d: [_edit(d / n, "CliffWalk", "Pong") for n in ("runs.csv", "study.json")],
     "runs.csv names an environment this code does not know"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(variant=5)),
     "study.json has a run without env, algo, variant (text) and seed (a whole number)"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(seed=True)),
     "study.json has a run without env, algo, variant (text) and seed (a whole number)"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(seed=0.7)),
     "study.json has a run without env, algo, variant (text) and seed (a whole number)"),
    (lambda d: _study(d, lambda s: s["runs"][0].update(final_score="1.0")),
     "runs.csv or study.json has a value of CliffWalk dqn seed 0 that does not parse"),
    (lambda d: [_edit(d / n, "dqn", "dqn2", -1) for n in ("runs.csv", "study.json")],
     "runs.csv names a method this code does not have: 'dqn2'"),
    (lambda d: [_edit(d / "runs.csv", "CliffWalk,dqn,,0", "CliffWalk,dqn,loss=mse,0"),
                _edit(d / "study.json", '"variant": ""', '"variant": "loss=mse"')],
     "variant of CliffWalk dqn loss=mse seed 0 says loss=mse, its command does not"),
])
def test_a_damaged_record_stops_the_report_in_one_line(tmp_path, capsys, damage, message):
    for seed in (0, 1):
        make_run(tmp_path / "runs", "CliffWalk", "dqn", seed, 1.0, 1000.0)
    write_report(tmp_path / "runs", tmp_path / "old")
    damage(tmp_path / "old")
    assert report_main([str(tmp_path / "old"), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"python -m learner.report: error: {tmp_path / 'old'} is a report's directory "
                          f"whose {message}"), err


def test_a_record_is_never_written_over_nor_mixed_with_runs(tmp_path, capsys):
    for seed in (0, 1):
        make_run(tmp_path / "runs", "CliffWalk", "dqn", seed, 1.0, 1000.0)
    write_report(tmp_path / "runs", tmp_path / "old")
    before = {str(p): p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()}
    for out in ([], ["--out", str(tmp_path / "old")], ["--out", str(tmp_path / "old" / "again")]):
        assert report_main([str(tmp_path / "old"), *out]) == 2
        assert capsys.readouterr().err == (f"python -m learner.report: error: {tmp_path / 'old'} is a report's "
                                           "record, which this report would write into "
                                           f"({Path(out[1]) if out else tmp_path / 'old' / 'report'}); give --out "
                                           "another directory\n")
    assert {str(p): p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()} == before
    # a run put inside a record: which is meant is not guessed
    shutil.copytree(tmp_path / "runs" / "CliffWalk_dqn_s0", tmp_path / "old" / "probe" / "CliffWalk_dqn_s0")
    assert report_main([str(tmp_path / "old"), "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.startswith(f"python -m learner.report: error: {tmp_path / 'old'} holds both a "
                                              "report's record (runs.csv, study.json) and a run (")
    # a flag written --name=value, as argparse takes it, is read as the run's configuration
    shutil.rmtree(tmp_path / "old" / "probe")
    _edit(tmp_path / "old" / "study.json", "--total-steps 2000", "--total-steps=2000 --batch-size=64", -1)
    # the record's copy of that run says otherwise: refused, naming the field
    with pytest.raises(ReportError, match=r"copy .*CliffWalk_dqn_s0 ran with batch_size = 32, where study.json's "
                                          r"command says 64"):
        write_report(tmp_path / "old", tmp_path / "t")
    shutil.rmtree(tmp_path / "old" / "runs")  # without copies, the record's commands are its runs' configuration
    make_run(tmp_path / "probe", "CliffWalk", "dqn", 5, 1.0, 1000.0)
    with pytest.raises(ReportError, match=r"CliffWalk: runs differ in batch_size \(.*: 64, .*: 32\)"):
        write_report([tmp_path / "old", tmp_path / "probe"], tmp_path / "t")
    # the runs the record's report left out are still counted as left out
    report = json.loads((tmp_path / "old" / "report.json").read_text())
    (tmp_path / "old" / "report.json").write_text(json.dumps({**report, "unfinished": ["runs/CliffWalk_dqn_s2"]}))
    assert "(1 unfinished or damaged left out)" in write_report(tmp_path / "old", tmp_path / "t2").read_text()
    assert json.loads((tmp_path / "t2" / "report.json").read_text())["unfinished"] == ["runs/CliffWalk_dqn_s2"]
    make_run(tmp_path / "rest", "CliffWalk", "dqn", 2, 1.0, 1000.0, batch_size=64)  # it finished since
    assert "finished runs. " in write_report([tmp_path / "old", tmp_path / "rest"], tmp_path / "t3").read_text()
    assert json.loads((tmp_path / "t3" / "report.json").read_text())["unfinished"] == []


def test_a_record_of_a_grid_with_axes_reads_back_its_variants(tmp_path):
    """A grid's variant names the values asked (arm-exchange=auto; an lr equal to the env's; a value at its
    default): the commands leave those out or settle them, and the record still reads as the same runs."""
    for seed in (0, 1):
        for exchange in ("auto", "episode"):
            make_run(tmp_path / "runs", "CliffWalk", "beta_dqn", seed, 0.5 + seed / 3, 500.0, arm_exchange=exchange,
                     lr=3e-4, loss="huber", variant=f"arm-exchange={exchange},loss=huber,lr=0.0003")
    write_report(tmp_path / "runs", tmp_path / "old")
    cmds = [r["cmd"] for r in json.loads((tmp_path / "old" / "study.json").read_text())["runs"]]
    assert all("--lr" not in c and "--loss" not in c for c in cmds)
    assert sum("--arm-exchange chunk" in c for c in cmds) == 2  # auto, settled on Ray
    write_report(tmp_path / "old", tmp_path / "new")
    for name in ("runs.csv", "report.json"):
        assert (tmp_path / "new" / name).read_text() == (tmp_path / "old" / name).read_text()
    assert "| β-DQN [arm-exchange=auto, lr=0.0003, loss=huber] | 0.67 [0.50, 0.83] (n=2) | 0 of 2 |" in \
        (tmp_path / "new" / "report.md").read_text()


def test_a_records_unfinished_runs_count_once(tmp_path):
    for seed in (0, 1):
        make_run(tmp_path / "a", "CliffWalk", "dqn", seed, 1.0, 1000.0)
    unfinished = make_run(tmp_path / "a", "CliffWalk", "dqn", 2, 1.0, 1000.0)
    (unfinished / "summary.json").unlink()
    write_report(tmp_path / "a", tmp_path / "rec")
    assert json.loads((tmp_path / "rec" / "report.json").read_text())["unfinished"] == [str(unfinished)]

    def left(*roots):
        write_report(list(roots), tmp_path / "t")
        return json.loads((tmp_path / "t" / "report.json").read_text())["unfinished"]

    assert left(tmp_path / "rec") == [str(unfinished)]  # read back: the same record
    shutil.rmtree(tmp_path / "a" / "CliffWalk_dqn_s0")
    shutil.rmtree(tmp_path / "a" / "CliffWalk_dqn_s1")
    assert left(tmp_path / "rec", tmp_path / "a") == [str(unfinished)]  # the directory again: counted once
    make_run(tmp_path / "b", "CliffWalk", "dqn", 2, 1.0, 1000.0)
    assert left(tmp_path / "rec", tmp_path / "b") == []  # finished since


def test_a_report_is_not_written_at_or_above_its_runs(tmp_path, capsys):
    make_run(tmp_path / "g", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    for out in (tmp_path / "g", tmp_path):
        assert report_main([str(tmp_path / "g"), "--out", str(out)]) == 2
        assert capsys.readouterr().err == (f"python -m learner.report: error: --out {out} would put this report's "
                                           f"record (runs.csv) at or above the runs of {tmp_path / 'g'}, which then "
                                           "could not be reported again; give --out another directory (default: "
                                           f"{tmp_path / 'g' / 'report'})\n")
    assert not (tmp_path / "g" / "runs.csv").exists() and not (tmp_path / "runs.csv").exists()
    assert report_main([str(tmp_path / "g")]) == 0 and (tmp_path / "g" / "report" / "runs.csv").is_file()


def test_the_bandit_returns_studys_rule_as_preregistered():
    """results/bandit-returns/verdict.py's rule, as PLAN.md fixes it, and the records it reads."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("verdict", ROOT / "results" / "bandit-returns" / "verdict.py")
    verdict = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verdict)
    from fractions import Fraction as F

    assert verdict.decide(F(7, 10), F(51, 100), F(9, 10), 3)[0] == "raw"
    assert verdict.decide(F(3, 10), F(1, 10), F(49, 100), 3)[0] == "minmax"
    assert verdict.decide(F(7, 10), F(1, 2), F(9, 10), 3)[0] == "more-seeds"  # a bound at 0.5 decides nothing
    assert verdict.decide(F(3, 10), F(1, 10), F(1, 2), 3)[0] == "more-seeds"
    assert verdict.decide(F(51, 100), F(1, 5), F(4, 5), 5)[0] == "raw"
    assert verdict.decide(F(1, 2), F(1, 5), F(4, 5), 5)[0] == "minmax"
    # the bound is an exact fraction, so rounding cannot decide: a tie at 1/2 in every resample is 1/2 exactly
    # (rliable's floats once put a bound at 0.5000000000000001, which a float rule read as above 0.5)
    from beta_dqn.reporting import stats

    tie = np.full((3, 9), 1.0)
    p, low, high = stats.exact_improvement(tie, tie.copy(), reps=100)
    assert (p, low, high) == (F(1, 2), F(1, 2), F(1, 2)) and verdict.decide(p, low, high, 3)[0] == "more-seeds"
    runs = verdict.collect(verdict.records())  # the reused records read, each run once
    assert ("MinAtar/Asterix", "raw", 2) in runs and ("MinAtar/Seaquest", "minmax", 0) in runs
    assert ("MinAtar/Breakout", "dqn", 1) in runs and len({k for k in runs if k[1] == "minmax"}) >= 15
    assert verdict.off_plan(runs["MinAtar/Asterix", "raw", 2]) == "" and verdict.off_plan(runs["MinAtar/Seaquest",
                                                                                                "minmax", 1]) == ""
    # records' commands that leave --bandit-returns out ran min-max (LEGACY), whatever the default becomes; and a
    # β-DQN run's command names it from now on
    from beta_dqn.configuration.flags import run_command

    config = dict(runs["MinAtar/Asterix", "minmax", 0].config)
    assert "--bandit-returns minmax" in run_command(config) and "--bandit-returns" not in run_command(
        {**config, "algo": "dqn"})
    # and a grid's command, where one of its methods reads it: a grid on today's default says so too
    from beta_dqn.configuration.flags import grid_command

    args = {"env": "MinAtar/Asterix", "algo": ["beta_dqn", "dqn"], "bandit_returns": "raw", "arm_exchange": "auto",
            "eps_decay_steps": None, "eps_decay_fraction": 0.2}  # (ε's decay at today's default: named)
    assert grid_command(args) == ("python -m learner.main --env MinAtar/Asterix --algo beta_dqn,dqn "
                                  "--runtime ray --arm-exchange auto --eps-decay-fraction 0.2 --bandit-returns raw")
    assert grid_command({**args, "algo": "dqn"}) == ("python -m learner.main --env MinAtar/Asterix --algo dqn "
                                                     "--runtime ray --eps-decay-fraction 0.2")
    # a DQN run or grid saved before the switch holds bandit_returns "minmax" (not today's default): not named,
    # as DQN does not read it
    saved = next((ROOT / "results" / "table1-6ec5992" / "doorkey-dqn-s0" / "runs").glob("*/config.json"))
    dqn = json.loads(saved.read_text())
    assert dqn["bandit_returns"] == "minmax" and "--bandit-returns" not in run_command(dqn)
    assert grid_command({**args, "algo": "dqn", "bandit_returns": "minmax", "arm_exchange": "episode"}) == \
        "python -m learner.main --env MinAtar/Asterix --algo dqn --runtime ray --eps-decay-fraction 0.2"


def test_a_report_never_writes_its_copies_over_runs(tmp_path):
    """--out whose runs/ holds real runs (the default single-run --out is runs/<run>), or a link: refused before
    anything is written, the runs untouched."""
    make_run(tmp_path / "proj" / "runs", "CliffWalk", "dqn", 0, 1.0, 1000.0)
    real = tmp_path / "proj" / "runs" / "CliffWalk_dqn_s0"
    (real / ".written").write_text("config.json\n")
    before = {p.name: p.read_bytes() for p in real.iterdir()}
    make_run(tmp_path / "other", "CliffWalk", "dqn", 0, 0.5, 1000.0)
    with pytest.raises(ReportError, match=r"runs exists and is not an earlier report's copies"):
        write_report(tmp_path / "other", tmp_path / "proj")
    (tmp_path / "proj" / "runs.csv").write_text("planted\n")
    with pytest.raises(ReportError, match=r"CliffWalk_dqn_s0 is a link or a run's own directory"):
        write_report(tmp_path / "other", tmp_path / "proj")
    assert {p.name: p.read_bytes() for p in real.iterdir()} == before
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "runs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ReportError, match=r"runs is a link or not a directory"):
        write_report(tmp_path / "other", tmp_path / "linked")
    assert not any((tmp_path / "elsewhere").iterdir())


def test_seeds_keeps_the_runs_of_those_seeds_only(tmp_path):
    """Table 1's seeds 0-2 from runs that also hold seed 3: the other seeds' runs are out of every table, of
    runs.csv and of study.json, the report says how many it left out, and its command says --seeds."""
    for seed, (dqn, beta) in enumerate(((4.0, 8.0), (6.0, 10.0), (5.0, 9.0), (100.0, 100.0))):
        make_run(tmp_path / "runs", "MinAtar/Breakout", "dqn", seed, dqn, 2000.0)
        make_run(tmp_path / "runs", "MinAtar/Breakout", "beta_dqn", seed, beta, 1000.0)
    (make_run(tmp_path / "runs", "MinAtar/Breakout", "dqn", 4, 1.0, 2000.0) / "summary.json").unlink()  # unfinished
    out = tmp_path / "r"
    report = write_report([tmp_path / "runs"], out, seeds="0-2").read_text()
    assert ("| MinAtar | MinAtar/Breakout | 5.00 [4.00, 6.00] t[2.52, 7.48] (n=3) | "
            "9.00 [8.00, 10.00] t[6.52, 11.48] (n=3) |") in report
    assert "6 finished runs of seeds 0-2 (2 of other seeds left out). " in report
    assert f"python -m learner.report {tmp_path / 'runs'} --out {out} --seeds 0-2\n" in report
    with open(out / "runs.csv") as f:
        assert sorted(int(r["seed"]) for r in csv.DictReader(f)) == [0, 0, 1, 1, 2, 2]
    assert sorted(r["seed"] for r in json.loads((out / "study.json").read_text())["runs"]) == [0, 0, 1, 1, 2, 2]
    # every seed kept: the same tables as no --seeds, and no "left out"
    whole = write_report([tmp_path / "runs"], tmp_path / "all").read_text()
    again = write_report([tmp_path / "runs"], tmp_path / "all2", seeds="0-3").read_text()
    assert "8 finished runs of seeds 0-3. " in again  # (seed 4's unfinished run is not of them either)
    assert "8 finished runs of seeds 0-4 (1 unfinished or damaged left out). " in \
        write_report([tmp_path / "runs"], tmp_path / "all3", seeds="0-4").read_text()
    assert again.split("finished runs", 1)[1].split(". ", 1)[1] == whole.split("finished runs", 1)[1].split(". ", 1)[1]
    with pytest.raises(ReportError, match=f"^--seeds 7-9: none of the 8 finished runs under {tmp_path / 'runs'} "
                                          "has one of those seeds$"):
        write_report([tmp_path / "runs"], tmp_path / "r3", seeds="7-9")
    assert not (tmp_path / "r3").exists()
    proc = subprocess.run([sys.executable, "-m", "learner.report", str(tmp_path / "runs"), "--seeds", "2-0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr == ("python -m learner.report: error: --seeds: '2-0'; expected seeds "
                                                    "like 0-9, 0,3,7 or 0-2,5 (non-negative)\n")
    assert not (tmp_path / "runs" / "report").exists()


def test_cost_takes_the_measured_cost_per_method_instead_of_the_runs_own_speeds(tmp_path):
    """--cost FILE (what bench/cost.py wrote): the cost row is its measured cost per method, every column of a
    method the same, and performance/cost divides by it; the report names the file and where it was measured,
    report.json says so too, and its command says --cost. Anything but such a result, a method the report has
    and the file lacks, or no DQN to be relative to, stops it in one line naming the bad value."""
    fixture(tmp_path / "runs")  # the runs' own speeds: β-DQN takes twice DQN's seconds per step
    measured = {"cost_percent": {"dqn": 100.0, "beta_dqn": 150.0, "rnd": 204.4}, "env": "MinAtar/Breakout",
                "device": "cpu", "runtime": "serial", "actors": 1, "command": "python bench/cost.py ",
                "machine": {"cpu": "AMD EPYC", "gpu": None, "commit": "c300f13"}}
    (tmp_path / "cost.json").write_text(json.dumps(measured))
    out = tmp_path / "r"
    report = write_report([tmp_path / "runs"], out, cost=tmp_path / "cost.json").read_text()
    assert "| Computational cost |  | 100% | 150% |" in report
    perf = ((1.0 / 0.9 + 9 / 5 + 20 / 10) / 3) / 1.5
    assert f"| Performance/cost |  | 1.00 | {perf:.2f} |" in report
    assert ("Computational cost: what `bench/cost.py` measured per method, seconds per env step relative to DQN's "
            "(cost.json: MinAtar/Breakout, cpu, serial runtime, 1 actor, AMD EPYC, commit c300f13), the same for "
            "every column of a method. ") in report
    assert f" --cost {tmp_path / 'cost.json'}\n```" in report
    numbers = json.loads((out / "report.json").read_text())
    assert numbers["cost"] == {"DQN": 1.0, "β-DQN": 1.5}
    assert numbers["performance_per_cost"] == {"DQN": 1.0, "β-DQN": pytest.approx(perf)}
    assert numbers["cost_source"] == {"file": "cost.json", "env": "MinAtar/Breakout", "device": "cpu",
                                      "runtime": "serial", "actors": 1, "cpu": "AMD EPYC", "commit": "c300f13"}
    # the tables otherwise as without --cost, whose report.json says its cost is the runs' own
    plain = write_report([tmp_path / "runs"], tmp_path / "plain").read_text()
    assert plain.split("| Computational cost")[0].split("| Domain")[1] == \
        report.split("| Computational cost")[0].split("| Domain")[1]
    assert json.loads((tmp_path / "plain" / "report.json").read_text())["cost_source"] is None
    # a variant's columns share their method's cost
    for seed in (0, 1):
        make_run(tmp_path / "grid", "MinAtar/Breakout", "dqn", seed, 5.0, 2000.0)
        for value, score in (("minmax", 4.0), ("raw", 10.0)):
            make_run(tmp_path / "grid", "MinAtar/Breakout", "beta_dqn", seed, score, 500.0,
                     variant=f"bandit-returns={value}", bandit_returns=value)
    varied = write_report([tmp_path / "grid"], tmp_path / "v", cost=tmp_path / "cost.json").read_text()
    assert "| Computational cost |  | 100% | 150% | 150% |" in varied
    assert f"| Performance/cost |  | 1.00 | {0.8 / 1.5:.2f} | {2.0 / 1.5:.2f} |" in varied

    def with_cost(**percent):
        return json.dumps({**measured, "cost_percent": percent})
    bad = {"none.json": (None, "no such file"),
           "text.json": ("not json", "not JSON (JSONDecodeError)"),
           "list.json": ("[1, 2]", "not a bench/cost.py result (its command and cost_percent)"),
           "other.json": (json.dumps({"cost_percent": {"dqn": 100}}), "not a bench/cost.py result"),
           "nodqn.json": (with_cost(beta_dqn=150.0), "its cost_percent has no dqn, which every cost is relative to"),
           "zero.json": (with_cost(dqn=0, beta_dqn=150.0), "cost_percent['dqn'] is 0, where a positive finite"),
           "negative.json": (with_cost(dqn=-100, beta_dqn=-215), "cost_percent['dqn'] is -100, where a positive"),
           "true.json": (with_cost(dqn=100, beta_dqn=True), "cost_percent['beta_dqn'] is True, where a positive"),
           "string.json": (with_cost(dqn="100", beta_dqn=150), "cost_percent['dqn'] is '100', where a positive"),
           "huge.json": ('{"command": "bench/cost.py", "cost_percent": {"dqn": 1' + "0" * 400 + "}}",
                         "cost_percent['dqn'] is 1000"),
           "inf.json": ('{"command": "bench/cost.py", "cost_percent": {"dqn": Infinity}}',
                        "cost_percent['dqn'] is inf, where a positive finite number belongs"),
           "deep.json": ("[" * 100000, "not JSON (RecursionError)"),
           "adir.json": (None, "is not a regular file (a directory)"),
           "nobeta.json": (with_cost(dqn=100.0, rnd=204.4), "has no cost for beta_dqn (it has dqn, rnd)")}
    for name, (text, _) in bad.items():
        if text is not None:
            (tmp_path / name).write_text(text)
    (tmp_path / "adir.json").mkdir()
    for name, (_, message) in [*bad.items(), ("", (None, "--cost '': give the JSON bench/cost.py wrote"))]:
        proc = subprocess.run([sys.executable, "-m", "learner.report", str(tmp_path / "runs"), "--out",
                               str(tmp_path / f"out-{name}"), "--cost", str(tmp_path / name) if name else ""],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.startswith("python -m learner.report: error: --cost ") and \
            message in proc.stderr, (name, proc.stderr)
        assert proc.stderr.count("\n") == 1 and not (tmp_path / f"out-{name}").exists()
    for seed in (0, 1):
        make_run(tmp_path / "beta", "MinAtar/Breakout", "beta_dqn", seed, 1.0, 500.0)
    with pytest.raises(ReportError, match=r"these runs have no DQN column, which the cost row is relative to "
                                          r"\(leave out --cost\)$"):
        write_report([tmp_path / "beta"], tmp_path / "b", cost=tmp_path / "cost.json")


def test_a_run_two_records_both_hold_counts_once_and_a_rerun_does_not(tmp_path):
    """A probe's record repeats the runs of the grid it departs from: given both records, each such run counts
    once (the same wall clock to the last digit, speed, commit, score and configuration); a run that differs
    from its namesake in any of these is another run, refused as before."""
    def timed(run: Path, wall: float) -> None:
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "wall_seconds": wall, "commit": "abc123"}))

    for seed, (minmax, raw) in enumerate(((2.0, 6.0), (4.0, 8.0))):
        timed(make_run(tmp_path / "grid", "MinAtar/Asterix", "beta_dqn", seed, minmax, 500.0, bandit_returns="minmax"),
              1384.767432944005 + seed)
        timed(make_run(tmp_path / "grid", "MinAtar/Asterix", "dqn", seed, 3.0, 1000.0), 470.98448437000025 + seed)
        timed(make_run(tmp_path / "probe", "MinAtar/Asterix", "beta_dqn", seed, raw, 500.0, bandit_returns="raw"),
              972.0304990410004 + seed)
    grid = write_report([tmp_path / "grid"], tmp_path / "results" / "grid").parent
    probe = write_report([tmp_path / "grid", tmp_path / "probe"], tmp_path / "results" / "probe",
                         column_flags="bandit-returns").parent  # its record repeats the grid's four runs
    both = write_report([tmp_path / "grid", tmp_path / "probe"], tmp_path / "r0", column_flags="bandit-returns")
    report = write_report([grid, probe], tmp_path / "r", column_flags="bandit-returns").read_text()
    assert "6 finished runs (4 duplicates left out: a run that two sources hold counts once). " in report
    assert _table(report) == _table(both.read_text())
    assert (tmp_path / "r" / "runs.csv").read_text() == (tmp_path / "r0" / "runs.csv").read_text()
    # a run's directory beside a record of it that keeps no copy of the run (and, like a run made outside a git
    # checkout, no commit: null in summary.json, empty in runs.csv): once as well, as the directory (its curves)
    for run in (tmp_path / "grid").glob("*_s*"):
        summary = json.loads((run / "summary.json").read_text())
        (run / "summary.json").write_text(json.dumps({**summary, "commit": None}))
    bare = write_report([tmp_path / "grid"], tmp_path / "results" / "bare").parent
    shutil.rmtree(bare / "runs")
    for order in ([bare, tmp_path / "grid"], [tmp_path / "grid", bare]):
        shutil.rmtree(tmp_path / "r1", ignore_errors=True)
        text = write_report(order, tmp_path / "r1").read_text()
        assert "4 finished runs (4 duplicates left out: a run that two sources hold counts once). " in text
        assert "are a report's record" not in text and (tmp_path / "r1" / "curves_MinAtar-Asterix.png").is_file()
        assert len(list((tmp_path / "r1" / "runs").iterdir())) == 4  # the report's copies of the runs
    # beside a record that keeps copies of the runs (their metrics thinned), the runs' own directories count
    full = write_report([tmp_path / "grid"], tmp_path / "results" / "full").parent
    for order in ([full, tmp_path / "grid"], [tmp_path / "grid", full], [bare, full], [full, bare]):
        kept, copies = copies_once(load_all(*order)[0])
        mine = tmp_path / "grid" in order
        assert copies == 4 and [r.recorded is None if mine else "copy" in r.recorded for r in kept] == [True] * 4
    # with --seeds, the counts are of the seeds kept: 2 runs of seed 0 (each held twice), 2 of seed 1 left out
    assert "2 finished runs of seeds 0 (2 of other seeds left out; 2 duplicates left out: a run that two " \
        "sources hold counts once). " in write_report([bare, tmp_path / "grid"], tmp_path / "r5", seeds="0").read_text()
    # the probe's record has another wall clock for one DQN run (in its copy of the run): two runs, refused
    _edit(next((probe / "runs").glob("*_dqn_s1")) / "summary.json", "471.98448437000025", "471.9844843700003")
    with pytest.raises(ReportError, match="DQN seed 1 appears twice .*grid/runs/.*_dqn_s1, .*probe/runs/.*_dqn_s1"):
        write_report([grid, probe], tmp_path / "r2", column_flags="bandit-returns")


def test_a_report_of_many_sources_names_a_few_and_lists_the_records_its_runs_come_from(tmp_path):
    """Table 1 from dozens of records: the title names four sources and counts the rest (the command lists
    them all); the sentence on records names those whose runs count here, not one whose seeds --seeds left out."""
    for seed in range(6):
        make_run(tmp_path / f"g{seed}", "MinAtar/Breakout", "dqn", seed, 4.0 + seed, 2000.0)
        make_run(tmp_path / f"g{seed}", "MinAtar/Breakout", "beta_dqn", seed, 8.0 + seed, 1000.0)
    roots = [tmp_path / f"g{seed}" for seed in range(6)]
    report = write_report(roots, tmp_path / "r").read_text()
    assert report.startswith("# Report: g0 + g1 + g2 + g3 + 2 more\n")
    assert f"python -m learner.report {' '.join(map(str, roots))} --out {tmp_path / 'r'}\n" in report
    assert write_report(roots[:5], tmp_path / "r5").read_text().startswith("# Report: g0 + g1 + g2 + g3 + g4\n")
    # two roots of one name (a Ray record beside the serial one): each told apart by its parent, not the name twice
    make_run(tmp_path / "ray" / "g0", "MinAtar/Breakout", "dqn", 6, 5.0, 2000.0)
    twice = write_report([roots[0], tmp_path / "ray" / "g0", roots[1]], tmp_path / "r2").read_text()
    assert twice.startswith(f"# Report: {tmp_path.name}/g0 + ray/g0 + g1\n")
    # records of seeds 0-2 and of seed 3, as rows (their copies gone); Table 1 of seeds 0-2 counts the first only
    write_report(roots[:3], tmp_path / "rec" / "old")
    write_report(roots[3:4], tmp_path / "rec" / "three")
    for rec in ("old", "three"):
        shutil.rmtree(tmp_path / "rec" / rec / "runs")
    table1 = write_report([tmp_path / "rec" / "old", tmp_path / "rec" / "three"], tmp_path / "t1", seeds="0-2")
    assert (f"6 of the runs are a report's record (its runs.csv and study.json: {tmp_path / 'rec' / 'old'}): "
            in table1.read_text())
    # a runs directory that holds a record below it is not itself a record
    shutil.copytree(tmp_path / "rec" / "three", roots[0] / "rec3")
    inside = write_report([roots[0], roots[0] / "rec3"], tmp_path / "inside").read_text()
    assert f"2 of the runs are a report's record (its runs.csv and study.json: {roots[0] / 'rec3'}): " in inside


def test_a_title_tells_roots_of_one_name_apart_by_the_shortest_end_of_their_paths(tmp_path, monkeypatch):
    assert _names([Path("run"), Path("results/x/run")]) == ["run", "x/run"]  # no leading slash
    assert _names([Path("/r/a/x/run"), Path("/r/b/x/run"), Path("/r/c")]) == ["a/x/run", "b/x/run", "c"]
    (tmp_path / "grids" / "g").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "grids" / "g")
    assert _names([Path(".")]) == ["g"]  # `learner.report .`: the directory's own name, not an empty title
    assert _names([Path(".."), Path("/elsewhere/grids")]) == [f"{tmp_path.name}/grids", "elsewhere/grids"]


def test_commands_of_a_record_from_before_a_default_changed_read_as_they_ran(tmp_path):
    """A record written when min-max was the default leaves --bandit-returns (and --arm-exchange) out of its
    commands: a report built from it gives them at the values they ran with (LEGACY), not today's defaults; a
    grid beside its own record has its command once, and a grid.json from before the flag existed reads so too."""
    for seed in (0, 1):
        make_run(tmp_path / "grid", "MinAtar/Breakout", "beta_dqn", seed, 8.0 + seed, 1000.0, bandit_returns="minmax",
                 arm_exchange="episode")
        make_run(tmp_path / "grid", "MinAtar/Breakout", "dqn", seed, 4.0 + seed, 2000.0)
    for k, summary in enumerate(sorted((tmp_path / "grid").glob("*/summary.json"))):  # a wall clock: a copy is known
        summary.write_text(json.dumps({**json.loads(summary.read_text()), "wall_seconds": 100.0 + k}))
    (tmp_path / "grid" / "grid.json").write_text(json.dumps({"args": {  # a grid.json from before the flags
        "env": "MinAtar/Breakout", "algo": "beta_dqn,dqn", "seeds": "0-1", "total_steps": 2000}}))
    write_report(tmp_path / "grid", tmp_path / "old")
    study_file = tmp_path / "old" / "study.json"
    old = json.loads(study_file.read_text())
    grid = "python -m learner.main --env MinAtar/Breakout --algo beta_dqn,dqn --total-steps 2000 --seeds 0-1"
    # (and ε's decay as such runs had it: 1M env steps, whatever the run's length)
    assert old["commands"] == [grid + " --runtime ray --arm-exchange episode --eps-decay-steps 1000000 "
                                      "--bandit-returns minmax"]
    for row in old["runs"]:  # as such a record was written: the flags left out at their default then
        row["cmd"] = row["cmd"].replace(" --arm-exchange episode", "").replace(" --bandit-returns minmax", "")
    study_file.write_text(json.dumps({**old, "commands": [grid]}))
    shutil.rmtree(tmp_path / "old" / "runs")
    again = json.loads((write_report([tmp_path / "old"], tmp_path / "new").parent / "study.json").read_text())
    beta = [row["cmd"] for row in again["runs"] if row["algo"] == "beta_dqn"]
    assert len(beta) == 2 and all(c.endswith(" --arm-exchange episode --bandit-returns minmax") for c in beta)
    assert all("--bandit-returns" not in row["cmd"] for row in again["runs"] if row["algo"] == "dqn")
    pin = " --bandit-returns minmax --runtime ray --eps-decay-steps 1000000"  # (of a grid: these only, below)
    assert again["commands"] == [grid + pin]
    # one grid's command twice, in another order of its flags and once naming --arm-exchange: once; other
    # values of the same flags are another grid
    moved = grid.replace(" --total-steps 2000", "") + " --bandit-returns minmax --total-steps 2000"
    swapped = grid.replace("--seeds 0-1", "--seeds 1-0").replace("--total-steps 2000", "--total-steps 3000")
    study_file.write_text(json.dumps({**old, "commands": [grid, moved, old["commands"][0], swapped]}))
    shown = json.loads((write_report([tmp_path / "old"], tmp_path / "both").parent / "study.json").read_text())
    assert shown["commands"] == [grid + pin, swapped + pin]
    # a grid's recorded command gets --bandit-returns, Ray and ε's 1M decay only (one written while --arm-exchange's
    # default was auto left that out; one that names --eps-decay-fraction is from since); a resume is left as it is
    from beta_dqn.reporting.records import pinned_command

    assert pinned_command(grid, grid=True) == grid + pin
    assert pinned_command(grid + " --eps-decay-fraction 0.2", grid=True) == grid + " --eps-decay-fraction 0.2" + \
        " --bandit-returns minmax --runtime ray"
    assert pinned_command("python -m learner.main --resume runs/g") == "python -m learner.main --resume runs/g"
    alone = "python -m learner.main --env MinAtar/Breakout --algo=dqn --seed 0"
    assert pinned_command(alone) == alone + " --eps-decay-steps 1000000 --runtime ray"  # DQN's: ε and Ray as it ran
    assert pinned_command(alone + " --eps-decay-steps 100 --runtime serial") == \
        alone + " --eps-decay-steps 100 --runtime serial"
    # a record whose grid command does not parse is refused in one line
    study_file.write_text(json.dumps({**old, "commands": ["python -m learner.main --env 'Mi"]}))
    with pytest.raises(ReportError, match=r"study.json has a grid command that does not split into words \(No "
                                          "closing quotation\\): python -m learner.main --env 'Mi$"):
        write_report([tmp_path / "old"], tmp_path / "bad")


def test_only_keeps_the_runs_with_those_values_where_their_method_reads_the_flag(tmp_path):
    """Table 1 from records that hold both readings of --bandit-returns: --only bandit-returns=raw keeps the raw
    β-DQN runs and DQN's (which does not read the flag), says how many it left out, and its command says --only;
    a bad FLAG=VALUE, a flag twice, or values no run has stop it in one line naming them."""
    for seed, (minmax, raw) in enumerate(((2.0, 6.0), (4.0, 8.0))):
        make_run(tmp_path / "runs", "MinAtar/Asterix", "beta_dqn", seed, minmax, 500.0, bandit_returns="minmax",
                 variant="bandit-returns=minmax")
        make_run(tmp_path / "runs", "MinAtar/Asterix", "beta_dqn", seed, raw, 500.0, bandit_returns="raw",
                 variant="bandit-returns=raw")
        make_run(tmp_path / "runs", "MinAtar/Asterix", "dqn", seed, 3.0, 1000.0)
    out = tmp_path / "r"
    report = write_report([tmp_path / "runs"], out, only="bandit-returns=raw").read_text()
    assert ("| MinAtar | MinAtar/Asterix | 3.00 [3.00, 3.00] t[3.00, 3.00] (n=2) | "
            "7.00 [6.00, 8.00] t[-5.71, 19.71] (n=2) |") in report
    assert "4 finished runs (2 with other values of --only left out). " in report
    assert f"python -m learner.report {tmp_path / 'runs'} --out {out} --only bandit-returns=raw\n" in report
    with open(out / "runs.csv") as f:
        assert sorted((r["algo"], r["score"]) for r in csv.DictReader(f)) == [
            ("beta_dqn", "6"), ("beta_dqn", "8"), ("dqn", "3"), ("dqn", "3")]
    # "--" and spaces allowed; booleans in any case; numbers as numbers
    again = write_report([tmp_path / "runs"], tmp_path / "r2", only=" --bandit-returns=raw , ").read_text()
    assert again.split("\n", 6)[6] == report.split("\n", 6)[6]
    for good in ("beta-epsilon=FALSE", "lr=0.00003", "lr=3e-5"):  # (Asterix: 3e-5)
        assert "6 finished runs. " in write_report([tmp_path / "runs"], tmp_path / "r3", only=good,
                                                   column_flags="bandit-returns").read_text(), good
    for bad, said in (("bandit-returns", "give FLAG=VALUE"), ("bandit-returns=", "give FLAG=VALUE"),
                      ("out=x", "'out' is not a flag --only filters on; allowed: .*bandit-returns"),
                      ("seed=3", "'seed' is not a flag --only filters on \\(seeds: --seeds\\); allowed: "),
                      ("bandit-returns=raw,bandit-returns=minmax", "names bandit-returns twice"),
                      ("bandit-returns=rank", "no run that reads it has that value \\(they have minmax, raw\\)"),
                      ("count-mode=off", "no run that reads it has that value \\(they have augment\\)"),
                      ("rnd-scale=1", "none of the runs' methods reads it \\(DQN, β-DQN\\)")):
        with pytest.raises(ReportError, match=f"^--only .*{said}"):
            write_report([tmp_path / "runs"], tmp_path / "r4", only=bad)
    assert not (tmp_path / "r4").exists()
    proc = subprocess.run([sys.executable, "-m", "learner.report", str(tmp_path / "runs"), "--only", "seed=3"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith(
        "python -m learner.report: error: --only 'seed=3': 'seed' is not a flag --only filters on (seeds: --seeds); "
        "allowed: ")
    # the command the report writes runs again as it is, whatever spelling the flags were given in
    written = write_report([tmp_path / "runs"], tmp_path / "r7", only="--bandit-returns=raw, --beta-epsilon=FALSE")
    command = next(line for line in written.read_text().splitlines() if line.startswith("python -m learner.report "))
    assert command.endswith(" --only bandit-returns=raw,beta-epsilon=FALSE")
    shutil.rmtree(tmp_path / "r7")
    proc = subprocess.run([sys.executable, *command.split()[1:]], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "4 finished runs (2 with other values of --only left out). " in (tmp_path / "r7" / "report.md").read_text()
    # the ε decay's fraction as each run used it: runs that named 1M decay steps (or ran before fractions existed)
    # are not runs of 20% (Table 1 under the protocol from records that also hold the old schedule's DQN)
    for seed in (0, 1):
        make_run(tmp_path / "old", "MinAtar/Asterix", "dqn", seed, 1.0, 1000.0, eps_decay_steps=1_000_000)
        make_run(tmp_path / "new", "MinAtar/Asterix", "dqn", seed, 9.0, 1000.0)
    roots = [tmp_path / "old", tmp_path / "new"]
    with pytest.raises(ReportError, match="runs differ in eps_decay_steps"):
        write_report(roots, tmp_path / "r5")
    kept = write_report(roots, tmp_path / "r5", only="eps-decay-fraction=0.2").read_text()
    assert "| MinAtar | MinAtar/Asterix | 9.00 [9.00, 9.00] t[9.00, 9.00] (n=2) |" in kept
    assert "2 with other values" in kept
    with pytest.raises(ReportError, match=r"eps-decay-fraction=0.5: no run that reads it has that value \(they have "
                                          r"0.2, 500.0\)"):
        write_report(roots, tmp_path / "r6", only="eps-decay-fraction=0.5")
    # a run whose decay followed the fraction has it, whatever its length (200 of 1,001 steps is 20%)
    odd = make_run(tmp_path / "odd", "MinAtar/Asterix", "dqn", 0, 9.0, 1000.0) / "config.json"
    odd.write_text(json.dumps({**json.loads(odd.read_text()), "total_steps": 1001, "eps_decay_steps": 200}))
    assert "1 finished runs" in write_report([tmp_path / "odd"], tmp_path / "r8",
                                             only="eps-decay-fraction=0.2").read_text()
    # the flags' order does not matter: β-DQN reads the ε schedule only with --beta-epsilon true, and a flag is
    # checked against every run, not the ones an earlier flag left
    for seed in (0, 1):
        make_run(tmp_path / "eps", "MinAtar/Asterix", "beta_dqn", seed, 7.0, 500.0, beta_epsilon=True)
        make_run(tmp_path / "none", "MinAtar/Asterix", "beta_dqn", seed, 5.0, 500.0)
    both = [tmp_path / "eps", tmp_path / "none"]
    one = write_report(both, tmp_path / "r9", only="eps-decay-fraction=0.2,beta-epsilon=false").read_text()
    other = write_report(both, tmp_path / "r10", only="beta-epsilon=false,eps-decay-fraction=0.2").read_text()
    assert "| MinAtar | MinAtar/Asterix | 5.00 [5.00, 5.00] t[5.00, 5.00] (n=2) |" in one
    assert one.split("\n", 6)[6] == other.split("\n", 6)[6]


def test_figures_for_a_paper_pdf_svg_dpi_one_colour_scale_and_identical_curves_seen(tmp_path, monkeypatch, capsys):
    """`--format pdf|svg --dpi N`; two methods with identical curves both stay visible (another line style);
    the visitation heatmap's panels share one colour scale and one colour bar; report.md says the episodes
    the runs' evaluations played (10 here), and links a PDF it cannot show."""
    from beta_dqn.reporting import figures

    runs = tmp_path / "runs"
    for algo in ("dqn", "beta_dqn"):
        for seed in (0, 1):
            run = make_run(runs, "CliffWalk", algo, seed, 1.0, 1000.0, eval_episodes=10)
            if algo == "beta_dqn":  # 100 visits a cell, against DQN's 1 and 2
                summary = json.loads((run / "summary.json").read_text())
                (run / "summary.json").write_text(json.dumps({**summary, "state_visits": [100] * 48}))
    drawn = {}
    save = figures._save

    def keep(fig, path, look, tight=True):
        drawn[path.name] = [([tuple(line.get_ydata()) for line in ax.get_lines()],
                             [line.get_linestyle() for line in ax.get_lines()],
                             [image.get_clim() for image in ax.get_images()]) for ax in fig.axes]
        save(fig, path, look, tight)

    monkeypatch.setattr(figures, "_save", keep)
    assert report_main([str(runs), "--out", str(tmp_path / "pdf"), "--format", "pdf"]) == 0
    text = (tmp_path / "pdf" / "report.md").read_text()
    assert "Scores are the final evaluation's (10 episodes a run)" in text
    assert "[learning curves (PDF)](curves_CliffWalk.pdf)" in text and "[visits (PDF)](visits_CliffWalk.pdf)" in text
    for name in ("curves_CliffWalk.pdf", "visits_CliffWalk.pdf", "profile.pdf", "selection_CliffWalk.pdf"):
        assert (tmp_path / "pdf" / name).read_bytes()[:5] == b"%PDF-", name
    assert not list((tmp_path / "pdf").glob("*.png"))
    # identical curves, both drawn, in two line styles
    (curves,) = drawn["curves_CliffWalk.pdf"]
    assert curves[0][0] == curves[0][1] and curves[1][0] != curves[1][1]
    # one colour scale: both panels from 0 to log10(1 + 100), and one colour bar beside them
    panels = [clims for _, _, clims in drawn["visits_CliffWalk.pdf"] if clims]
    assert [clim for (clim,) in panels] == [(0.0, float(np.log10(101)))] * 2
    assert len(drawn["visits_CliffWalk.pdf"]) == 3  # two panels and the colour bar
    # the same runs, the same PDF (no creation date in it)
    assert report_main([str(runs), "--out", str(tmp_path / "pdf2"), "--format", "pdf"]) == 0
    assert (tmp_path / "pdf" / "visits_CliffWalk.pdf").read_bytes() == \
        (tmp_path / "pdf2" / "visits_CliffWalk.pdf").read_bytes()
    # SVG at 300 dpi: shown as images; the dashed second curve is in the file
    assert report_main([str(runs), "--out", str(tmp_path / "svg"), "--format", "svg", "--dpi", "300"]) == 0
    text = (tmp_path / "svg" / "report.md").read_text()
    assert "![learning curves](curves_CliffWalk.svg)" in text and "--format svg --dpi 300" in text
    assert "stroke-dasharray" in (tmp_path / "svg" / "curves_CliffWalk.svg").read_text()
    # the same runs, the same SVG, in another process too (no random salt in its ids, no date)
    again = subprocess.run([sys.executable, "-m", "learner.report", str(runs), "--out", str(tmp_path / "svg2"),
                            "--format", "svg", "--dpi", "300"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    for name in ("curves_CliffWalk.svg", "visits_CliffWalk.svg"):
        assert (tmp_path / "svg" / name).read_bytes() == (tmp_path / "svg2" / name).read_bytes(), name
    # a PNG at 300 dpi is three times as wide as at 100
    assert report_main([str(runs), "--out", str(tmp_path / "png300"), "--dpi", "300"]) == 0
    assert report_main([str(runs), "--out", str(tmp_path / "png100")]) == 0

    def width(path):
        return int.from_bytes(path.read_bytes()[16:20], "big")  # the PNG header's width

    assert width(tmp_path / "png300" / "profile.png") == 3 * width(tmp_path / "png100" / "profile.png")
    capsys.readouterr()
    for bad, said in ((["--format", "jpg"], "--format 'jpg': give one of png, pdf, svg"),
                      (["--dpi", "0"], "--dpi 0: give a whole number from 10 to 1200")):
        assert report_main([str(runs), "--out", str(tmp_path / "bad"), *bad]) == 2
        assert capsys.readouterr().err == f"python -m learner.report: error: {said}\n"
        assert not (tmp_path / "bad").exists()
