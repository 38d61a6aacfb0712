"""What a benchmark ran on: the machine, the versions and the commit (every bench's JSON records it)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import gymnasium
import numpy
import psutil
import ray
import torch

from beta_dqn.driver.host import cpu_kernels
from beta_dqn.files import write_atomically, write_error

ROOT = Path(__file__).resolve().parents[1]


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    try:
        def git(*args):
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        commit = git("rev-parse", "--short", "HEAD") + ("-dirty" if git("status", "--porcelain", "-uno") else "")
    except (OSError, subprocess.CalledProcessError):
        commit = None

    return {"cpu": cpu, "cpu_count": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 1e9, 1),
            "gpu": gpu, "python": platform.python_version(), "torch": torch.__version__, "ray": ray.__version__,
            "numpy": numpy.__version__, "gymnasium": gymnasium.__version__, "commit": commit,
            "date": time.strftime("%Y-%m-%d"),
            # the kernels torch, numpy and OpenBLAS dispatch to: an update's time differs with them between hosts
            "cpu_kernels": cpu_kernels()}


def run_main(prog: str, what: str, args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m learner.main ARGS` in a fresh process from the checkout: its result and its wall seconds; a run
    that fails ends the bench with one line naming `what` failed and the run's last line."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "learner.main", *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{prog}: {what} failed ({done.returncode}): "
                         f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    return done, wall


def write_json(out: Path, result: dict) -> None:
    """A bench's JSON, whole or not at all and never through a link (`beta_dqn.files.write_atomically`),
    its folder made; a failure to write is one line naming the file and the cause (SystemExit). Absolute paths
    under the checkout in its `command` are written relative to it (others, such as a lent machine's output folder,
    are as given: rename them before committing the result, with a `sitting` note, as bench/results/ does)."""
    if isinstance(result.get("command"), str):
        result = {**result, "command": result["command"].replace(f"{ROOT}{os.sep}", "")}
    text = json.dumps(result, indent=2) + "\n"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(out, lambda f: f.write(text))
    except OSError as e:
        raise SystemExit(f"{Path(sys.argv[0]).name}: {write_error(out, e)}") from None


def write_result(out: Path, result: dict) -> None:
    """A bench's JSON (`write_json`), and the line that says where."""
    write_json(out, result)
    print(f"\nwrote {out}")


def check_ranges(parser, *bounds: tuple[str, float, float, float]) -> None:
    """The parser's one-line error for the flags whose values are outside their bounds, `(flag, value, low,
    high)` each: it names each such flag, its value and what is allowed, and no other flag."""
    bad = [f"{flag} {value} (allowed: {low:,} to {high:,})" for flag, value, low, high in bounds
           if not low <= value <= high]
    if bad:
        parser.error(f"out of range: {'; '.join(bad)}")
