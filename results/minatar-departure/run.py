"""The MinAtar-departure study's runs (PLAN.md beside this file): serial runs, two at once, each recorded as it ends.
Run it with the study clone's Python, from main, on the clone (pinned at the study's commit, PLAN.md):

    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --stage 1a --until 07:45
    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --stage 1 --list   # recorded, begun, to do
    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --check 1a/asterix-beta-s0

Stages: `1a`; `1b` (DQN's 5M runs); `1` (1a, then 1b's DQN runs); `1b-beta` (β-DQN's 5M runs, one at a time,
each alone with β's update on the second core: PLAN.md's deviation of 2026-12-07); `2a` (the learning-rate search:
each method at the game's two other rates of {3e-4, 1e-4, 3e-5}, seeds 0-2, then the chosen rate at seeds 3-4 for
each game and method whose nine seed 0-2 runs were recorded when the script started); `2b` (the other readings, only
once stage 1b's rule, `verdict.py`, says they run: each at its method's chosen rate, seeds 3-5, and the default flags
at seed 5; PLAN.md's note of 2026-12-06). Each run is a one-run grid of
its own under the clone's `runs/md-<stage>-<cell>/` (its log beside it, `.log`), with PLAN.md's flags, recorded
under `results/minatar-departure/<stage>/<cell>/` and copied into main, where it is committed. A run cut off is
started again from its beginning, never resumed; stage 1b's β-DQN runs are the exception (PLAN.md's deviations of
2026-12-06): one cut off after its first checkpoint continues from it. `--until HH:MM` starts a run only if its
estimate (ESTIMATE, minutes per million env steps) fits before then. `--check CELL` (as --list names it) runs a
recorded cell again and compares its evals.csv with the record's, bit for bit (a match needs a host like the
record's: PLAN.md's notes). What the runner does with a cell, its resumes, its records and its checks:
`results/study_grid.py` (below).

The script refuses to start runs unless the clone is clean at the study's commit (the commit that added PLAN.md).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rates  # noqa: E402 - stage 2a's rates and its choice, beside this file
import study_grid as grids  # noqa: E402 - the runner every study shares, in results/

RECORDS = Path("results/minatar-departure")
RUNS = grids.RUNS
RESUMES = grids.RESUMES

MINATAR = rates.GAMES
MINIGRID = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy",
            "LavaCrossing-Hard")
DEPARTING = ("Asterix", "Breakout", "Seaquest")  # stage 1b: where our β-DQN is at 41-57% of the paper's
# every run: serial (one process, deterministic for a seed; β's second thread off, one core a run), the Table 1
# column's actors and arm exchange; no progress bar, no W&B
COMMON = ("--runtime", "serial", "--actors", "4", "--arm-exchange", "episode", "--beta-thread", "false",
          "--progress", "false", "--wandb", "disabled")
METHOD = {"beta": ("--algo", "beta_dqn", "--bandit-returns", "raw", "--beta-epsilon", "false"),
          "dqn": ("--algo", "dqn")}
# stage 2b's readings (PLAN.md's "Stage 2b's runs"): (method, reading) -> the flag and the value it gives over the
# method's default flags (eps: DQN's ε schedule on every arm; target4k: a target copy every 1,000 updates; nocount:
# no episodic count augmentation in π_cov, a [decided] reading)
READINGS = {("beta", "eps"): ("--beta-epsilon", "true"), ("beta", "target4k"): ("--target-update", "4000"),
            ("beta", "nocount"): ("--count-mode", "off"), ("dqn", "target4k"): ("--target-update", "4000")}
READING_SEEDS = (3, 4, 5)  # PLAN.md's note of 2026-12-06: fresh seeds; the default flags' seed 5 runs here too
# minutes per million env steps of a serial run beside another and other work (nice 19), above what was seen on a
# 2-core AMD EPYC: stage 1a's β-DQN 38-72 min a 1M MinAtar run, Table 1's serial DQN 8-17 (MiniGrid 500k: 8-34)
ESTIMATE = {("dqn", "MinAtar"): 20, ("beta", "MinAtar"): 75, ("dqn", "MiniGrid"): 50, ("beta", "MiniGrid"): 100}
# a 1b β-DQN run alone with β's thread: 830 env steps/s in its first 245k on a quiet 2-core AMD EPYC; whole runs
# beside other work ran at 0.5-0.9 of their early rate (1a), so 34 (170 min for 5M): it starts as a session begins
SOLO_ESTIMATE = 34


@dataclass(frozen=True)
class Cell:
    stage: str  # 1a, 1b, 2a
    env: str  # the --env value
    method: str  # beta, dqn
    seed: int
    steps: int
    lr: str = ""  # stage 2a's and 2b's --lr ("": the game's default rate, not named)
    reading: str = ""  # stage 2b's reading (READINGS; "": the method's default flags)

    @property
    def name(self) -> str:
        """`1b/breakout-beta-s0`, `2a/breakout-dqn-lr1e-4-s0`, `2b/breakout-beta-nocount-lr1e-4-s3`: the record's
        directory under results/minatar-departure/."""
        reading = f"-{self.reading}" if self.reading else ""
        rate = f"-lr{self.lr}" if self.lr else ""
        return (f"{self.stage}/{self.env.removeprefix('MinAtar/').lower()}-{self.method}{reading}{rate}"
                f"-s{self.seed}")

    @property
    def grid(self) -> Path:
        return RUNS / f"md-{self.name.replace('/', '-')}"

    @property
    def record(self) -> Path:
        return RECORDS / self.name

    @property
    def resumable(self) -> bool:
        """Stage 1b's β-DQN runs continue across sessions from their last checkpoint (PLAN.md)."""
        return self.stage == "1b" and self.method == "beta"

    @property
    def solo(self) -> bool:
        """Stage 1b's β-DQN runs run alone, β's update on the second core (PLAN.md's deviation of 2026-12-07)."""
        return self.resumable

    @property
    def minutes(self) -> float:
        domain = "MinAtar" if self.env.startswith("MinAtar/") else "MiniGrid"
        return (SOLO_ESTIMATE if self.solo else ESTIMATE[self.method, domain]) * self.steps / 1e6

    def argv(self) -> list[str]:
        common = list(COMMON)
        if self.solo:  # "the same math" (PLAN.md's Equivalence: golden outputs identical with and without it)
            common[common.index("--beta-thread") + 1] = "true"
        rate = ["--lr", self.lr] if self.lr else []
        argv = ["--env", self.env, *METHOD[self.method], *rate, "--seeds", str(self.seed), "--total-steps",
                str(self.steps), *common]
        if self.reading:  # its flag's value in place of the method's, or added
            flag, value = READINGS[self.method, self.reading]
            if flag in argv:
                argv[argv.index(flag) + 1] = value
            else:
                argv += [flag, value]
        return argv


