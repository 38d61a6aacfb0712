"""SIGTERM to a Ray run's process group (what `timeout` and job schedulers send), N times: how the run ends.

    python bench/sigterm.py --tries 20 --out /tmp/s.json

Each try starts `python -m learner.main --env CliffWalk --actors 1` on a local Ray cluster (in a session of its
own, as a shell's job is), waits for its first checkpoint, sleeps 0-`--spread` s (seeded), sends SIGTERM to its
process group and times the end. Counted: the interrupt's line said exactly once; status 130, or Ray's 1 where
Ray's core ended the driver itself (its raylet gone at once: `QuickExit`, said in the driver's log); the seconds
to the end. Prints a table and writes JSON (default bench/results/sigterm-<cpus>cpu.json) with the machine.
"""

from __future__ import annotations

import argparse
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

from bench.machine import machine  # noqa: E402

LINE = "python -m learner.main: interrupted; continue with --resume"
RAY_ENDED = ("Terminate the process", "Exiting because the Raylet IPC connection failed")


def one_try(work: Path, pause: float) -> dict:
    out = work / "run"
    argv = [sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--actors", "1", "--total-steps", "200000",
            "--checkpoint-every", "2000", "--learning-starts", "1000", "--wandb", "disabled", "--progress", "false",
            "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # as from a shell
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    deadline = time.monotonic() + 300
    while not (out / "checkpoint.pt").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"no checkpoint was written: {proc.communicate()[1][-500:]}")
        time.sleep(0.1)
    time.sleep(pause)
    os.killpg(proc.pid, signal.SIGTERM)
    sent, wall = time.monotonic(), time.time()
    _, err = proc.communicate(timeout=180)
    took = time.monotonic() - sent
    from ray._common.utils import get_default_ray_temp_dir  # (RAY_TMPDIR, TMPDIR, /tmp: where Ray's sessions are)

    logs = [p for p in Path(get_default_ray_temp_dir()).glob(f"session_*/logs/python-core-driver-*_{proc.pid}.log")
            if p.stat().st_mtime >= wall - 1]
    ray_ended = any(any(s in p.read_text(errors="replace") for s in RAY_ENDED) for p in logs)
    return {"pause_s": round(pause, 2), "seconds": round(took, 2), "status": proc.returncode,
            "lines": sum(line.startswith(LINE) for line in err.splitlines()), "ray_ended_it": ray_ended}


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
    tries = []
    for i in range(args.tries):
        with tempfile.TemporaryDirectory() as work:
            tries.append(one_try(Path(work), rng.uniform(0, args.spread)))
        print(json.dumps({"try": i, **tries[-1]}), flush=True)
    result = {"machine": host, "command": "python bench/sigterm.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "tries": tries, "summary": summarize(tries)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    print(f"\nwritten: {out}")
    return 0


def summarize(tries: list[dict]) -> dict:
    fast = [t["seconds"] for t in tries if t["seconds"] < 2]
    slow = [t["seconds"] for t in tries if t["seconds"] >= 2]
    spread = lambda xs: [min(xs), statistics.median(xs), max(xs)] if xs else None  # noqa: E731
    return {"tries": len(tries), "line_once": sum(t["lines"] == 1 for t in tries),
            "status_130": sum(t["status"] == 130 for t in tries),
            "status_1_ray_ended_it": sum(t["status"] == 1 and t["ray_ended_it"] for t in tries),
            "other_status": sum(t["status"] != 130 and not (t["status"] == 1 and t["ray_ended_it"]) for t in tries),
            "raylet_ended_at_once": len(fast), "seconds_at_once": spread(fast), "seconds_otherwise": spread(slow)}


def print_table(result: dict) -> None:
    m, s = result["machine"], result["summary"]
    print(f"\nSIGTERM to a Ray run's process group, {m['cpu_count']} CPUs ({m['cpu']}), commit {m['commit']}")
    print(f"{'tries':>6} {'line once':>10} {'status 130':>11} {'Ray 1':>6} {'other':>6} {'at once':>8} "
          f"{'s at once (min/med/max)':>24} {'s otherwise':>18}")
    fmt = lambda xs: "/".join(f"{x:.1f}" for x in xs) if xs else "-"  # noqa: E731
    print(f"{s['tries']:>6} {s['line_once']:>10} {s['status_130']:>11} {s['status_1_ray_ended_it']:>6} "
          f"{s['other_status']:>6} {s['raylet_ended_at_once']:>8} {fmt(s['seconds_at_once']):>24} "
          f"{fmt(s['seconds_otherwise']):>18}")


if __name__ == "__main__":
    sys.exit(main())
