"""results/baselines-minigrid/: the runner's cells are PLAN.md's 78 runs, in its order, with the flags of Table 1's
serial DQN column and each method's own at their defaults; it runs at the commit PLAN.md names and nowhere else."""

import importlib.util
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
    for cell in runner.cells("minigrid")[:13]:  # seed 0 of DoorKey, Unlock and SimpleCrossing-Easy: every arm
        cfg, _ = resolve(parse_config(cell.argv()))
        assert (cfg.algo, cfg.seeds, cfg.total_steps) == (algo[cell.arm], str(cell.seed), 500_000)
        assert (cfg.runtime, cfg.actors, cfg.envs_per_actor, cfg.wandb) == ("serial", 4, 4, "disabled")
        assert cfg.lr == (1e-4 if cell.env == "SimpleCrossing-Easy" else 3e-4)  # the defaults' rate per task
        assert cfg.eps_decay_steps == 100_000 and cfg.eps_end == 0.01  # DQN's schedule, over 20% of the run
        if cell.arm.startswith("rnd"):
            assert cfg.value("rnd_bonus") == ("centred" if cell.arm == "rnd-centred" else "std")


def test_it_runs_only_at_the_commit_plan_md_names(runner, capsys):
    commit = runner.STUDY_COMMIT
    assert len(commit) == 40 and commit[:7] in (STUDY / "PLAN.md").read_text()
    kind = subprocess.run(["git", "cat-file", "-t", commit], cwd=ROOT, capture_output=True, text=True)
    if kind.returncode == 0:  # (a shallow clone may lack it)
        assert kind.stdout.strip() == "commit"
    with pytest.raises(SystemExit) as e:
        runner.main(["--stage", "minigrid"])  # this checkout is main, not a clone at the study's commit
    err = capsys.readouterr().err
    assert e.value.code == 2 and "not the study's commit" in err and len(err.strip().splitlines()) == 1, err
    assert runner.main(["--check", "doorkey-dqn-s0"]) == 2
    assert "is not a cell of the study" in capsys.readouterr().err
