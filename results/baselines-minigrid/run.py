"""The baselines study's runs (PLAN.md beside this file): Bootstrapped DQN, εz-greedy, RND and LESSON on the six
MiniGrid tasks of Table 1, 500k env steps, seeds 0-2, and RND's centred bonus on DoorKey and Unlock (the side arm):
78 serial runs, two at once, each recorded as it ends. Run it with the study clone's Python, from main, on the clone
(pinned at the study's commit, STUDY_COMMIT: PLAN.md's note that names it):

    CLONE/.venv/bin/python results/baselines-minigrid/run.py --repo CLONE --stage minigrid --until 07:45
    CLONE/.venv/bin/python results/baselines-minigrid/run.py --repo CLONE --stage minigrid --list
    CLONE/.venv/bin/python results/baselines-minigrid/run.py --repo CLONE --check doorkey-rnd-s0

The order is PLAN.md's: seed 0 of every arm and task, then seed 1, then seed 2, so that a stop leaves whole seeds.
Each run is a one-run grid of its own under the clone's `runs/bm-<cell>/` (its log beside it, `.log`), with PLAN.md's
flags, recorded under `results/baselines-minigrid/<cell>/` and copied into main, where it is committed. A run cut
off is started again from its beginning, never resumed. `--until HH:MM` starts a run only if its estimate
(ESTIMATE, minutes per million env steps) fits before then. `--check CELL` runs a recorded cell again and compares
its evals.csv with the record's, bit for bit (a match needs a host like the record's, whose kernels (`cpu_kernels`) its
summary.json names). What the runner does with a cell, its records and its checks: `results/study_grid.py` (below).

The script refuses to start runs unless the clone is clean at the study's commit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import study_grid as grids  # noqa: E402 - the runner every study shares, in results/

# the study's commit (PLAN.md's second note of 2026-12-07): its runs record every library's CPU kernels, and its
# golden outputs equal f7c4e83's (the DQN column's commit) for DQN and β-DQN
STUDY_COMMIT = "64211d99f2633fb8fdf402c28d40b166573571ac"
RECORDS = Path("results/baselines-minigrid")
TASKS = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy", "LavaCrossing-Hard")
SIDE_TASKS = ("DoorKey", "Unlock")  # the RND side arm's: where the paper's RND is strongest
# each arm's flags beside the common ones (every method's own flags at their defaults: PLAN.md)
ARMS = {"boot": ("--algo", "bootstrapped_dqn"), "ez": ("--algo", "ez_greedy"), "rnd": ("--algo", "rnd"),
        "lesson": ("--algo", "lesson"), "rnd-centred": ("--algo", "rnd", "--rnd-bonus", "centred")}
# Table 1's serial DQN column's: one process, deterministic for a seed; 4 actors × the default 4 envs; no progress
# bar, no W&B; everything else at its default
COMMON = ("--runtime", "serial", "--actors", "4", "--progress", "false", "--wandb", "disabled")
STEPS = 500_000
# minutes per million env steps beside another run and other work (nice 19): the MinAtar study's 50 for a serial DQN
# MiniGrid run (seen: 16-68 for 1M) times bench/cost.py's ratio on DoorKey (PLAN.md's note: Bootstrapped DQN 2.2,
# LESSON 2.8, RND 1.6, εz-greedy 1.0), rounded up; for scheduling, not a measurement
ESTIMATE = {"boot": 120, "ez": 50, "rnd": 90, "lesson": 150, "rnd-centred": 90}


@dataclass(frozen=True)
class Cell:
    env: str  # the --env value
    arm: str  # a key of ARMS
    seed: int
    steps: int = STEPS
    resumable = False  # every run is started again from its beginning where cut off (PLAN.md)

    @property
    def name(self) -> str:
        """`doorkey-rnd-s0`, `unlock-rnd-centred-s2`: the record's directory under results/baselines-minigrid/."""
        return f"{self.env.lower()}-{self.arm}-s{self.seed}"

    @property
    def grid(self) -> Path:
        return grids.RUNS / f"bm-{self.name}"

    @property
    def record(self) -> Path:
        return RECORDS / self.name

    @property
    def minutes(self) -> float:
        return ESTIMATE[self.arm] * self.steps / 1e6

    def argv(self) -> list[str]:
        return ["--env", self.env, *ARMS[self.arm], "--seeds", str(self.seed), "--total-steps", str(self.steps),
                *COMMON]


STAGES = ("minigrid",)
STAGE_HELP = "the study's runs (minigrid: the 72 runs of the four columns and the side arm's 6)"
JOBS_HELP = "serial runs at once (default 2: one a core)"


def cells(stage: str) -> list[Cell]:
    """The runs in the order they start: seed 0 of every arm and task, then seed 1, then seed 2."""
    if stage != "minigrid":
        raise ValueError(stage)
    return [Cell(task, arm, seed) for seed in range(3) for task in TASKS for arm in ARMS
            if arm != "rnd-centred" or task in SIDE_TASKS]


def every_cell() -> list[Cell]:
    return cells("minigrid")


def jobs(stage: str | None, asked: int | None) -> int | str:
    return asked or 2


def at_study_commit() -> str:
    """Why the running checkout may not make the study's runs ("" where it may): clean, at STUDY_COMMIT."""
    return grids.at_commit(STUDY_COMMIT)


def main(argv: list[str] | None = None) -> int:
    return grids.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
