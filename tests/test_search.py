"""`python -m learner.search`: a grid's command line as a Ray Tune search, each trial one serial run; the best
per environment and method by mean final score over seeds."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beta_dqn.configuration.flags import ConfigError
from beta_dqn.launcher.search import best, main, table
from tests.terminal import python_module

ROOT = Path(__file__).resolve().parents[1]


def trial(score, seed, **flags):
    return {"flags": {"env": "CliffWalk", "algo": "dqn", "seed": seed, "batch_size": 64, **flags}}, score


def test_best_is_the_highest_mean_over_seeds_of_the_values_that_vary_and_counts_failures():
    rows = best([trial(1.0, 0, lr=1e-3), trial(3.0, 1, lr=1e-3), trial(2.5, 0, lr=3e-4), trial(1.0, 1, lr=3e-4),
                 trial(float("nan"), 2, lr=3e-4), trial(0.5, 0, lr=1e-3, algo="beta_dqn")])
    by_algo = {r["algo"]: r for r in rows}
    dqn = by_algo["dqn"]
    assert dqn["best"] == {"lr": 0.001} and dqn["score"] == 2.0 and dqn["seeds"] == 2  # batch_size never varied
    assert dqn["runner_up"] == 1.75 and dqn["candidates"] == 2 and dqn["failed"] == 1
    assert by_algo["beta_dqn"]["best"] == {} and by_algo["beta_dqn"]["candidates"] == 1
    assert "| CliffWalk | dqn | --lr 0.001 | 2.000 | 2 | 1.750 | 2 | 1 |" in table(rows)


def test_an_axis_value_at_its_default_is_a_configuration_of_its_own_and_names_are_canonical(tmp_path):
    from beta_dqn.launcher.search import _plan

    _, trials, _ = _plan(["--env", "CliffWalk", "--algo", "dqn", "--eps-end", "0.01,0.05", "--seeds", "0-1",
                          "--out", str(tmp_path / "s")])
    assert sorted((t["eps_end"], t["seed"]) for t in trials) == [(0.01, 0), (0.01, 1), (0.05, 0), (0.05, 1)]
    scores = {(0.01, 0): 1.0, (0.01, 1): 2.0, (0.05, 0): 0.0, (0.05, 1): 0.5}
    [row] = best([({"flags": t}, scores[t["eps_end"], t["seed"]]) for t in trials])
    assert row["best"] == {"eps_end": 0.01} and row["score"] == 1.5 and row["seeds"] == 2
    # a trial that leaves a flag at its default, beside one that names it: two configurations, not one
    rows = best([({"env": "MinAtar/Breakout", "algo": "dqn", "seed": 0}, 1.0),
                 ({"env": "MinAtar/Breakout-v0", "algo": "dqn", "seed": 0, "eps_end": 0.05}, 2.0)])
    assert len(rows) == 1 and rows[0]["best"] == {"eps_end": 0.05} and rows[0]["candidates"] == 2


def test_a_trial_s_flags_reach_the_run_as_their_own_types():
    from beta_dqn.launcher.search import _flags, _json_safe

    assert _flags({"env_kwargs": {"size": 8}})["env_kwargs"] == '{"size": 8}'
    with pytest.raises(Exception, match="a trial's value is one value"):
        _flags({"lr": [1e-3, 3e-4]})
    with pytest.raises(Exception, match="a trial runs one run"):
        _flags({"seeds": "0-2"})
    assert _json_safe([{"score": float("nan"), "seeds": 0}]) == [{"score": None, "seeds": 0}]


@pytest.mark.parametrize("argv, said", [
    (["--lr", "1e-3,3e-4", "--runtime", "ray"], "--runtime: ray: a trial is one serial run"),
    (["--seeds", "0-3", "--pack-seeds", "2"], "--pack-seeds: 2: a trial is one serial run"),
    (["--lr", "1e-3,3e-4", "--replay", "redis://:hunter2@127.0.0.1:1"], "not from the URL"),
    (["--env", "Nope", "--seeds", "0-1"], "--env: unknown env 'Nope'"),
    (["--env", "CliffWalk"], "nothing to search: give a flag as a list"),
    (["--env", "CliffWalk", "--lr", "1e-3,1e-3"], "appears twice"),
    (["--resume", "runs/x"], "a search starts anew"),
    (["--lr", "1e-3,3e-4", "--cpus", "-1"], "--cpus -1: give 0"),
    # the flags' own parser names this command, not learner.main
    (["--lr", "1e-3,3e-4", "--bogus", "3"], "python -m learner.search: error: unrecognized arguments: --bogus 3"),
    (["--lr", "1e-3,3e-4", "--gamma", "x"], "python -m learner.search: error: argument --gamma: invalid float"),
])
def test_a_search_mistake_is_one_line(argv, said, capsys, tmp_path):
    try:
        status = main([*argv, "--out", str(tmp_path / "s")])
    except SystemExit as e:  # the command line's own parser (a list's mistake)
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_a_used_directory_or_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "mine.txt").write_text("x")
    assert main(["--env", "CliffWalk", "--lr", "1e-3,3e-4", "--out", str(tmp_path / "s")]) == 2
    assert "is not empty: give a search a directory of its own" in capsys.readouterr().err
    assert main(["--env", "CliffWalk", "--lr", "1e-3,3e-4", "--out", str(tmp_path / "s" / "mine.txt")]) == 2
    assert "is not a directory: give a search a directory of its own" in capsys.readouterr().err


@pytest.mark.integration
def test_a_search_runs_every_trial_as_a_run_and_names_the_best(tmp_path):
    out = tmp_path / "search"
    done = subprocess.run([sys.executable, "-m", "learner.search", "--env", "CliffWalk", "--algo", "dqn",
                           "--lr", "1e-3,3e-4", "--seeds", "0", "--total-steps", "1200", "--learning-starts", "200",
                           "--eval-every", "600", "--eval-episodes", "2", "--actors", "1", "--envs-per-actor", "1",
                           "--cpus", "2", "--out", str(out)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = {json.loads((p.parent / "config.json").read_text())["lr"]: json.loads(p.read_text())
                 for p in out.glob("*/*/summary.json")}
    assert sorted(summaries) == [3e-4, 1e-3]
    # each trial's folder, and its run's, named by its values as a grid's run is
    names = {"CliffWalk_dqn_lr=0.001_s0", "CliffWalk_dqn_lr=0.0003_s0"}
    assert {p.name for p in out.iterdir() if p.is_dir()} == names
    assert all((out / name / name / "summary.json").is_file() for name in names)
    # the report reads the search's folder as it is: a column per configuration, each run by its name
    report = subprocess.run([sys.executable, "-m", "learner.report", str(out), "--out", str(tmp_path / "report")],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "report" / "report.md").read_text()
    assert "lr=0.001" in text and "lr=0.0003" in text
    scores = {lr: s["final_eval"]["success_rate"] for lr, s in summaries.items()}
    [row] = json.loads((out / "best.json").read_text())
    assert (row["env"], row["algo"], row["candidates"], row["failed"]) == ("CliffWalk", "dqn", 2, 0)
    assert row["score"] == max(scores.values()) and scores[row["best"]["lr"]] == row["score"]
    # (1,200 steps: both may score alike, a tie)
    assert "| CliffWalk | dqn | --lr" in done.stdout or "| CliffWalk | dqn | tie of 2: --lr" in done.stdout


def test_a_tie_is_said_as_one_never_broken_by_the_values_order():
    """Every configuration scoring the same (a search too short to learn: all 0.0) is a tie of all of them, not
    a best picked by the text of its values; the runner-up is the best score below the tie."""
    rows = best([trial(0.0, 0, lr=1e-4), trial(0.0, 0, lr=3e-4), trial(0.0, 0, lr=1e-3)])
    (row,) = rows
    assert len(row["tied"]) == 2 and row["runner_up"] is None and row["score"] == 0.0
    assert "| tie of 3: --lr 0.0001 / --lr 0.0003 / --lr 0.001 | 0.000 |" in table(rows)
    (row,) = best([trial(0.5, 0, lr=1e-4), trial(0.5, 0, lr=3e-4), trial(0.25, 0, lr=1e-3)])
    assert row["tied"] == [{"lr": 0.0003}] and row["runner_up"] == 0.25
    (row,) = best([trial(0.5, 0, lr=1e-4), trial(0.25, 0, lr=3e-4)])
    assert row["tied"] == [] and row["best"] == {"lr": 0.0001}
    # the same scores in another order are the same mean (0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1 in floats)
    (row,) = best([trial(0.1, 0, lr=1e-3), trial(0.2, 1, lr=1e-3), trial(0.3, 2, lr=1e-3),
                   trial(0.3, 0, lr=3e-4), trial(0.2, 1, lr=3e-4), trial(0.1, 2, lr=3e-4)])
    assert len(row["tied"]) == 1 and row["runner_up"] is None


def test_the_best_surviving_trial_is_named_by_its_values_when_the_others_failed():
    [row] = best([trial(float("nan"), 0, lr=1e-3), trial(0.5, 0, lr=3e-4)])
    assert row["best"] == {"lr": 3e-4} and row["score"] == 0.5 and row["candidates"] == 1 and row["failed"] == 1


def _search(out: Path, *flags: str) -> list[str]:
    # with Ctrl-C as in a terminal (a suite started in the background ignores SIGINT: tests/terminal.py)
    return python_module("learner.search", "--env", "CliffWalk", "--algo", "dqn", "--seeds", "0",
                         "--actors", "1", "--envs-per-actor", "1", "--cpus", "2", "--out", str(out), *flags)


@pytest.mark.integration
def test_a_failed_trial_is_one_line_and_the_surviving_one_is_named(tmp_path):
    out = tmp_path / "search"
    # a learning rate of 1e30 makes the loss NaN within a few updates: that trial's run stops, its trial fails
    done = subprocess.run(_search(out, "--lr", "1e30,1e-3", "--total-steps", "1200", "--learning-starts", "200",
                                  "--eval-every", "600", "--eval-episodes", "2"),
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("python -m learner.search: trial ") and "(--env CliffWalk --algo dqn --seed 0 --lr 1e+30)" \
        in line and line.endswith("the failing state is in checkpoint-nonfinite.pt")
    [row] = json.loads((out / "best.json").read_text())
    assert row["best"] == {"lr": 1e-3} and row["failed"] == 1 and row["candidates"] == 1
    assert "| CliffWalk | dqn | --lr 0.001 |" in done.stdout


@pytest.mark.integration
def test_ctrl_c_stops_a_search_with_130_and_writes_no_result(tmp_path):
    out = tmp_path / "search"
    search = subprocess.Popen(_search(out, "--lr", "1e-3,3e-4", "--total-steps", "1000000"),
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while len(list(out.glob("*/*/config.json"))) < 2:  # both trials' runs under way
            assert search.poll() is None and time.monotonic() < deadline, search.stderr.read()[-3000:]
            time.sleep(1)
        search.send_signal(signal.SIGINT)
        stdout, stderr = search.communicate(timeout=120)
    finally:
        search.kill()
    assert search.returncode == 130
    assert stderr.strip() == (f"python -m learner.search: interrupted: 0 of 2 trials finished, their runs in "
                              f"{out}; no best.json is written, and a search cannot continue: run it again with "
                              "another --out")
    assert not (out / "best.json").exists() and "| env |" not in stdout


def test_a_search_leaves_the_callers_environment_and_loggers_as_they_were(capsys, monkeypatch):
    import logging

    monkeypatch.delenv("TUNE_DISABLE_SIGINT_HANDLER", raising=False)
    monkeypatch.delenv("RAY_AIR_NEW_OUTPUT", raising=False)
    level = logging.getLogger("ray.tune").level
    # a mistake, once the search set them: a trial is a serial run
    assert main(["--env", "CliffWalk", "--seeds", "0-1", "--runtime", "ray"]) != 0
    assert "TUNE_DISABLE_SIGINT_HANDLER" not in os.environ and "RAY_AIR_NEW_OUTPUT" not in os.environ
    assert logging.getLogger("ray.tune").level == level
    capsys.readouterr()


def test_ctrl_c_while_planning_is_one_line_and_130(capsys, monkeypatch):
    import beta_dqn.launcher.search as search

    def interrupted(rest):
        raise KeyboardInterrupt

    monkeypatch.setattr(search, "_plan", interrupted)
    assert main(["--env", "CliffWalk", "--seeds", "0-1"]) == 130
    assert capsys.readouterr().err == "python -m learner.search: interrupted while no trial was running\n"


SCHEDULED = '''
import json, sys
import ray
from ray import tune
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from beta_dqn.launcher.search import best, trainable

class StopTheSlowLearner(FIFOScheduler):
    """Stops the trial of lr 1e-6 at its first report (an evaluation mid-run), lets the other run to its end."""
    def on_trial_result(self, tune_controller, trial, result):
        lr = trial.config["flags"]["lr"]
        seen.append((lr, result["final"], result["env_steps"]))
        return TrialScheduler.STOP if lr == 1e-6 else TrialScheduler.CONTINUE

seen = []
from beta_dqn.driver.cluster import start_local_cluster
start_local_cluster(ray, {})  # fresh, as a search's (Tune's own start joins what ray_current_cluster names)
common = {"env": "CliffWalk", "algo": "dqn", "seed": 0, "learning_starts": 200, "eval_every": 1000,
          "eval_episodes": 2, "actors": 1, "envs_per_actor": 1}
# the trial to be stopped is long (it cannot end before the STOP reaches it, however loaded the machine)
tuner = tune.Tuner(tune.with_resources(trainable, {"cpu": 1}), param_space={"flags": tune.grid_search([
    {**common, "lr": 1e-3, "total_steps": 3000}, {**common, "lr": 1e-6, "total_steps": 200_000}])},
    tune_config=tune.TuneConfig(scheduler=StopTheSlowLearner(), max_concurrent_trials=2),
    run_config=tune.RunConfig(storage_path=sys.argv[1], name="s", verbose=0))
print(json.dumps({"seen": seen, "best": best(tuner.fit())}))
'''


@pytest.mark.integration
def test_a_scheduler_stops_a_trial_on_its_runs_evaluations_and_its_run_with_it(tmp_path):
    """A trial reports each evaluation as its run writes it: a scheduler (here one that stops lr 1e-6 at its first
    report) stops it mid-run, its run's process ends with it, unfinished; `best` counts it as stopped, not scored."""
    import psutil

    script = tmp_path / "scheduled.py"
    script.write_text(SCHEDULED)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    # lr 1e-6: one report, an evaluation before the run's end; lr 1e-3: every evaluation, then its final score
    assert [s for s in said["seen"] if s[0] == 1e-6] == [[1e-6, False, 1000]]
    kept = [s for s in said["seen"] if s[0] == 1e-3]
    assert [s[2] for s in kept] == [1000, 2000, 3000] and [s[1] for s in kept] == [False, False, True]
    [row] = said["best"]  # (named by the values its trials differ in, the stopped one's too)
    assert (row["stopped"], row["failed"], row["candidates"]) == (1, 0, 1)
    assert row["best"] == {"lr": 1e-3, "total_steps": 3000}
    [stopped] = [p.parent for p in tmp_path.glob("s/*/*/config.json") if json.loads(p.read_text())["lr"] == 1e-6]
    assert not (stopped / "summary.json").exists() and len((stopped / "evals.csv").read_text().splitlines()) < 50
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(stopped) in " ".join(p.info["cmdline"] or [])]


