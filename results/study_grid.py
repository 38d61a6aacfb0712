"""What every study's runner (`results/<study>/run.py`) shares: serial runs, `jobs` at once, each a one-run grid
of its own in the clone that runs the study's code (`--repo`, pinned at the study's commit), recorded by the
clone's `learner.report` as it ends and copied into main (this file's checkout), where records are committed.

A study's runner is a module with a docstring (its `--help`, before this one) that gives `STAGES`, `STAGE_HELP`,
`JOBS_HELP`, `cells(stage)`, `every_cell()`, `at_study_commit()` ("" where the clone may make the study's runs, else
why not) and `jobs(stage, asked)` (the runs at once, or a one-line reason to refuse), and may give `waiting(stage)`
(why a stage has no runs yet, said where it has none; "" else), and whose cells give `name`,
`grid`, `record`, `steps`, `minutes`, `resumable` and `argv()`; `main(study, argv)` is its command line. What the
runner does with a cell:

- A run cut off (its directory there, no record) is moved aside (`...-cut-<time>`) and started again from its
  beginning, never resumed: a serial run then repeats exactly. A `resumable` cell is the exception: cut off after
  its first checkpoint, it continues from it where the machine kept it (`--resume`), the env steps of each resume
  in `resumes.json` in its directory and then in its record (an empty list: never resumed).
- A record in the clone or in main counts; one the clone holds but main lacks is copied at the start.
- `--until HH:MM` (this machine's local clock, today or, if that has passed, tomorrow) starts a run only if its
  estimate (a resumed run: of what is left) fits before then (the study's estimates, set high on purpose: for
  scheduling, not measurements). Ctrl-C or SIGTERM stops the runs in hand.
- `--check CELL` runs a recorded cell again from its beginning into `runs/check-...` and compares the sha256 of
  its evals.csv with the record's copy: serial runs are deterministic for a seed on one host, and may differ
  across hosts of one name (the CPU kernels torch, numpy and OpenBLAS pick, `cpu_kernels` in a run's summary), so a
  match needs the record's commit and a host like its own. Exit status 0: identical; 1: different; 2: a bad
  argument.
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
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]  # main, this file's checkout: its committed records count too
ROOT = HOME  # the checkout whose code runs (--repo), where runs/ and the new records are made
RUNS = Path("runs")
RESUMES = "resumes.json"  # a resumable run's list of the env steps at which it was resumed


def recorded(cell) -> bool:
    """Recorded in the checkout that runs (--repo) or in this script's own (main, where records are committed)."""
    return any((root / cell.record / "runs.csv").is_file() for root in {ROOT, HOME})


def record_dir(cell) -> Path:
    """Where the cell's record is: the running checkout's, else this script's."""
    return next(root / cell.record for root in (ROOT, HOME) if (root / cell.record / "runs.csv").is_file())


def status(cell) -> str:
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


def launch(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> int:
    """`cmd` (at this script's priority, which `main` lowers to the lowest; `env` added to this script's
    environment), its output to `log`; its exit status.
    It runs in a session of its own, so a terminal's Ctrl-C reaches this script alone, which passes it on once
    (`stop`): a run stops at its next step."""
    (ROOT / log).parent.mkdir(parents=True, exist_ok=True)
    with open(ROOT / log, "a") as out:
        with _started:  # a stop sees every child started before it, and none starts after it
            if _stopping.is_set():
                return 130
            child = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=None if env is None else {**os.environ, **env})
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


def minutes_left(cell) -> float:
    """The cell's estimate, less the share a resumable run's checkpoint has done (such a run starts only if what is
    left of it fits)."""
    if not cell.resumable or not (ROOT / cell.grid).exists():
        return cell.minutes
    if run_dir(cell.grid) is not None:
        return 1.0  # it ran to its end: its record is made, not the run again
    steps = checkpoint_steps(cell.grid) or 0
    return cell.minutes * max(0.0, 1 - steps / cell.steps)


def resumes(grid: Path) -> list[int]:
    path = ROOT / grid / RESUMES
    return json.loads(path.read_text()) if path.is_file() else []


