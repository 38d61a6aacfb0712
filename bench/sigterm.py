"""SIGTERM to a Ray run's process group (what `timeout` and job schedulers send), N times: how the run ends.

    python bench/sigterm.py --tries 20 --out /tmp/s.json

Each try starts `python -m learner.main --env CliffWalk --actors 1` on a local Ray cluster (in a session of its
own, as a shell's job is), waits for its first checkpoint, sleeps 0-`--spread` s (seeded), sends SIGTERM to its
process group and times the end. Counted: the interrupt's line said exactly once; status 130, or Ray's 1 where
Ray's core ended the driver itself (its raylet gone at once: `QuickExit`, said in the driver's log); a
traceback on stderr; the seconds to the end ("at once": under 2 s, where the raylet ended at once). A try that
fails (no checkpoint, no end in 180 s) is killed, kept as its error, and the bench goes on. Prints a table
and writes JSON (default bench/results/sigterm-<cpus>cpu.json) with the machine, after every try.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine, write_json  # noqa: E402

LINE = "python -m learner.main: interrupted; continue with --resume"
RAY_ENDED = ("Terminate the process", "Exiting because the Raylet IPC connection failed")


def one_try(work: Path, pause: float) -> dict:
    out = work / "run"
    argv = [sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--actors", "1", "--total-steps", "200000",
            "--checkpoint-every", "2000", "--learning-starts", "1000", "--wandb", "disabled", "--progress", "false",
            "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # as from a shell
    with tempfile.TemporaryFile("w+") as err_file:  # (a file, not a pipe: nothing blocks on what the run says)
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err_file, text=True,
                                start_new_session=True, env=env)
        try:
            deadline = time.monotonic() + 300
            while not (out / "checkpoint.pt").exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("no checkpoint was written")
                time.sleep(0.1)
            time.sleep(pause)
            os.killpg(proc.pid, signal.SIGTERM)
            sent, wall = time.monotonic(), time.time()
            proc.wait(timeout=180)
            took = time.monotonic() - sent
        finally:  # (whatever happened: nothing of the try outlives it)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        err_file.seek(0)
        err = err_file.read()
    from ray._common.utils import get_default_ray_temp_dir  # (RAY_TMPDIR, TMPDIR, /tmp: where Ray's sessions are)

    logs = [p for p in Path(get_default_ray_temp_dir()).glob(f"session_*/logs/python-core-driver-*_{proc.pid}.log")
            if p.stat().st_mtime >= wall - 1]
    ray_ended = any(any(s in p.read_text(errors="replace") for s in RAY_ENDED) for p in logs)
    return {"pause_s": round(pause, 2), "seconds": round(took, 2), "status": proc.returncode,
            "lines": sum(line.split("\r")[-1].startswith(LINE) for line in err.splitlines()),
            "tracebacks": err.count("Traceback"), "ray_ended_it": ray_ended}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=20)
    p.add_argument("--spread", type=float, default=4.0, help="the SIGTERM comes 0 to this many s after a checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="", help="JSON path (default bench/results/sigterm-<cpus>cpu.json)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    out = Path(args.out or ROOT / "bench" / "results" / f"sigterm-{os.cpu_count()}cpu.json")
    host = machine()
    rng = random.Random(args.seed)
    tries: list[dict] = []
    command = "python bench/sigterm.py " + " ".join(sys.argv[1:] if argv is None else argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    for i in range(args.tries):
        pause = rng.uniform(0, args.spread)
        with tempfile.TemporaryDirectory() as work:
            try:
                tries.append(one_try(Path(work), pause))
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:  # said, kept, and the bench goes on
                tries.append({"pause_s": round(pause, 2), "error": f"{type(e).__name__}: {e}"})
        print(json.dumps({"try": i, **tries[-1]}), flush=True)
        result = {"machine": host, "command": command, "tries": tries, "summary": summarize(tries)}
        write_json(out, result)  # every try as it comes: a bench stopped keeps them
    print_table(result)
    print(f"\nwritten: {out}")
    return 0


def summarize(every: list[dict]) -> dict:
    tries = [t for t in every if "error" not in t]
    fast = [t["seconds"] for t in tries if t["seconds"] < 2]
    slow = [t["seconds"] for t in tries if t["seconds"] >= 2]
    spread = lambda xs: [min(xs), statistics.median(xs), max(xs)] if xs else None  # noqa: E731
    return {"tries": len(tries), "failed_tries": len(every) - len(tries),
            "line_once": sum(t["lines"] == 1 for t in tries),
            "with_a_traceback": sum(t["tracebacks"] > 0 for t in tries),
            "status_130": sum(t["status"] == 130 for t in tries),
            "status_1_ray_ended_it": sum(t["status"] == 1 and t["ray_ended_it"] for t in tries),
            "other_status": sum(t["status"] != 130 and not (t["status"] == 1 and t["ray_ended_it"]) for t in tries),
            "raylet_ended_at_once": len(fast), "seconds_at_once": spread(fast), "seconds_otherwise": spread(slow)}


def print_table(result: dict) -> None:
    m, s = result["machine"], result["summary"]
    print(f"\nSIGTERM to a Ray run's process group, {m['cpu_count']} CPUs ({m['cpu']}), commit {m['commit']}")
    print(f"{'tries':>6} {'failed':>6} {'line once':>10} {'traceback':>9} {'status 130':>11} {'Ray 1':>6} "
          f"{'other':>6} {'at once':>8} "
          f"{'s at once (min/med/max)':>24} {'s otherwise':>18}")
    fmt = lambda xs: "/".join(f"{x:.1f}" for x in xs) if xs else "-"  # noqa: E731
    print(f"{s['tries']:>6} {s['failed_tries']:>6} {s['line_once']:>10} {s['with_a_traceback']:>9} "
          f"{s['status_130']:>11} {s['status_1_ray_ended_it']:>6} "
          f"{s['other_status']:>6} {s['raylet_ended_at_once']:>8} {fmt(s['seconds_at_once']):>24} "
          f"{fmt(s['seconds_otherwise']):>18}")


if __name__ == "__main__":
    sys.exit(main())
