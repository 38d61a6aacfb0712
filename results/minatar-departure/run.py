"""The MinAtar-departure study's runs (PLAN.md beside this file): serial runs, two at once, each recorded as it ends.

    python results/minatar-departure/run.py --stage 1                  # stage 1 (1b's 5M runs, then 1a), two at once
    python results/minatar-departure/run.py --stage 1 --until 07:45    # start no run that would not end by then
    python results/minatar-departure/run.py --stage 1 --list           # each run of the stage: recorded, begun or to do
    python results/minatar-departure/run.py --check 1a/asterix-beta-s0 # run one recorded cell again, compare its evals

Each run is a one-run grid of its own under `runs/md-<stage>-<cell>/` (its log beside it, `.log`), started with the
flags PLAN.md fixes, or continued with `--resume` where that directory holds a grid from an earlier sitting on this
machine; when it ends, `learner.report` records it under `results/minatar-departure/<stage>/<cell>/` (a relative
path: the record repeats it), and with `--repo` copies the record into this script's checkout too, where it is
committed; a record in either counts. A run that has its record is skipped, so the script goes on wherever an earlier
sitting, or another machine, left off. `--until HH:MM` (this machine's local clock, today or, if that has passed,
tomorrow) keeps a session's end from killing a run half done: a run starts only if its estimated time fits before
then (ESTIMATE, minutes per million env steps, set high on purpose; an estimate for scheduling, not a measurement).
Ctrl-C stops the runs in hand (each keeps its last checkpoint); run the script again to continue them.

`--check STAGE/CELL` runs that cell again from its beginning into a new directory (`runs/check-...`), with the flags
its record ran with, and compares the sha256 of its evals.csv with the record's copy: serial runs are deterministic
for a seed on one kind of CPU (float kernels differ between AMD and Intel), so the two match bit for bit where the
CPU kind and the commit's training code are the record's. Exit status 0: identical; 1: different; 2: a bad argument.

`--repo DIR` runs the code of another checkout (default: this one), with this Python: the study's clone, pinned at
the study's commit, while this script comes from a later commit of main (it only schedules and records; what a run
computes is the clone's code, and its summary records the clone's commit). The script refuses to start runs from a
checkout with uncommitted changes to tracked files: PLAN.md fixes which commit the study's runs come from.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HOME = Path(__file__).resolve().parents[2]  # this script's checkout (main): its committed records count too
ROOT = HOME  # the checkout whose code runs (--repo), where runs/ and the new records are made
RECORDS = Path("results/minatar-departure")
RUNS = Path("runs")

MINATAR = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")
MINIGRID = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy",
            "LavaCrossing-Hard")
DEPARTING = ("Asterix", "Breakout", "Seaquest")  # stage 1b: where our β-DQN is at 41-57% of the paper's
# every run: serial (one process, deterministic for a seed; β's second thread off, one core a run), the Table 1
# column's actors and arm exchange; no progress bar, no W&B
COMMON = ("--runtime", "serial", "--actors", "4", "--arm-exchange", "episode", "--beta-thread", "false",
          "--progress", "false", "--wandb", "disabled")
METHOD = {"beta": ("--algo", "beta_dqn", "--bandit-returns", "raw", "--beta-epsilon", "false"),
          "dqn": ("--algo", "dqn")}
# minutes per million env steps of one serial run beside another and beside other work (nice 19), set above what was
# seen: on a 2-core AMD EPYC, stage 1a's β-DQN ran at about 480 env steps/s a run (35 min for 1M) on MinAtar; Table
# 1's serial DQN grid took 9-10 min a 1M MinAtar run and 8-23 min a 500k MiniGrid run
ESTIMATE = {("dqn", "MinAtar"): 20, ("beta", "MinAtar"): 45, ("dqn", "MiniGrid"): 50, ("beta", "MiniGrid"): 100}


@dataclass(frozen=True)
class Cell:
    stage: str  # 1a, 1b
    env: str  # the --env value
    method: str  # beta, dqn
    seed: int
    steps: int

    @property
    def name(self) -> str:
        """`1b/breakout-beta-s0`: the record's directory under results/minatar-departure/."""
        return f"{self.stage}/{self.env.removeprefix('MinAtar/').lower()}-{self.method}-s{self.seed}"

    @property
    def grid(self) -> Path:
        return RUNS / f"md-{self.name.replace('/', '-')}"

    @property
    def record(self) -> Path:
        return RECORDS / self.name

    @property
    def minutes(self) -> float:
        domain = "MinAtar" if self.env.startswith("MinAtar/") else "MiniGrid"
        return ESTIMATE[self.method, domain] * self.steps / 1e6

    def argv(self) -> list[str]:
        return ["--env", self.env, *METHOD[self.method], "--seeds", str(self.seed), "--total-steps", str(self.steps),
                *COMMON]