def run(cell) -> bool:
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
    elif steps is not None:  # cut off in an earlier sitting, a checkpoint made: continued
        done_before = resumes(cell.grid)
        write_json(ROOT / cell.grid / RESUMES, [*done_before, steps])
        cmd = [py, "-m", "learner.main", "--resume", str(cell.grid)]
        say(f"resume {cell.name} from its checkpoint at {steps:,} env steps (resume {len(done_before) + 1})")
    else:
        if (ROOT / cell.grid).exists():  # cut off in an earlier sitting: restarted, never resumed
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


def copy_home(cell) -> None:
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


def work(todo: list, jobs: int, end: float | None) -> int:
    """Runs the cells, `jobs` at a time, each started only if its estimate fits before `end`; the failures."""
    lock, failures = threading.Lock(), []

    def take():
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


def avx2_kernels() -> dict[str, str]:
    """The environment that holds torch (ATen, oneDNN, MKL), numpy's SIMD dispatch and OpenBLAS to AVX2 kernels on an
    AVX-512 host: numpy's targets above AVX2 that this host enables are disabled by name (numpy refuses a name it
    does not dispatch), OpenBLAS takes its Haswell core (its Zen core, which an AMD host without AVX-512 picks, is
    the Haswell kernels in numpy's build: it reports "Haswell" for both). Tested on one record (RESULTS.md, "Checking
    a cell"); an approximation of a host without AVX-512, not a copy of one."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1 keeps them elsewhere; its dispatch is then left as the host has it
        __cpu_dispatch__, __cpu_features__ = [], {}
    above = [n for n in __cpu_dispatch__ if ("AVX512" in n or n == "X86_V4") and __cpu_features__.get(n)]
    env = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
           "OPENBLAS_CORETYPE": "Haswell"}
    return {**env, "NPY_DISABLE_CPU_FEATURES": " ".join(above)} if above else env


def check(study, name: str, kernels: str = "host") -> int:
    """Runs a recorded cell again from its beginning and compares its evals.csv with the record's; `kernels`
    "avx2": with the libraries held to AVX2 kernels (`avx2_kernels`), to check a record made on a host without
    AVX-512 on one with it."""
    cell = next((c for c in study.every_cell() if c.name == name), None)
    if cell is None:
        example = study.every_cell()[0].name
        print(f"run.py: error: --check {name!r} is not a cell of the study; give one as --list names it "
              f"({example})", file=sys.stderr)
        return 2
    if not recorded(cell):
        print(f"run.py: error: --check {name}: {cell.record} holds no record yet", file=sys.stderr)
        return 2
    copies = sorted((record_dir(cell) / "runs").glob("*/evals.csv"))
    if not copies:
        print(f"run.py: error: --check {name}: its record holds no copy of the run's evals.csv", file=sys.stderr)
        return 2
    summary = json.loads((copies[0].parent / "summary.json").read_text())
    stamp = f"check-{cell.name.replace('/', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"
    grid, n = RUNS / stamp, 1
    while (ROOT / grid).exists():  # another check of the cell in the same second
        grid, n = RUNS / f"{stamp}-{n}", n + 1
    env = avx2_kernels() if kernels == "avx2" else None
    say(f"check  {cell.name}: running it again into {grid} (estimate {cell.minutes:.0f} min)"
        + ("" if env is None else f", with {' '.join(f'{k}={v!r}' for k, v in env.items())}"))
    rc = launch([sys.executable, "-m", "learner.main", *cell.argv(), "--out", str(grid)], grid.with_suffix(".log"),
                env)
    again = run_dir(grid)
    if rc != 0 or again is None:
        print(f"run.py: error: the run again failed (exit {rc}); see {grid.with_suffix('.log')}", file=sys.stderr)
        return 2
    now = json.loads((ROOT / again / "summary.json").read_text())
    a, b = digest(copies[0]), digest(ROOT / again / "evals.csv")
    shown = cell.record / copies[0].relative_to(record_dir(cell))
    print(f"record {shown}: sha256 {a} (commit {summary.get('commit')}, {host(summary)})")
    print(f"again  {again / 'evals.csv'}: sha256 {b} (commit {now.get('commit')}, {host(now)})")
    if a == b:
        print("identical")
        return 0
    cpu = "" if host(summary) == host(now) else " (the hosts differ: float kernels may too)"
    print(f"DIFFERENT{cpu}")
    return 1


def host(summary: dict) -> str:
    """A run's CPU as its summary names it: the model, and the kernels torch, numpy and OpenBLAS chose where it
    records them (`cpu_capability` from 75479b4 on, `cpu_kernels` later; "?" where it does not)."""
    kernels = summary.get("cpu_kernels") or {"torch": summary.get("cpu_capability")}
    named = ", ".join(f"{k} {kernels.get(k)}" for k in ("torch", "numpy", "openblas") if kernels.get(k)) \
        or "kernels ?"
    return f"{summary.get('cpu') or '?'}; {named}"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout.strip()


def at_commit(commit: str) -> str:
    """Why the running checkout may not make the study's runs ("" where it may): it must be clean, at `commit`."""
    head = git(ROOT, "rev-parse", "HEAD")
    if head != commit:
        return (f"{ROOT} is at {head[:12] or 'no commit'}, not the study's commit {commit[:12]}: git clone "
                f"the repository, git checkout {commit[:12]}, set up its venv, and give it as --repo")
    if git(ROOT, "status", "--porcelain", "--untracked-files=no"):
        return f"{ROOT} has uncommitted changes to tracked files; the study runs from a clean clone at its commit"
    return ""


