"""Starting a Ray run on this machine: Ray's own settings for the local cluster a run starts, against the
project's (`beta_dqn.driver.cluster.start_local_cluster`: no workers started ahead of the actors that ask for them,
the dashboard agent on a port the system picks).

    python bench/ray_start.py                   # 4 repeats of each, ~3 min on 2 cores
    python bench/ray_start.py --repeats 2 --out /tmp/s.json

Each repeat runs `python -m learner.main --env CliffWalk --runtime ray --actors 4` for 1,200 env steps (the
test suite's Ray runs are of this kind) once with each setting, alternating which goes first, each a process of
its own that starts its own cluster. Ray's agent port, 52365, is held while they run, as another cluster on the
machine (a second run, a test session's cluster) holds it: by this bench where it is free, and said so. Measured
per run: the wall clock of the whole command, the seconds from the run's construction (Ray's start included)
until every actor has delivered its first chunk (the run's own `all_actors_ready_s`), and the worker processes
the cluster started (its session's worker logs). Prints a table and writes JSON with the machine.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine, write_result  # noqa: E402

AGENT_PORT = 52365
FLAGS = ["--env", "CliffWalk", "--runtime", "ray", "--actors", "4", "--total-steps", "1200", "--learning-starts",
         "400", "--eval-every", "1200", "--eval-episodes", "2", "--wandb", "disabled", "--progress", "false"]
# the run, in a process of its own; with Ray's settings the project's two are undone first
DRIVER = """
import contextlib, sys
import beta_dqn.driver.cluster as cluster
if sys.argv[1] == "ray":
    cluster.LOCAL_SYSTEM_CONFIG = {}
    cluster._any_free_agent_port = lambda ray: contextlib.nullcontext()
from beta_dqn.launcher.main import main
sys.exit(main(sys.argv[2:]))
"""
SETTINGS = {"ray": "Ray's own (workers started ahead, agent port 52365)",
            "project": "the project's (start_local_cluster)"}


def one_run(setting: str, work: Path, repeat: int) -> dict:
    out = work / f"run-{setting}-{repeat}"
    sessions = set(Path(tempfile.gettempdir(), "ray").glob("session_2*"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", DRIVER, setting, *FLAGS, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ray_start.py: the run with {setting}'s settings failed ({done.returncode}): "
                         f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    throughput = json.loads((out / "summary.json").read_text())["throughput"]
    new = sorted(set(Path(tempfile.gettempdir(), "ray").glob("session_2*")) - sessions)
    workers = len(list(new[-1].glob("logs/python-core-worker-*.log"))) if len(new) == 1 else None
    return {"setting": setting, "wall_s": round(wall, 2), "all_actors_ready_s": throughput["all_actors_ready_s"],
            "worker_processes": workers}


def hold_agent_port() -> tuple[socket.socket | None, str]:
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (a port only in TIME_WAIT is not held)
    try:
        held.bind(("0.0.0.0", AGENT_PORT))
        held.listen()
        return held, "this bench"
    except OSError as e:
        held.close()
        if e.errno != errno.EADDRINUSE:
            raise SystemExit(f"ray_start.py: cannot hold port {AGENT_PORT}: {e}") from None
        return None, "another process"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/ray_start.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=4, help="runs of each setting (default 4)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / f"ray-start-{os.cpu_count()}cpu.json"))
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats {args.repeats}: give 1 or more")
    host = machine()
    held, holder = hold_agent_port()
    runs = []
    try:
        with tempfile.TemporaryDirectory() as work:
            for i in range(args.repeats):
                for setting in (("ray", "project") if i % 2 == 0 else ("project", "ray")):
                    runs.append(one_run(setting, Path(work), i))
                    print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        if held is not None:
            held.close()
    summary = {}
    for setting in SETTINGS:
        mine = [r for r in runs if r["setting"] == setting]
        summary[setting] = {key: statistics.median(r[key] for r in mine)
                            for key in ("wall_s", "all_actors_ready_s")}
        summary[setting]["worker_processes"] = sorted({r["worker_processes"] for r in mine}, key=str)
    ratio = {key: round(summary["project"][key] / summary["ray"][key], 3) for key in ("wall_s", "all_actors_ready_s")}
    print(f"\nA 1,200-step Ray run (4 actors) from the command, {host['cpu_count']} CPUs ({host['cpu']}), commit "
          f"{host['commit']}; port {AGENT_PORT} held by {holder}; medians of {args.repeats}")
    print(f"{'settings':55s} {'wall s':>7} {'actors ready s':>15} {'workers':>8}")
    for setting, label in SETTINGS.items():
        s = summary[setting]
        print(f"{label:55s} {s['wall_s']:7.1f} {s['all_actors_ready_s']:15.1f} "
              f"{'/'.join(map(str, s['worker_processes'])):>8}")
    print(f"{'project / Ray':55s} {ratio['wall_s']:7.2f} {ratio['all_actors_ready_s']:15.2f}")
    write_result(Path(args.out), {"machine": host, "command": "python bench/ray_start.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "agent_port_held_by": holder, "runs": runs, "median": summary,
        "project_over_ray": ratio})
    return 0


if __name__ == "__main__":
    sys.exit(main())
