"""A grid against its machine's limit: how many env steps per second a grid of runs gets out of this machine.

    python bench/grid.py                                   # DQN then β-DQN, MinAtar/Breakout, 4 runs of 20k steps
    python bench/grid.py --algos dqn --runs 4 --steps 20000 --modes ray,serial

Measures, in one sitting (run it on a quiet machine: nothing else running):

(a) **The CPU-bound limit.** One run of each method in this process (the serial runner, one torch thread, β-DQN's
    second thread off, the grid's 4 actors × 4 envs stepped in turn), of the grid's runs' length: its process CPU
    seconds per env step, learner and actors together (`resource.getrusage` over the whole run, warm-up and final
    evaluation included, as the grid's runs do them; the steady state's alone is recorded beside it).
    The limit is the machine's cores over that: the env steps per second of a grid whose every core does nothing
    but this work.
(b) **A grid of `--runs` runs** (seeds 0..runs-1, `python -m learner.main ... --seeds`, a fresh process each), in
    each mode of `--modes`, its aggregate env steps per second = runs × steps / the command's wall clock (Ray's
    start, each run's start and its final evaluation included: what a user waits for):
    - `ray`: each run a Ray run of 4 actors declaring the learner's 1 CPU + 4 × 0.25 (what `--runtime ray`
      gives a grid's runs);
    - `ray-half`: the same runs declaring half of that (`--learner-cpus 0.5 --actor-cpus 0.125`): two at once on 2
      cores;
    - `serial`: each run one process (`--runtime serial --beta-thread false`), one per core;
    - `default`: the grid as it runs with no flag of these (`--runtime auto`: serial, one a core).
(c) **One run end to end** (Ray, 4 actors, the default flags) against its learner-only ceiling: the env steps per
    second the learner would allow if its updates cost what they cost alone and nothing else took a core,
    1 / (update seconds × replay ratio); alone is a serial run's update with the run's learner threads (β-DQN: β's
    second thread on, as in the Ray run).

Prints a table and writes JSON under bench/results/ with the machine, the versions and the commit.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import check_ranges, machine, run_main, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve  # noqa: E402
from beta_dqn.driver.run import Run  # noqa: E402

MODES = {
    "ray": ["--runtime", "ray"],  # each run on Ray, 1 + 4 × 0.25 CPUs declared
    "ray-half": ["--runtime", "ray", "--learner-cpus", "0.5", "--actor-cpus", "0.125"],
    "serial": ["--runtime", "serial", "--beta-thread", "false"],
    "default": [],  # no runtime flag: --runtime auto (a grid's runs serial, one a core)
}
WARMUP = 5_000  # the spec's learning starts: no update before it


class _CpuAtFirstUpdate:
    """The process's CPU seconds (user + system, all threads) at the run's first learner update."""

    def __init__(self):
        self.at: float | None = None

    def __call__(self, *_):
        if self.at is None:
            self.at = _cpu()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def in_process(env: str, algo: str, steps: int, beta_thread: bool = False) -> dict:
    """(a): one serial run here; its CPU seconds per env step from its first update to its end."""
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = resolve(Config.of(
            env=env, algo=algo, seed=0, runtime="serial", actors=4, envs_per_actor=4, total_steps=WARMUP + steps,
            learning_starts=WARMUP, eval_every=10**9, eval_episodes=1, eval_basic=False, learner_threads=1,
            beta_thread=beta_thread, out=tmp, wandb="disabled", progress=False, log_every=3600.0))
        run = Run(cfg, spec)
        first = _CpuAtFirstUpdate()
        learner_update = run.learner.update

        def update(batch):
            first()
            return learner_update(batch)

        run.learner.update = update
        begin = _cpu()
        summary = run.run()
        end = _cpu()
    t = summary["throughput"]
    # the limit's work is a whole run's, as the grid's runs do it: warm-up, updates and the final evaluation
    # (the steady state alone, from the first update, is its `steady_cpu_seconds_per_env_step`)
    return {"algo": algo, "steady_env_steps_per_s": t["steady_env_steps_per_s"], "update_ms": t["update_ms"],
            "cpu_seconds_per_env_step": (end - begin) / summary["env_steps"],
            "steady_cpu_seconds_per_env_step": (end - first.at) / (summary["env_steps"] - WARMUP),
            "cpu_seconds": end - begin}


def grid(env: str, algo: str, runs: int, steps: int, mode: str) -> dict:
    """(b): a grid of `runs` seeds in a fresh process; its aggregate env steps per second, by its wall clock."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["--env", env, "--algo", algo, "--seeds", f"0-{runs - 1}", "--total-steps", str(WARMUP + steps),
                "--eval-every", str(WARMUP + steps), "--eval-episodes", "2", "--eval-basic", "false", "--wandb",
                "disabled", "--progress", "false", "--json", "true", *MODES[mode]]
        _, wall = run_main("bench/grid.py", f"the {mode} grid of {algo}", [*args, "--out", str(Path(tmp) / "g")])
        rates = []
        for summary in Path(tmp, "g").glob("*/summary.json"):
            rates.append(json.loads(summary.read_text())["env_steps_per_s"])
    return {"algo": algo, "mode": mode, "runs": runs, "wall_seconds": round(wall, 2),
            "aggregate_env_steps_per_s": runs * (WARMUP + steps) / wall,
            "per_run_env_steps_per_s": sorted(round(r, 1) for r in rates),
            "command": " ".join(["-m", "learner.main", *args])}