class OneLine(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage and message
        print(f"run.py: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(study, argv: list[str] | None = None) -> int:
    """The study's command line: `--stage` (its runs to run or `--list`), `--check`, `--jobs`, `--until`, `--repo`."""
    global ROOT
    p = OneLine(prog="run.py", description=f"{study.__doc__}\n{__doc__}",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", choices=study.STAGES, help=study.STAGE_HELP)
    p.add_argument("--jobs", type=int, default=None, help=study.JOBS_HELP)
    p.add_argument("--until", metavar="HH:MM", help="start no run whose estimate would end after this local time "
                                                    "(a resumed run: the estimate of what is left)")
    p.add_argument("--list", action="store_true", help="list the stage's runs and their state; run nothing")
    p.add_argument("--check", metavar="CELL", help="run one recorded cell again and compare its evals.csv (a cell as "
                                                   "--list names it)")
    p.add_argument("--kernels", choices=("host", "avx2"), default="host",
                   help="with --check: the host's own CPU kernels, or torch's, numpy's and OpenBLAS's held to AVX2 "
                        "(a record made on a host without AVX-512, checked on one with it)")
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
    jobs = study.jobs(args.stage, args.jobs)
    if isinstance(jobs, str):
        p.error(jobs)
    if args.kernels != "host" and not args.check:
        p.error(f"--kernels {args.kernels} goes with --check CELL (the study's runs use the host's own kernels)")
    if args.check:
        return check(study, args.check, args.kernels)
    if args.stage is None:
        p.error(f"give --stage {', '.join(study.STAGES)} (or --check CELL)")
    todo = study.cells(args.stage)
    why_none = getattr(study, "waiting", lambda stage: "")(args.stage)
    if why_none and not todo:
        print(why_none)
    if args.list:
        width = max([34, *(len(c.name) + 1 for c in todo)])
        for cell in todo:
            print(f"{cell.name:{width}s} {status(cell):9s} {cell.minutes:5.0f} min  {' '.join(cell.argv())}")
        done = sum(recorded(c) for c in todo)
        print(f"{done} of {len(todo)} recorded; estimate left {sum(c.minutes for c in todo if not recorded(c)):.0f} "
              "run-minutes")
        return 0
    why = study.at_study_commit()
    if why:
        p.error(why)
    for cell in study.every_cell():  # records the clone made that main lacks (a sitting stopped before copying)
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