def test_asha_is_configured_from_the_trials_and_refused_across_environments_methods_or_lengths(capsys, tmp_path):
    from beta_dqn.launcher.search import _scheduler

    trials = [{"env": "CliffWalk", "algo": "dqn", "lr": lr, "seed": 0, "total_steps": 10_000, "eval_every": 2_000}
              for lr in (1e-3, 3e-4)]
    asha = _scheduler("asha", 2, trials)
    # by env steps: a rung at the second evaluation (4,000), the worst two thirds stopped there, up to the end
    assert (asha._max_t, asha._reduction_factor, asha._metric, asha._mode, asha._time_attr) == (
        10_000, 3, "score", "max", "env_steps")
    assert [milestone for milestone, _ in asha._brackets[0]._rungs] == [4_000]
    assert _scheduler("fifo", 2, trials) is None
    with pytest.raises(ConfigError, match="differ in --total-steps or --eval-every"):
        _scheduler("asha", 2, [trials[0], {**trials[1], "eval_every": 1_000}])
    assert main(["--env", "CliffWalk", "--algo", "dqn,beta_dqn", "--seeds", "0-1", "--scheduler", "asha",
                 "--out", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err == (
        "python -m learner.search: error: --scheduler: asha: the trials span 2 (environment, method) pairs "
        "(CliffWalk beta_dqn, CliffWalk dqn); ASHA compares every trial with every other: search one --env and one "
        "--algo at a time\n")
    assert main(["--env", "CliffWalk", "--seeds", "0-1", "--scheduler", "asha", "--total-steps", "4000",
                 "--eval-every", "2000", "--out", str(tmp_path / "b")]) == 2
    assert "asha: a trial evaluates every 2,000 of its 4,000 env steps, none after --asha-grace 2" in \
        capsys.readouterr().err
    assert main(["--env", "CliffWalk", "--seeds", "0-1", "--scheduler", "asha", "--asha-grace", "0"]) == 2
    assert "--asha-grace 0: give 1 evaluation or more" in capsys.readouterr().err
    assert main(["--env", "CliffWalk", "--seeds", "0-1", "--asha-grace", "3"]) == 2
    assert "--asha-grace 3: it is ASHA's; give --scheduler asha with it" in capsys.readouterr().err