def cells(stage: str) -> list[Cell]:
    """The runs of a stage in the order they start: stage 1 is 1b's 5M runs (β-DQN, then DQN), then 1a's."""
    if stage == "1a":
        return ([Cell("1a", f"MinAtar/{g}", "beta", s, 1_000_000) for s in range(5) for g in MINATAR]
                + [Cell("1a", t, "beta", s, 500_000) for s in range(5) for t in MINIGRID])
    if stage == "1b":
        return [Cell("1b", f"MinAtar/{g}", m, s, 5_000_000) for m in ("beta", "dqn") for s in range(3)
                for g in DEPARTING]
    if stage == "1":
        return cells("1b") + cells("1a")
    raise ValueError(stage)


def recorded(cell: Cell) -> bool:
    """Recorded in the checkout that runs (--repo) or in this script's own (main, where records are committed)."""
    return any((root / cell.record / "runs.csv").is_file() for root in {ROOT, HOME})


def record_dir(cell: Cell) -> Path:
    """Where the cell's record is: the running checkout's, else this script's."""
    return next(root / cell.record for root in (ROOT, HOME) if (root / cell.record / "runs.csv").is_file())


def status(cell: Cell) -> str:
    if recorded(cell):
        return "recorded"
    return "begun" if (ROOT / cell.grid / "grid.json").is_file() else "to do"


def run_dir(grid: Path) -> Path | None:
    """The one run of a one-run grid that has finished (its summary.json), or None."""
    found = sorted(p.parent for p in (ROOT / grid).glob("*/summary.json"))
    return found[0].relative_to(ROOT) if found else None


_children: set[subprocess.Popen] = set()
_stopping = threading.Event()  # set by `stop`: no run starts after it
_started = threading.Lock()  # held while a child starts


def launch(cmd: list[str], log: Path) -> int:
    """`cmd` at the lowest CPU priority, its output to `log`; its exit status. While it runs, a SIGINT or SIGTERM
    to this script is passed on to it (`stop`): a run stops at its next step and keeps its last checkpoint."""
    with open(ROOT / log, "a") as out:
        with _started:  # a stop sees every child started before it, and none starts after it
            if _stopping.is_set():
                return 130
            child = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                     preexec_fn=lambda: os.nice(19))
            _children.add(child)
        try:
            return child.wait()
        finally:
            _children.discard(child)


def stop(signum, frame) -> None:
    """Passes the signal on to the runs in hand (as SIGINT: a run's graceful stop), then stops this script."""
    with _started:
        _stopping.set()
    for child in list(_children):
        child.send_signal(signal.SIGINT)
    for child in list(_children):
        child.wait()
    raise KeyboardInterrupt


def run(cell: Cell) -> bool:
    """Runs (or continues) a cell, then records it; True when recorded."""
    py = sys.executable
    (ROOT / RUNS).mkdir(exist_ok=True)
    log = cell.grid.with_suffix(".log")
    if (ROOT / cell.grid / "grid.json").is_file():
        cmd = [py, "-m", "learner.main", "--resume", str(cell.grid), "--progress", "false"]
    else:
        cmd = [py, "-m", "learner.main", *cell.argv(), "--out", str(cell.grid)]
    say(f"start  {cell.name} (estimate {cell.minutes:.0f} min): {' '.join(cmd[1:])}")
    rc = launch(cmd, log)
    done = run_dir(cell.grid)
    if _stopping.is_set():
        return True  # stopped on purpose: it continues on the next start
    if rc != 0 or done is None:
        say(f"FAILED {cell.name}: exit {rc}, see {log}")
        return False
    rc = launch([py, "-m", "learner.report", str(done), "--out", str(cell.record)], log)
    if rc != 0:
        say(f"FAILED {cell.name}: its report, exit {rc}, see {log}")
        return False
    if HOME != ROOT and not (HOME / cell.record).exists():  # into main's results/ too, to be committed there
        shutil.copytree(ROOT / cell.record, HOME / cell.record)
    say(f"recorded {cell.record}" + (" (and copied into this script's checkout)" if HOME != ROOT else ""))
    return True


_print = threading.Lock()


def say(text: str) -> None:
    with _print:
        print(f"{time.strftime('%H:%M:%S')} run.py: {text}", flush=True)


def deadline(until: str | None) -> float | None:
    """--until HH:MM as a time stamp: today, or tomorrow where that has passed."""
    if until is None:
        return None
    hour, minute = (int(x) for x in until.split(":"))
    now = dt.datetime.now()
    end = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if end <= now:
        end += dt.timedelta(days=1)
    return end.timestamp()