STAGES = ("1", "1a", "1b", "1b-beta", "2a", "2b")


def cells(stage: str) -> list[Cell]:
    """The runs of a stage in the order they start (stage 1: 1a, then 1b's DQN runs; PLAN.md's deviation of
    2026-12-06 holds 1b's β-DQN runs, `1b-beta`, apart; stage 2a: seeds 0-2, β-DQN's before DQN's, then the held-out
    seeds of each choice made)."""
    if stage == "1a":
        return ([Cell("1a", f"MinAtar/{g}", "beta", s, 1_000_000) for s in range(5) for g in MINATAR]
                + [Cell("1a", t, "beta", s, 500_000) for s in range(5) for t in MINIGRID])
    if stage in ("1b", "1b-beta"):
        return [Cell("1b", f"MinAtar/{g}", "dqn" if stage == "1b" else "beta", s, 5_000_000) for s in range(3)
                for g in DEPARTING]
    if stage == "1":
        return cells("1a") + cells("1b")
    if stage == "2a":
        return search_cells() + [cell for g in MINATAR for m in ("beta", "dqn") for cell in held_out(g, m)]
    if stage == "2b":
        return [] if waiting("2b") else reading_cells()
    raise ValueError(stage)


def search_cells() -> list[Cell]:
    """Stage 2a's seeds 0-2: each method at the game's two rates other than its default."""
    return [Cell("2a", f"MinAtar/{g}", m, s, 1_000_000, r) for s in range(3) for m in ("beta", "dqn")
            for g in MINATAR for r in rates.RATES if r != rates.default(g)]


def every_cell() -> list[Cell]:
    return cells("1") + cells("1b-beta") + cells("2a") + cells("2b")


def choice(game: str, method: str) -> str | None:
    """Stage 2a's choice as the runner schedules by it (unchecked: the reports check), None where it is not made
    or its records do not read (the reports then say why): every stage's runner lists these cells."""
    try:
        return rates.chosen(game, method, (grids.ROOT, grids.HOME))
    except Exception:  # noqa: BLE001 - a record half copied, say: never fatal to the runs of other stages
        return None


