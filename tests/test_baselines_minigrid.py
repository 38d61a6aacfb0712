"""results/baselines-minigrid/: the runner's cells are PLAN.md's 78 runs, in its order, with the flags of Table 1's
serial DQN column and each method's own at their defaults; it runs at the commit PLAN.md names and nowhere else."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "results" / "baselines-minigrid"


@pytest.fixture(scope="module")
def runner():
    spec = importlib.util.spec_from_file_location("bm_run", STUDY / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look themselves up there)
    spec.loader.exec_module(module)
    return module


def test_the_cells_are_the_plans_runs_in_its_order(runner):
    cells = runner.cells("minigrid")
    assert len(cells) == 78 and len({c.name for c in cells}) == 78 and len({c.grid for c in cells}) == 78
    tasks = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy",
             "LavaCrossing-Hard")
    main = {(t, a, s) for t in tasks for a in ("boot", "ez", "rnd", "lesson") for s in range(3)}
    side = {(t, "rnd-centred", s) for t in ("DoorKey", "Unlock") for s in range(3)}
    assert {(c.env, c.arm, c.seed) for c in cells} == main | side
    assert [c.seed for c in cells] == sorted(c.seed for c in cells)  # a stop leaves whole seeds
    assert {c.steps for c in cells} == {500_000} and not any(c.resumable for c in cells)
    assert str(cells[0].record) == "results/baselines-minigrid/doorkey-boot-s0"
    assert runner.every_cell() == cells and runner.jobs("minigrid", None) == 2


def test_each_cell_resolves_to_the_dqn_columns_settings_and_its_methods_defaults(runner):
    from beta_dqn.configuration.cli import parse_config
    from beta_dqn.configuration.resolution import resolve

    algo = {"boot": "bootstrapped_dqn", "ez": "ez_greedy", "rnd": "rnd", "lesson": "lesson", "rnd-centred": "rnd"}
    for cell in runner.cells("minigrid"):
        cfg, _ = resolve(parse_config(cell.argv()))
        assert (cfg.algo, cfg.seeds, cfg.total_steps) == (algo[cell.arm], str(cell.seed), 500_000)
        assert (cfg.runtime, cfg.actors, cfg.envs_per_actor, cfg.wandb) == ("serial", 4, 4, "disabled")
        # the defaults' rate per task (PLAN.md: SimpleCrossing-Easy and LavaCrossing-Hard 1e-4, the others 3e-4)
        assert cfg.lr == (1e-4 if cell.env in ("SimpleCrossing-Easy", "LavaCrossing-Hard") else 3e-4)
        assert cfg.eps_decay_steps == 100_000 and cfg.eps_end == 0.01  # DQN's schedule, over 20% of the run
        if cell.arm.startswith("rnd"):
            assert cfg.value("rnd_bonus") == ("centred" if cell.arm == "rnd-centred" else "std")


def test_it_runs_only_at_the_commit_plan_md_names(runner, capsys, monkeypatch):
    commit = runner.STUDY_COMMIT
    assert f"**The study's commit is {commit[:7]}** ({commit})" in (STUDY / "PLAN.md").read_text()
    kind = subprocess.run(["git", "cat-file", "-t", commit], cwd=ROOT, capture_output=True, text=True)
    if kind.returncode == 0:  # (a shallow clone may lack it)
        assert kind.stdout.strip() == "commit"
    started = []
    monkeypatch.setattr(runner.grids, "work", lambda *a: started.append(a) or 0)
    monkeypatch.setattr(runner.grids.os, "nice", lambda n: 0)
    with pytest.raises(SystemExit) as e:
        runner.main(["--stage", "minigrid"])  # this checkout is main, not a clone at the study's commit
    err = capsys.readouterr().err
    assert e.value.code == 2 and "not the study's commit" in err and len(err.strip().splitlines()) == 1, err
    assert started == []
    assert runner.main(["--check", "doorkey-dqn-s0"]) == 2
    assert "is not a cell of the study" in capsys.readouterr().err


def test_a_clone_is_accepted_clean_at_its_commit_and_refused_otherwise(runner, tmp_path, monkeypatch):
    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("1\n")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD")
    monkeypatch.setattr(runner.grids, "ROOT", tmp_path)
    assert runner.grids.at_commit(head) == ""
    assert "not the study's commit" in runner.grids.at_commit("0" * 40)
    (tmp_path / "a.txt").write_text("2\n")
    assert "uncommitted changes" in runner.grids.at_commit(head)


def test_list_names_every_run_and_its_state(runner, capsys):
    assert runner.main(["--stage", "minigrid", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 79 and re.fullmatch(r"\d+ of 78 recorded; estimate left \d+ run-minutes", lines[-1])
    assert lines[0].startswith("doorkey-boot-s0 ") and " 60 min  --env DoorKey --algo bootstrapped_dqn" in lines[0]


def test_check_compares_a_cell_with_its_record_and_can_hold_the_kernels_to_avx2(runner, tmp_path, monkeypatch,
                                                                                capsys):
    """--check runs the cell again (the launch faked here: it writes the run's files) and compares evals.csv's
    digest with the record's; --kernels avx2 gives the run the environment that holds torch, numpy and OpenBLAS to
    AVX2 (a record made without AVX-512, checked on a host with it), and is refused without --check."""
    grids = runner.grids
    monkeypatch.setattr(grids, "ROOT", tmp_path)
    monkeypatch.setattr(grids, "HOME", tmp_path)
    cell = runner.cells("minigrid")[0]
    run = tmp_path / cell.record / "runs" / "r"
    run.mkdir(parents=True)
    (tmp_path / cell.record / "runs.csv").write_text("env,score\n")
    (run / "evals.csv").write_text("env_steps,return_mean\n500000,0.5\n")
    (run / "summary.json").write_text('{"commit": "c3a16448e61e", "cpu": "AMD EPYC", "cpu_kernels": '
                                      '{"torch": "AVX2", "numpy": "X86_V3", "openblas": "Haswell"}}')
    envs = []

    def launch(cmd, log, env=None):
        envs.append(env)
        out = tmp_path / cmd[cmd.index("--out") + 1] / "r"
        out.mkdir(parents=True)
        (out / "evals.csv").write_text("env_steps,return_mean\n500000,0.5\n" if len(envs) == 1 else "x\n")
        (out / "summary.json").write_text('{"commit": "c3a16448e61e", "cpu": "AMD EPYC"}')
        return 0

    monkeypatch.setattr(grids, "launch", launch)
    assert runner.main(["--check", cell.name, "--kernels", "avx2"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("identical") and "torch AVX2, numpy X86_V3, openblas Haswell" in out
    assert envs[0]["ATEN_CPU_CAPABILITY"] == "avx2" and envs[0]["OPENBLAS_CORETYPE"] == "Haswell"
    assert runner.main(["--check", cell.name]) == 1 and envs[1] is None  # the host's own kernels: no environment
    assert capsys.readouterr().out.strip().endswith("DIFFERENT (the hosts differ: float kernels may too)")
    with pytest.raises(SystemExit) as e:
        runner.main(["--stage", "minigrid", "--kernels", "avx2"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--kernels avx2 goes with --check CELL" in err and len(err.strip().splitlines()) == 1


def test_the_table_applies_the_plans_rule_to_each_pattern(tmp_path, monkeypatch, capsys):
    """table.py on records made up here: a pattern is called (agrees, departs) only under Holm's correction within
    the column's tasks; a column short of seeds on a task is shown, not tested; aggregates need every task."""
    spec = importlib.util.spec_from_file_location("bm_table", STUDY / "table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    monkeypatch.setattr(table, "ROOT", tmp_path)
    monkeypatch.setattr(table, "COSTS", {k: str(ROOT / v) for k, v in table.COSTS.items()})
    (tmp_path / table.HERE).mkdir(parents=True)

    def runs(column, task, values):
        for seed, v in enumerate(values):
            record = tmp_path / table.COLUMNS[column][0].format(task=task.lower(), seed=seed)
            (record / "runs" / "r").mkdir(parents=True)
            (record / "runs.csv").write_text(f"env,score,metric\n{task},{v},success_rate\n")
            resumed = column == "β-DQN" and task == "Unlock" and seed == 2
            (record / "runs" / "r" / "config.json").write_text(json.dumps({"resume": "r" if resumed else ""}))
            (record / "runs" / "r" / "summary.json").write_text('{"cpu": "Made-up CPU", "cpu_kernels": {"torch": '
                                                                '"AVX2"}}')

    for task in table.TASKS:
        runs("DQN", task, [0.2, 0.3, 0.25, 0.35, 0.3])
        runs("β-DQN", task, [0.9, 0.8, 0.85, 0.95, 0.9])
        runs("RND", task, [0.9, 0.95, 1.0])
        runs("Bootstrapped DQN", task, [0.9, 0.8, 0.85])
    runs("εz-greedy", "DoorKey", [0.0, 0.0, 0.0])
    runs("εz-greedy", "Unlock", [0.3, 0.2])  # two seeds: shown, not tested
    runs("εz-greedy", "SimpleCrossing-Easy", [0.15, 0.2, 0.1])  # Welch p 0.021 alone; × 6 under Holm: not shown
    assert table.main(reps=20) == 0
    text = (tmp_path / table.HERE / "table.md").read_text()
    assert "- εz-greedy below DQN on DoorKey: agrees" in text
    assert "- εz-greedy below DQN on Unlock: not tested (fewer than 3 seeds)" in text
    assert "- RND above DQN on DoorKey: agrees" in text and "- Bootstrapped DQN below DQN on DoorKey: departs" in text
    assert "| Unlock | εz-greedy | 2 | 0.25" in text
    # the family is the column's six tasks, though only two are tested yet: 0.021 → 0.103 (the second smallest × 5)
    assert "| SimpleCrossing-Easy | εz-greedy | 3 | 0.15" in text and "-0.13: 0.021 → 0.103 |" in text
    assert "| εz-greedy | — | — | — |" in text and "| RND | 0.95 [" in text  # εz-greedy lacks tasks: no aggregate
    assert "| RND | 161% | 201% | 153% | 0.59 |" in text  # its average over DoorKey's cost
    assert (tmp_path / table.HERE / "profile.png").is_file()
    assert "- DQN: Made-up CPU; torch AVX2 × 30" in text and "- LESSON: no runs yet" in text
    assert "| Unlock | β-DQN | 5 (seed 2 resumed) |" in text
    assert table.pattern("above", 0.3, 0.2) == "points the paper's way, not shown"
    assert table.pattern("below", 0.3, None) == "points the other way, not shown"
    # a record of another environment in a column's place: a one-line error, nothing written
    (tmp_path / table.HERE / "table.md").unlink()
    bad = tmp_path / table.COLUMNS["RND"][0].format(task="unlock", seed=1) / "runs.csv"
    bad.write_text("env,score,metric\nMinAtar/Breakout,12.5,return_mean\n")
    assert table.main(reps=20) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unlock-rnd-s1: its score is return_mean, not a success rate" in err
    assert not (tmp_path / table.HERE / "table.md").exists()


def test_the_avx2_environment_is_taken_by_every_library(runner):
    """--kernels avx2's environment, in a fresh process: torch dispatches to AVX2, numpy enables no AVX-512 target
    (it accepts the names it is given), OpenBLAS takes its Haswell core; a host without AVX2 cannot hold to it."""
    import torch

    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("this host's torch dispatches below AVX2")
    env = {**os.environ, **runner.grids.avx2_kernels()}
    out = subprocess.run([sys.executable, "-c", "import json; from beta_dqn.driver.host import cpu_kernels; "
                          "print(json.dumps(cpu_kernels()))"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    kernels = json.loads(out.stdout)
    assert kernels["torch"] == "AVX2" and "AVX512" not in kernels["numpy"] and "X86_V4" not in kernels["numpy"]
    assert kernels["openblas"] in (None, "Haswell")
