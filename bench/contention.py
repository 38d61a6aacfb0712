"""Where one Ray run's CPU goes, and what its learner's update loses to the rest of the run.

    python bench/contention.py                   # DQN and β-DQN, MinAtar/Breakout, 4 actors; ~4 min on 2 cores
    python bench/contention.py --algos dqn --steps 10000 --out /tmp/c.json

For each method, one real `beta_dqn.driver.run.Run` on a fresh local Ray cluster (4 actors, the defaults), in this
process, per variant:

- `as is`: the run as `python -m learner.main` makes it;
- `pinned`: from its first update, this process (the learner: all of its threads) on core 0 and every other
  process of the run (actors, replay, bandit, evaluator, Ray's own) on the other cores (`sched_setaffinity`);
- `one thread` (β-DQN): `--beta-thread false`, β updated after Q on the learner's thread.

In the steady state (from the first update to the last) it takes the run's env steps/s and its milliseconds
per update, and, over the middle of it, every process's CPU seconds (`/proc/<pid>/stat`, all threads; this
process and its descendants only), grouped by what the process is (the learner; Ray actors by class; Ray's
own daemons by name), as cores in use. The update alone comes from `bench/breakdown.py`'s measurement
(synthetic batches, one thread, β's thread as the variant has it). Prints a table and writes JSON.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.breakdown import learner_rows  # noqa: E402
from bench.machine import check_ranges, machine, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve  # noqa: E402
from beta_dqn.driver.run import Run  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, what it is, CPU seconds of all its threads), for every process readable now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        out[int(entry)] = (int(fields[1]), _kind(argv), (int(fields[11]) + int(fields[12])) / TICK)
    return out


def _kind(argv: list[bytes]) -> str:
    """What a process is: `Actor` for a Ray actor (its title, `ray::Actor.collect`, less the method), else the
    name of its program or script (`raylet`, `gcs_server`, `dashboard.py`, ...)."""
    words = [w.decode(errors="replace") for w in argv if w]
    if not words:
        return "?"
    if words[0].startswith("ray::"):
        return words[0][5:].split(".")[0].split()[0]
    script = next((w for w in words[1:] if w.endswith(".py")), None)
    return Path(script or words[0]).name


def _descendants(procs: dict, root: int) -> set[int]:
    mine, grew = {root}, True
    while grew:
        grew = False
        for pid, (parent, _, _) in procs.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return mine


def _pin(pid: int, cores: set[int]) -> None:
    """Every thread of `pid` on `cores` (a process's affinity is per thread; new threads inherit it)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # a thread or process that ended meanwhile
            pass


class Sampler(threading.Thread):
    """From the run's first update: pins (when asked), then the CPU of this process and its descendants over
    `window` seconds, once `settle` seconds have passed."""

    def __init__(self, run: Run, pin: bool, settle: float, window: float):
        super().__init__(daemon=True)
        self.run_, self.pin, self.settle, self.window = run, pin, settle, window
        self.shares: dict[str, float] | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while self.run_.learner.updates == 0:
            if self.stop.wait(0.05):
                return
        me = os.getpid()
        if self.pin:
            cores = sorted(os.sched_getaffinity(0))
            procs = _processes()
            for pid in _descendants(procs, me):
                _pin(pid, {cores[0]} if pid == me else set(cores[1:]))
        if self.stop.wait(self.settle):
            return
        before, t0 = _processes(), time.perf_counter()
        if self.stop.wait(self.window):
            return
        after, wall = _processes(), time.perf_counter() - t0
        shares: Counter = Counter()
        for pid in _descendants(after, me):
            parent, kind, cpu = after[pid]
            spent = cpu - (before[pid][2] if pid in before else 0.0)
            shares["learner (this process)" if pid == me else kind] += spent / wall
        self.shares = dict(shares.most_common())


def one(env: str, algo: str, steps: int, warmup: int, variant: str, window: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = resolve(Config.of(
            env=env, algo=algo, runtime="ray", total_steps=warmup + steps, learning_starts=warmup,
            eval_every=10**9, eval_episodes=1, eval_basic=False, beta_thread=variant != "one thread",
            out=tmp, wandb="disabled", progress=False, log_every=3600.0))
        run = Run(cfg, spec)
        sampler = Sampler(run, variant == "pinned", settle=2.0, window=window)
        sampler.start()
        try:
            summary = run.run()
        finally:
            sampler.stop.set()
            sampler.join()
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))  # (the sampler pinned its own process)
            for tid in os.listdir("/proc/self/task"):
                try:
                    os.sched_setaffinity(int(tid), set(range(os.cpu_count() or 1)))
                except OSError:
                    pass
    if sampler.shares is None:
        raise SystemExit(f"bench/contention.py: the {algo} run ({variant}) ended before its window of {window} s; "
                         f"give more --steps")
    t = summary["throughput"]
    return {"algo": algo, "variant": variant, "steady_env_steps_per_s": t["steady_env_steps_per_s"],
            "update_ms": t["update_ms"], "learner_update_fraction": t["learner_update_fraction"],
            "learner_wait_fraction": t["learner_wait_fraction"], "learner_idle_fraction": t["learner_idle_fraction"],
            "cores_in_use": sampler.shares}


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser.script("bench/contention.py", __doc__)
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--algos", default="dqn,beta_dqn", help="comma-separated: dqn, beta_dqn")
    p.add_argument("--steps", type=int, default=30_000, help="env steps of each run after its warm-up")
    p.add_argument("--warmup", type=int, default=5_000, help="env steps before the first update")
    p.add_argument("--window", type=float, default=10.0, help="seconds of the steady state sampled for CPU")
    p.add_argument("--out", default="", help="the JSON (default bench/results/contention-<cores>cpu.json)")
    args = p.parse_args(argv)
    algos = [a for a in args.algos.split(",") if a]
    if not algos or any(a not in ("dqn", "beta_dqn") for a in algos):
        p.error(f"--algos {args.algos!r}: give dqn, beta_dqn or both")
    check_ranges(p, ("--steps", args.steps, 2_000, 10_000_000), ("--warmup", args.warmup, 1, 1_000_000),
                 ("--window", args.window, 1, 600))
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        p.error(f"this process may use {cores} core; the pinned variant needs 2 or more")
    info, t0 = machine(), time.perf_counter()
    alone = {(r["algo"], r["beta_thread"]): r["update_ms"] for r in learner_rows(args.env, "cpu", 300)
             if not r["cuda_graphs"]}
    rows = []
    for algo in algos:
        for variant in ("as is", "pinned") + (("one thread",) if algo == "beta_dqn" else ()):
            r = one(args.env, algo, args.steps, args.warmup, variant, args.window)
            r["alone_update_ms"] = alone[(algo, algo == "beta_dqn" and variant != "one thread")]
            rows.append(r)
            print(f"{algo} {variant}: {r['steady_env_steps_per_s']:.0f} env steps/s, {r['update_ms']:.2f} ms per "
                  f"update ({r['alone_update_ms']:.2f} alone)", file=sys.stderr, flush=True)
    result = {"env": args.env, "steps": args.steps, "warmup": args.warmup, "window_seconds": args.window,
              "cores": cores, "machine": info,
              "command": "python bench/contention.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "rows": rows, "bench_seconds": round(time.perf_counter() - t0, 1)}
    print_table(result)
    write_result(Path(args.out or ROOT / "bench" / "results" / f"contention-{cores}cpu.json"), result)
    return 0


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['env']}, one Ray run of 4 actors, on {m['cpu']} ({result['cores']} cores), commit {m['commit']}")
    print("| method | variant | env steps/s | ms per update | alone | update / wait / idle | cores in use |")
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for r in result["rows"]:
        used = ", ".join(f"{k} {v:.2f}" for k, v in r["cores_in_use"].items() if v >= 0.01)
        print(f"| {r['algo']} | {r['variant']} | {r['steady_env_steps_per_s']:.0f} | {r['update_ms']:.2f} | "
              f"{r['alone_update_ms']:.2f} | {r['learner_update_fraction']:.2f} / {r['learner_wait_fraction']:.2f} / "
              f"{r['learner_idle_fraction']:.2f} | {used} (total {sum(r['cores_in_use'].values()):.2f}) |")


if __name__ == "__main__":
    run_script("bench/contention.py", main)