def held_out(game: str, method: str) -> list[Cell]:
    """The chosen rate's runs at seeds 3-4 where it is not the game's default (the default's exist: stage 1a and
    Table 1's DQN column); none until the choice is made."""
    rate = choice(game, method)
    if rate is None or rate == rates.default(game):
        return []
    return [Cell("2a", f"MinAtar/{game}", method, s, 1_000_000, rate) for s in (3, 4)]


@functools.cache
def stage_1b_rule() -> bool | str | None:
    """Stage 1b's rule as `verdict.py` computes it (PLAN.md's 50,000 resamples, once a process): True where stage 2b
    runs, False where it does not (the budget), None while stage 1b's runs are not all recorded (in main or in the
    clone: a record the clone holds is copied to main only after the cells are listed); a string where a record does
    not read or departs from the plan (why). Any failure is that string: every stage's runner lists
    stage 2b's cells (`every_cell`), and a record half copied must not stop stage 1's or 2a's runs."""
    try:
        import verdict  # beside this file: it reads main's records with main's reporting code

        return verdict.stage_2b_runs((grids.HOME / RECORDS, grids.ROOT / RECORDS))  # main's, then the clone's
    except Exception as e:  # noqa: BLE001 - said where stage 2b's runs are asked for, never fatal to the others
        return f"{type(e).__name__}: {e}"


def waiting(stage: str) -> str:
    """Why the stage has no runs to make yet ("" where it may have some): stage 2b's runs exist only once stage 1b's
    rule says they run (PLAN.md), at each method's rate chosen in stage 2a."""
    if stage != "2b":
        return ""
    rule = stage_1b_rule()
    if rule is None:
        return "stage 2b waits for stage 1b's rule (verdict.py): stage 1b's 18 runs are not all recorded"
    if isinstance(rule, str):
        return f"stage 2b waits: stage 1b's rule cannot be computed: {rule}"
    if not rule:
        return "stage 2b is not run: stage 1b's rule says the MinAtar departure at 1M is the budget (verdict.py)"
    if not reading_cells():
        return "stage 2b waits for stage 2a's choices: no method's rate is chosen on any game yet (search.py)"
    return ""


def reading_cells() -> list[Cell]:
    """Stage 2b's runs (PLAN.md's note of 2026-12-06), seed by seed (3-5): each reading of each game at its method's
    rate chosen in stage 2a (none for a game and method until its choice is made), and at seed 5 the method's default
    flags at that rate too (seeds 3-4 of those exist: stage 2a's held-out runs, or stage 1a and Table 1's DQN column
    where the chosen rate is the game's default). Each names its rate (`--lr`), the default's included."""
    out = []
    for seed in READING_SEEDS:
        for method in ("beta", "dqn"):
            for game in MINATAR:
                rate = choice(game, method)
                if rate is None:
                    continue
                readings = ([""] if seed == 5 else []) + [r for m, r in READINGS if m == method]
                out += [Cell("2b", f"MinAtar/{game}", method, seed, 1_000_000, rate, r) for r in readings]
    return out


STAGE_HELP = "the stage whose runs to run (1: 1a, then 1b's DQN runs)"
JOBS_HELP = "serial runs at once (default 2: one a core; stage 1b-beta: 1, each run taking both)"


def jobs(stage: str | None, asked: int | None) -> int | str:
    """The runs at once: 2 (one a core), stage 1b-beta's 1 (PLAN.md's deviation of 2026-12-07); why not, where
    refused."""
    if stage == "1b-beta" and asked not in (None, 1):
        return (f"--jobs {asked} with --stage 1b-beta: its runs run one at a time, each alone on the machine "
                "(PLAN.md's deviation of 2026-12-07); leave --jobs out")
    return asked or (1 if stage == "1b-beta" else 2)


def at_study_commit() -> str:
    """Why the running checkout may not make the study's runs ("" where it may): it must be clean, at the commit
    that added PLAN.md (this script's checkout's history says which)."""
    study = grids.git(grids.HOME, "log", "--diff-filter=A", "--format=%H", "--", str(RECORDS / "PLAN.md")).split()
    if not study:
        return "this script's checkout has no history of PLAN.md: run it from a clone of the repository"
    return grids.at_commit(study[-1])


def main(argv: list[str] | None = None) -> int:
    return grids.main(sys.modules[__name__], argv)


if __name__ == "__main__":
    sys.exit(main())