def work(todo: list[Cell], jobs: int, end: float | None) -> int:
    """Runs the cells, `jobs` at a time, each started only if its estimate fits before `end`; the failures."""
    lock, failures = threading.Lock(), []

    def take() -> Cell | None:
        with lock:
            if _stopping.is_set():
                return None
            for cell in todo:
                if end is None or time.time() + 60 * cell.minutes <= end:
                    todo.remove(cell)
                    return cell
            return None

    def worker() -> None:
        while (cell := take()) is not None:
            if not run(cell):
                failures.append(cell.name)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if todo:
        say(f"{len(todo)} runs left, none of which fits before --until: {', '.join(c.name for c in todo[:4])} ...")
    if failures:
        say(f"{len(failures)} failed: {', '.join(failures)}")
    return len(failures)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(name: str) -> int:
    """Runs a recorded cell again from its beginning and compares its evals.csv with the record's."""
    cell = next((c for c in cells("1") if c.name == name), None)
    if cell is None:
        print(f"run.py: error: --check {name!r} is not a cell of the study; give one as --list names it "
              "(1a/asterix-beta-s0)", file=sys.stderr)
        return 2
    if not recorded(cell):
        print(f"run.py: error: --check {name}: {cell.record} holds no record yet", file=sys.stderr)
        return 2
    copies = sorted((record_dir(cell) / "runs").glob("*/evals.csv"))
    summary = json.loads((copies[0].parent / "summary.json").read_text())
    grid = RUNS / f"check-{cell.name.replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"
    say(f"check  {cell.name}: running it again into {grid} (estimate {cell.minutes:.0f} min)")
    rc = launch([sys.executable, "-m", "learner.main", *cell.argv(), "--out", str(grid)], grid.with_suffix(".log"))
    again = run_dir(grid)
    if rc != 0 or again is None:
        print(f"run.py: error: the run again failed (exit {rc}); see {grid.with_suffix('.log')}", file=sys.stderr)
        return 2
    now = json.loads((ROOT / again / "summary.json").read_text())
    a, b = digest(copies[0]), digest(ROOT / again / "evals.csv")
    shown = cell.record / copies[0].relative_to(record_dir(cell))
    print(f"record {shown}: sha256 {a} (commit {summary.get('commit')}, {summary.get('cpu')})")
    print(f"again  {again / 'evals.csv'}: sha256 {b} (commit {now.get('commit')}, {now.get('cpu')})")
    if a == b:
        print("identical")
        return 0
    cpu = "" if summary.get("cpu") == now.get("cpu") else " (the CPUs differ: float kernels may too)"
    print(f"DIFFERENT{cpu}")
    return 1


def clean() -> bool:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return not out.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python results/minatar-departure/run.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", choices=("1", "1a", "1b"), help="the stage whose runs to run (1: 1b, then 1a)")
    p.add_argument("--jobs", type=int, default=2, help="serial runs at once (default 2: one a core)")
    p.add_argument("--until", metavar="HH:MM", help="start no run whose estimate would end after this local time")
    p.add_argument("--list", action="store_true", help="list the stage's runs and their state; run nothing")
    p.add_argument("--check", metavar="STAGE/CELL", help="run one recorded cell again and compare its evals.csv")
    p.add_argument("--repo", type=Path, metavar="DIR",
                   help="the checkout whose code runs and where runs/ and the records go (default: this one)")
    args = p.parse_args(argv)
    if args.repo is not None:
        global ROOT
        if not (args.repo / "learner" / "main.py").is_file():
            p.error(f"--repo {args.repo}: not a checkout of this project (no learner/main.py there)")
        ROOT = args.repo.resolve()
    if args.until is not None:
        try:
            hour, minute = (int(x) for x in args.until.split(":"))
            if not (0 <= hour < 24 and 0 <= minute < 60):
                raise ValueError
        except ValueError:
            p.error(f"--until {args.until!r} is not a time; give HH:MM (24-hour clock), e.g. 07:45")
    if args.jobs < 1:
        p.error(f"--jobs {args.jobs}: give 1 or more")
    if args.check:
        return check(args.check)
    if args.stage is None:
        p.error("give --stage 1, 1a or 1b (or --check STAGE/CELL)")
    todo = cells(args.stage)
    if args.list:
        for cell in todo:
            print(f"{cell.name:32s} {status(cell):9s} {cell.minutes:5.0f} min  {' '.join(cell.argv())}")
        done = sum(recorded(c) for c in todo)
        print(f"{done} of {len(todo)} recorded; estimate left {sum(c.minutes for c in todo if not recorded(c)):.0f} "
              "run-minutes")
        return 0
    if not clean():
        p.error("the checkout has uncommitted changes to tracked files; the study runs from a clean clone at its "
                "commit (PLAN.md)")
    todo = [c for c in todo if not recorded(c)]
    say(f"stage {args.stage}: {len(todo)} runs to do, {args.jobs} at once"
        + (f", none starting unless it fits before {args.until}" if args.until else ""))
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return 1 if work(todo, args.jobs, deadline(args.until)) else 0
    except KeyboardInterrupt:
        say("stopped; run the script again to continue")
        return 130


if __name__ == "__main__":
    sys.exit(main())
