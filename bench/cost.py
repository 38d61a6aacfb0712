"""The paper's "computational cost" row: wall-clock seconds per env step of every algorithm relative to DQN.

    python bench/cost.py                                   # MinAtar/Breakout, 20k steps after the warm-up
    python bench/cost.py --env DoorKey --steps 10000 --repeats 3 --out /tmp/cost.json
    python bench/cost.py --runtime ray --actors 2          # the distributed runner instead

Every algorithm trains on the same environment, machine, networks, replay ratio (0.25) and batch (32), in
one invocation, `--repeats` times in alternating order (forward, then backward, …: drift on a noisy machine
falls on all). By default each run is the serial runner with one learner thread and β's second thread off:
everything (acting, replay, learning) in one process on one core, so seconds per env step are the compute
the method costs, not how well it parallelises. A run's rate is taken in the steady state (from the first
update to the end: before it no method learns). Cost = DQN's rate / the method's rate (median over the
repeats), with the range of each repeat's cost against that repeat's DQN run. Prints a table beside the
paper's row and writes JSON with the machine and every run.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve  # noqa: E402
from beta_dqn.driver.run import Run  # noqa: E402

ALGOS = ("dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson", "beta_dqn")
PAPER_COST = {"dqn": 100.0, "bootstrapped_dqn": 195.34, "ez_greedy": 94.32, "rnd": 152.57, "lesson": 371.07,
              "beta_dqn": 138.78}  # %, the paper's Table 1 (their machine, MinAtar and MiniGrid)


def one_run(args, algo: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = resolve(Config.of(
            env=args.env, algo=algo, seed=args.seed, runtime=args.runtime, actors=args.actors,
            total_steps=args.learning_starts + args.steps, learning_starts=args.learning_starts,
            eval_every=10**9, eval_episodes=1, eval_basic=False, learner_threads=1, beta_thread=args.beta_thread,
            device=args.device, out=tmp, wandb="disabled", progress=False, log_every=3600.0))
        summary = Run(cfg, spec).run()
    t = summary["throughput"]
    return {"algo": algo, "env_steps_per_s": t["steady_env_steps_per_s"], "update_ms": t["update_ms"],
            "steady_seconds": t["steady_seconds"], "wall_seconds": round(summary["wall_seconds"], 2),
            "device": summary["device"]}


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser.script("bench/cost.py", __doc__)
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--algos", default=",".join(ALGOS), help="comma-separated; dqn is always included")
    p.add_argument("--steps", type=int, default=20_000, help="env steps measured after the warm-up")
    p.add_argument("--learning-starts", type=int, default=5_000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--runtime", default="serial", choices=("serial", "ray"))
    p.add_argument("--actors", type=int, default=1, help="actors (serial: stepped in turn in one process)")
    p.add_argument("--beta-thread", type=lambda s: s.lower() in ("1", "true", "yes", "on"), default=False,
                   help="β-DQN's second learner thread (off: one thread, compute cost only)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    algos = ["dqn"] + [a for a in args.algos.split(",") if a and a != "dqn"]
    unknown = [a for a in algos if a not in ALGOS]
    if unknown:
        p.error(f"--algos: {', '.join(unknown)} not among {', '.join(ALGOS)}")
    info, t_start = machine(), time.perf_counter()
    runs = []
    for r in range(args.repeats):
        for algo in (algos if r % 2 == 0 else algos[::-1]):
            row = one_run(args, algo)
            row["repeat"] = r
            runs.append(row)
            print(f"  {algo:17s} repeat {r}: {row['env_steps_per_s']:7.0f} env steps/s "
                  f"({row['update_ms']:.2f} ms/update)", file=sys.stderr, flush=True)
    rates = {a: statistics.median(x["env_steps_per_s"] for x in runs if x["algo"] == a) for a in algos}
    cost = {a: round(100.0 * rates["dqn"] / rates[a], 1) for a in algos}
    result = {
        "cost_percent": cost, "cost_percent_range": cost_range(runs, algos),
        "paper_cost_percent": {a: PAPER_COST[a] for a in algos},
        "env_steps_per_s": {a: round(v, 1) for a, v in rates.items()},
        "env": args.env, "runtime": args.runtime, "actors": args.actors, "steps": args.steps,
        "repeats": args.repeats, "device": runs[0]["device"], "machine": info,
        "command": "python bench/cost.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "bench_seconds": round(time.perf_counter() - t_start, 1), "runs": runs,
    }
    print_table(result)
    out = Path(args.out or ROOT / "bench" / "results" / f"cost-{info['cpu_count']}cpu-{result['device']}.json")
    write_result(out, result)
    return 0


def cost_range(runs: list[dict], algos: list[str]) -> dict:
    """Per method, the lowest and highest cost of one repeat against DQN's run in the same repeat: how far
    the median can be trusted on this machine."""
    def rate(algo, r):
        return next(x["env_steps_per_s"] for x in runs if x["algo"] == algo and x["repeat"] == r)

    repeats = sorted({x["repeat"] for x in runs})
    out = {}
    for a in algos:
        costs = [100.0 * rate("dqn", r) / rate(a, r) for r in repeats]
        out[a] = [round(min(costs), 1), round(max(costs), 1)]
    return out


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['env']}, {result['runtime']} runner, {result['steps']} steady-state env steps × "
          f"{result['repeats']} repeats, on {m['cpu']} ({m['cpu_count']} CPUs), learner on {result['device']}")
    runs = result["runs"]
    print("| algorithm | env steps/s (median) | runs | ms per update | cost vs DQN | per repeat | paper |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for algo, rate in result["env_steps_per_s"].items():
        mine = [r for r in runs if r["algo"] == algo]
        each = ", ".join(f"{r['env_steps_per_s']:.0f}" for r in mine)
        ms = statistics.median(r["update_ms"] for r in mine)
        lo, hi = result["cost_percent_range"][algo]
        print(f"| {algo} | {rate:.0f} | {each} | {ms:.2f} | {result['cost_percent'][algo]:.0f}% | "
              f"{lo:.0f}–{hi:.0f}% | {result['paper_cost_percent'][algo]:.0f}% |")


if __name__ == "__main__":
    run_script("bench/cost.py", main)
