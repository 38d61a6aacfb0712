"""The MinAtar-departure study's runs (PLAN.md beside this file): serial runs, two at once, each recorded as it ends.
Run it with the study clone's Python, from main, on the clone (pinned at the study's commit, PLAN.md):

    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --stage 1a --until 07:45
    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --stage 1 --list   # recorded, begun, to do
    CLONE/.venv/bin/python results/minatar-departure/run.py --repo CLONE --check 1a/asterix-beta-s0

Stages: `1a`; `1b` (DQN's 5M runs); `1` (1a, then 1b's DQN runs); `1b-beta` (β-DQN's 5M runs, one at a time,
each alone with β's update on the second core: PLAN.md's deviation of 2026-12-07); `2a` (the learning-rate search:
each method at the game's two other rates of {3e-4, 1e-4, 3e-5}, seeds 0-2, then the chosen rate at seeds 3-4 for
each game and method whose nine seed 0-2 runs were recorded when the script started). Each run is a one-run grid of
its own under the clone's `runs/md-<stage>-<cell>/` (its log beside it, `.log`), with PLAN.md's flags. A run cut
off (its directory there, no record) is moved aside (`...-cut-<time>`) and started again from its beginning, never
resumed: a serial run then repeats exactly. Stage 1b's β-DQN runs are the exception (PLAN.md's deviations of
2026-12-06): one cut off after its first checkpoint continues from it where the machine kept it (`--resume`), the
env steps of each resume in `resumes.json` in its directory and then in its record (an empty list: never resumed).
When a run ends, `learner.report` (the clone's) records it under the clone's
`results/minatar-departure/<stage>/<cell>/` (a relative path: the record repeats it), and the record is copied into
this script's checkout (main), where it is committed; a record in either counts, and one the clone holds but main
lacks is copied at the start. `--until HH:MM` (this machine's local clock, today or, if that has passed, tomorrow)
starts a run only if its estimate (a resumed run: of what is left) fits before then (ESTIMATE, minutes per million
env steps, set high on purpose; for scheduling, not a measurement). Ctrl-C or SIGTERM stops the runs in hand.

`--check STAGE/CELL` runs that cell again from its beginning into a new directory (`runs/check-...`) with PLAN.md's
flags, and compares the sha256 of its evals.csv with the record's copy: serial runs are deterministic for a seed on
one host, and may differ across hosts of one name (a record names only "AMD EPYC": PLAN.md's notes), so a match
needs the record's commit and a host like its own. Exit status 0: identical; 1: different; 2: a bad argument.

The script refuses to start runs unless the clone is clean at the study's commit (the commit that added PLAN.md).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rates  # noqa: E402 - stage 2a's rates and its choice, beside this file

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
# minutes per million env steps of a serial run beside another and other work (nice 19), above what was seen on a
# 2-core AMD EPYC: stage 1a's β-DQN 38-72 min a 1M MinAtar run, Table 1's serial DQN 8-17 (MiniGrid 500k: 8-34)
ESTIMATE = {("dqn", "MinAtar"): 20, ("beta", "MinAtar"): 75, ("dqn", "MiniGrid"): 50, ("beta", "MiniGrid"): 100}
# a 1b β-DQN run alone with β's thread: 830 env steps/s in its first 245k on a quiet 2-core AMD EPYC; whole runs
# beside other work ran at 0.5-0.9 of their early rate (1a), so 34 (170 min for 5M): it starts as a session begins
SOLO_ESTIMATE = 34
RESUMES = "resumes.json"  # a resumable run's list of the env steps at which it was resumed


@dataclass(frozen=True)
class Cell:
    stage: str  # 1a, 1b, 2a
    env: str  # the --env value
    method: str  # beta, dqn
    seed: int
    steps: int
    lr: str = ""  # stage 2a's --lr ("": the game's default rate, not named)

    @property
    def name(self) -> str:
        """`1b/breakout-beta-s0`, `2a/breakout-dqn-lr1e-4-s0`: the record's directory under
        results/minatar-departure/."""
        rate = f"-lr{self.lr}" if self.lr else ""
        return f"{self.stage}/{self.env.removeprefix('MinAtar/').lower()}-{self.method}{rate}-s{self.seed}"

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
        return ["--env", self.env, *METHOD[self.method], *rate, "--seeds", str(self.seed), "--total-steps",
                str(self.steps), *common]


STAGES = ("1", "1a", "1b", "1b-beta", "2a")


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
    raise ValueError(stage)


def search_cells() -> list[Cell]:
    """Stage 2a's seeds 0-2: each method at the game's two rates other than its default."""
    return [Cell("2a", f"MinAtar/{g}", m, s, 1_000_000, r) for s in range(3) for m in ("beta", "dqn")
            for g in MINATAR for r in rates.RATES if r != rates.default(g)]


def every_cell() -> list[Cell]:
    return cells("1") + cells("1b-beta") + cells("2a")


def held_out(game: str, method: str) -> list[Cell]:
    """The chosen rate's runs at seeds 3-4 where it is not the game's default (the default's exist: stage 1a and
    Table 1's DQN column); none until the choice is made."""
    rate = rates.chosen(game, method, (ROOT, HOME))
    if rate is None or rate == rates.default(game):
        return []
    return [Cell("2a", f"MinAtar/{game}", method, s, 1_000_000, rate) for s in (3, 4)]


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
    """`cmd` (at this script's priority, which `main` lowers to the lowest), its output to `log`; its exit status.
    It runs in a session of its own, so a terminal's Ctrl-C reaches this script alone, which passes it on once
    (`stop`): a run stops at its next step."""
    (ROOT / log).parent.mkdir(parents=True, exist_ok=True)
    with open(ROOT / log, "a") as out:
        with _started:  # a stop sees every child started before it, and none starts after it
            if _stopping.is_set():
                return 130
            child = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
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


def checkpoint_steps(grid: Path) -> int | None:
    """The env steps of the last checkpoint of a one-run grid's run, or None where it has none (the clone's torch
    reads it as data: `weights_only`)."""
    import torch

    found = sorted((ROOT / grid).glob("*/checkpoint.pt"))
    if not found:
        return None
    try:
        checkpoint = torch.load(found[0], weights_only=True, map_location="cpu")
        return int(checkpoint["counters"]["env_steps"])
    except Exception as e:  # noqa: BLE001 - a damaged checkpoint: the run starts again from its beginning
        say(f"{found[0]} cannot be read ({type(e).__name__}: {e}); its run starts again from its beginning")
        return None


def minutes_left(cell: Cell) -> float:
    """The cell's estimate, less the share a resumable run's checkpoint has done (PLAN.md's deviation of
    2026-12-07: such a run starts only if what is left of it fits)."""
    if not cell.resumable or not (ROOT / cell.grid).exists():
        return cell.minutes
    if run_dir(cell.grid) is not None:
        return 1.0  # it ran to its end: its record is made, not the run again
    steps = checkpoint_steps(cell.grid) or 0
    return cell.minutes * max(0.0, 1 - steps / cell.steps)


def resumes(grid: Path) -> list[int]:
    path = ROOT / grid / RESUMES
    return json.loads(path.read_text()) if path.is_file() else []


def run(cell: Cell) -> bool:
    """Runs a cell from its beginning (a cut-off run's directory moved aside first; a resumable cell's continued
    from its checkpoint, where it has one), then records it; True when recorded (or stopped on purpose)."""
    py = sys.executable
    (ROOT / RUNS).mkdir(exist_ok=True)
    log = cell.grid.with_suffix(".log")
    finished = run_dir(cell.grid) if cell.resumable and (ROOT / cell.grid).exists() else None
    steps = checkpoint_steps(cell.grid) if cell.resumable and finished is None and (ROOT / cell.grid).exists() \
        else None
    if finished is not None:  # it ran to its end, and its record was not made: recorded now, not run again
        say(f"record {cell.name}: its run finished in an earlier sitting")
        rc = 0
    elif steps is not None:  # cut off in an earlier sitting, a checkpoint made: continued (PLAN.md, 1b's β-DQN)
        done_before = resumes(cell.grid)
        write_json(ROOT / cell.grid / RESUMES, [*done_before, steps])
        cmd = [py, "-m", "learner.main", "--resume", str(cell.grid)]
        say(f"resume {cell.name} from its checkpoint at {steps:,} env steps (resume {len(done_before) + 1})")
    else:
        if (ROOT / cell.grid).exists():  # cut off in an earlier sitting: restarted, never resumed (PLAN.md)
            aside = cell.grid.with_name(f"{cell.grid.name}-cut-{time.strftime('%Y%m%d-%H%M%S')}")
            (ROOT / cell.grid).rename(ROOT / aside)
            say(f"moved {cell.grid} (cut off) aside to {aside}; {cell.name} starts again from its beginning")
        cmd = [py, "-m", "learner.main", *cell.argv(), "--out", str(cell.grid)]
        say(f"start  {cell.name} (estimate {cell.minutes:.0f} min): {' '.join(cmd[1:])}")
    if finished is None:
        rc = launch(cmd, log)
    done = run_dir(cell.grid)
    if _stopping.is_set():
        return True  # stopped on purpose: it continues on the next start
    if rc != 0 and steps is not None and (checkpoint_steps(cell.grid) or 0) <= steps:
        write_json(ROOT / cell.grid / RESUMES, resumes(cell.grid)[:-1])  # a resume that failed before any progress
    if rc != 0 or done is None:
        say(f"FAILED {cell.name}: exit {rc}, see {log}")
        return False
    rc = launch([py, "-m", "learner.report", str(done), "--out", str(cell.record)], log)
    if rc != 0:
        say(f"FAILED {cell.name}: its report, exit {rc}, see {log}")
        return False
    if cell.resumable:  # the env steps at which it was resumed, beside runs.csv (none: an empty list)
        write_json(ROOT / cell.record / RESUMES, resumes(cell.grid))
    copy_home(cell)
    say(f"recorded {cell.record}" + (" (and copied into this script's checkout)" if HOME != ROOT else ""))
    return True


def write_json(path: Path, value) -> None:
    """`value` as JSON, whole or not at all (written beside, then renamed)."""
    part = path.with_name(f".{path.name}.part-{os.getpid()}")
    part.write_text(json.dumps(value) + "\n")
    part.rename(path)


def copy_home(cell: Cell) -> None:
    """The clone's record of `cell` into this script's checkout (main), where it is committed, unless it is there:
    copied under a temporary name and renamed, so main never holds half a record."""
    source, target = ROOT / cell.record, HOME / cell.record
    if cell.resumable and (source / "runs.csv").is_file() and not (source / RESUMES).is_file():
        write_json(source / RESUMES, resumes(cell.grid))  # (a sitting stopped between the report and this file)
    if HOME != ROOT and (target / "runs.csv").is_file() and (source / RESUMES).is_file() \
            and not (target / RESUMES).is_file():
        shutil.copyfile(source / RESUMES, target / RESUMES)
    if HOME == ROOT or (target / "runs.csv").is_file() or not (source / "runs.csv").is_file():
        return
    part = target.with_name(f".{target.name}.part-{os.getpid()}")
    shutil.rmtree(part, ignore_errors=True)
    shutil.copytree(source, part)
    part.rename(target)


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
                need = minutes_left(cell)
                if end is None or time.time() + 60 * need <= end:
                    todo.remove(cell)
                    return cell
            return None

    def worker() -> None:
        while (cell := take()) is not None:
            try:
                ok = run(cell)
            except Exception as e:  # noqa: BLE001 - one cell's failure, said; the worker takes the next
                say(f"FAILED {cell.name}: {type(e).__name__}: {e}")
                ok = False
            if not ok:
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
    cell = next((c for c in every_cell() if c.name == name), None)
    if cell is None:
        print(f"run.py: error: --check {name!r} is not a cell of the study; give one as --list names it "
              "(1a/asterix-beta-s0)", file=sys.stderr)
        return 2
    if not recorded(cell):
        print(f"run.py: error: --check {name}: {cell.record} holds no record yet", file=sys.stderr)
        return 2
    copies = sorted((record_dir(cell) / "runs").glob("*/evals.csv"))
    if not copies:
        print(f"run.py: error: --check {name}: its record holds no copy of the run's evals.csv", file=sys.stderr)
        return 2
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


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout.strip()


def at_study_commit() -> str:
    """Why the running checkout may not make the study's runs ("" where it may): it must be clean, at the commit
    that added PLAN.md (this script's checkout's history says which)."""
    study = git(HOME, "log", "--diff-filter=A", "--format=%H", "--", str(RECORDS / "PLAN.md")).split()
    head = git(ROOT, "rev-parse", "HEAD")
    if not study:
        return "this script's checkout has no history of PLAN.md: run it from a clone of the repository"
    if head != study[-1]:
        return (f"{ROOT} is at {head[:12] or 'no commit'}, not the study's commit {study[-1][:12]}: git clone "
                f"the repository, git checkout {study[-1][:12]}, set up its venv, and give it as --repo")
    if git(ROOT, "status", "--porcelain", "--untracked-files=no"):
        return f"{ROOT} has uncommitted changes to tracked files; the study runs from a clean clone at its commit"
    return ""


class OneLine(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage and message
        print(f"run.py: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    global ROOT
    p = OneLine(prog="run.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", choices=STAGES, help="the stage whose runs to run (1: 1a, then 1b's DQN runs)")
    p.add_argument("--jobs", type=int, default=None,
                   help="serial runs at once (default 2: one a core; stage 1b-beta: 1, each run taking both)")
    p.add_argument("--until", metavar="HH:MM", help="start no run whose estimate would end after this local time "
                                                    "(a resumed 1b β-DQN run: the estimate of what is left)")
    p.add_argument("--list", action="store_true", help="list the stage's runs and their state; run nothing")
    p.add_argument("--check", metavar="STAGE/CELL", help="run one recorded cell again and compare its evals.csv")
    p.add_argument("--repo", type=Path, metavar="DIR",
                   help="the clone at the study's commit whose code runs, where runs/ and new records go")
    args = p.parse_args(argv)
    if args.repo is not None:
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
    if args.jobs is not None and args.jobs < 1:
        p.error(f"--jobs {args.jobs}: give 1 or more")
    if args.stage == "1b-beta" and args.jobs not in (None, 1):
        p.error(f"--jobs {args.jobs} with --stage 1b-beta: its runs run one at a time, each alone on the machine "
                "(PLAN.md's deviation of 2026-12-07); leave --jobs out")
    jobs = args.jobs or (1 if args.stage == "1b-beta" else 2)
    if args.check:
        return check(args.check)
    if args.stage is None:
        p.error(f"give --stage {', '.join(STAGES)} (or --check STAGE/CELL)")
    todo = cells(args.stage)
    if args.list:
        for cell in todo:
            print(f"{cell.name:34s} {status(cell):9s} {cell.minutes:5.0f} min  {' '.join(cell.argv())}")
        done = sum(recorded(c) for c in todo)
        print(f"{done} of {len(todo)} recorded; estimate left {sum(c.minutes for c in todo if not recorded(c)):.0f} "
              "run-minutes")
        return 0
    why = at_study_commit()
    if why:
        p.error(why)
    for cell in every_cell():  # records the clone made that main lacks (a sitting stopped before copying)
        copy_home(cell)
    todo = [c for c in todo if not recorded(c)]
    os.nice(19)  # the lowest CPU priority, for this script and every run it starts (they inherit it)
    say(f"stage {args.stage}: {len(todo)} runs to do, {jobs} at once"
        + (f", none starting unless it fits before {args.until}" if args.until else ""))
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return 1 if work(todo, jobs, deadline(args.until)) else 0
    except KeyboardInterrupt:
        say("stopped; run the script again to continue")
        return 130


if __name__ == "__main__":
    sys.exit(main())