def one_ray_run(env: str, algo: str, steps: int) -> dict:
    """(c): one Ray run of 4 actors, in a fresh process; its steady env steps per second and update time."""
    with tempfile.TemporaryDirectory() as tmp:
        done, _ = run_main("bench/grid.py", f"the Ray run of {algo}", [
            "--env", env, "--algo", algo, "--runtime", "ray", "--total-steps", str(WARMUP + steps), "--eval-every",
            str(WARMUP + steps), "--eval-episodes", "2", "--eval-basic", "false", "--wandb", "disabled", "--progress",
            "false", "--json", "true", "--out", str(Path(tmp) / "r")])
        summary = json.loads(done.stdout)
    t = summary["throughput"]
    return {"algo": algo, "steady_env_steps_per_s": t["steady_env_steps_per_s"], "update_ms": t["update_ms"]}


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser.script("bench/grid.py", __doc__)
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--algos", default="dqn,beta_dqn", help="comma-separated: dqn, beta_dqn")
    p.add_argument("--runs", type=int, default=4, help="runs in each grid (seeds 0..runs-1; at least 1)")
    p.add_argument("--steps", type=int, default=20_000, help="env steps of each run after its 5k warm-up")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated: {', '.join(MODES)}")
    p.add_argument("--out", default="", help="the JSON (default bench/results/grid-<cores>cpu.json)")
    args = p.parse_args(argv)
    algos = [a for a in args.algos.split(",") if a]
    modes = [m for m in args.modes.split(",") if m]
    if not algos or any(a not in ("dqn", "beta_dqn") for a in algos):
        p.error(f"--algos {args.algos!r}: give dqn, beta_dqn or both")
    if not modes or any(m not in MODES for m in modes):
        p.error(f"--modes {args.modes!r}: give some of {', '.join(MODES)}")
    check_ranges(p, ("--runs", args.runs, 1, 64), ("--steps", args.steps, 1_000, 10_000_000))
    info, cores, t0 = machine(), os.cpu_count() or 1, time.perf_counter()
    result = {"env": args.env, "runs": args.runs, "steps": args.steps, "warmup": WARMUP, "cores": cores,
              "machine": info,
              "command": "python bench/grid.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "methods": {}}
    for algo in algos:
        alone = in_process(args.env, algo, args.steps)
        limit = cores / alone["cpu_seconds_per_env_step"]
        print(f"{algo}: in-process {alone['steady_env_steps_per_s']:.0f} env steps/s, "
              f"{1e3 * alone['cpu_seconds_per_env_step']:.3f} CPU ms per env step -> limit {limit:.0f} on {cores} "
              f"cores", file=sys.stderr, flush=True)
        grids = []
        for mode in modes:
            g = grid(args.env, algo, args.runs, args.steps, mode)
            g["of_limit"] = g["aggregate_env_steps_per_s"] / limit
            grids.append(g)
            print(f"  grid {mode}: {g['aggregate_env_steps_per_s']:.0f} env steps/s ({100 * g['of_limit']:.0f}% of "
                  f"the limit; {g['wall_seconds']:.0f} s)", file=sys.stderr, flush=True)
        ray_run = one_ray_run(args.env, algo, args.steps)
        # the update alone as the Ray run's learner makes it (β-DQN: β on its second thread)
        solo = in_process(args.env, algo, args.steps, beta_thread=True) if algo == "beta_dqn" else alone
        ceiling = 1.0 / (solo["update_ms"] / 1e3 * 0.25)  # the replay ratio's 0.25 updates per env step
        ray_run.update({"alone_update_ms": solo["update_ms"], "ceiling_env_steps_per_s": ceiling,
                        "of_ceiling": ray_run["steady_env_steps_per_s"] / ceiling})
        result["methods"][algo] = {"in_process": alone, "limit_env_steps_per_s": limit, "grids": grids,
                                   "one_run": ray_run}
    result["bench_seconds"] = round(time.perf_counter() - t0, 1)
    print_table(result)
    out = Path(args.out or ROOT / "bench" / "results" / f"grid-{cores}cpu.json")
    write_result(out, result)
    return 0


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['env']}, grids of {result['runs']} runs × {result['steps']:,} env steps after a "
          f"{result['warmup']:,}-step warm-up, on {m['cpu']} ({result['cores']} cores), commit {m['commit']}")
    if m.get("gpu"):
        print(f"(the learners ran on the {m['gpu']}: the limit counts CPU time only, and the grid's runs share "
              "the GPU, so 'of limit' (the grid's rate × the in-process CPU per step ÷ the cores) is no bound here)")
    print("| method | CPU ms per env step | limit (env steps/s) | grid mode | grid env steps/s | of limit | "
          "vs the Ray grid |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for algo, r in result["methods"].items():
        today = next((g for g in r["grids"] if g["mode"] == "ray"), None)
        for g in r["grids"]:
            ratio = f"{g['aggregate_env_steps_per_s'] / today['aggregate_env_steps_per_s']:.2f}×" if today else "—"
            print(f"| {algo} | {1e3 * r['in_process']['cpu_seconds_per_env_step']:.3f} | "
                  f"{r['limit_env_steps_per_s']:.0f} | {g['mode']} | {g['aggregate_env_steps_per_s']:.0f} | "
                  f"{100 * g['of_limit']:.0f}% | {ratio} |")
    print("\n| method | one Ray run, env steps/s (steady) | ms per update in it | alone | learner-only ceiling | "
          "of ceiling |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for algo, r in result["methods"].items():
        one = r["one_run"]
        alone = one.get("alone_update_ms", r["in_process"]["update_ms"])
        print(f"| {algo} | {one['steady_env_steps_per_s']:.0f} | {one['update_ms']:.2f} | {alone:.2f} | "
              f"{one['ceiling_env_steps_per_s']:.0f} | "
              f"{100 * one['of_ceiling']:.0f}% |")


if __name__ == "__main__":
    run_script("bench/grid.py", main)
