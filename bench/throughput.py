"""Throughput of the whole system: env steps/s end to end, where the learner's time goes, startup, memory.

    python bench/throughput.py                       # MinAtar/Breakout, 1, 2, 4 and 32 actors, both algorithms
    python bench/throughput.py --actors 4 --steps 10000 --out /tmp/t.json
    python bench/throughput.py --actors 4 --baseline /tmp/before   # this checkout against another one
    python bench/throughput.py --skip-end-to-end --actors 32        # the actors alone (bench/results/actors-*)

For every actor count it runs β-DQN and DQN back to back (ABBA order across actor counts, so drift in a
noisy machine falls on both), each a real `beta_dqn.driver.run.Run` on a fresh local Ray cluster at the paper's
replay ratio 0.25, batch 32 and networks. Rates are taken in the steady state (from the first update to
the last); startup is the time from the run's construction (Ray's start included) until the first
transition and until every actor has delivered its first chunk. Then it measures the actors alone
(the learner paused: the largest actor count collecting back to back for a fixed time): DQN, and β-DQN with
its actors reaching the bandit once per chunk (`--arm-exchange chunk`, Ray's default) and once per episode,
with the bandit's arm lag; and one actor in this process (`bench/breakdown.py`'s measurement, no Ray), so the
β-DQN/DQN cost ratio of the actors on Ray can be set against the ratio of their arithmetic. It prints a
table and writes JSON with the machine, the versions, every measurement, and the headline keys of the best
configuration. `--skip-end-to-end` measures only the actors.

With `--baseline DIR` (a checkout of other code, e.g. `git worktree add DIR <commit>`), the same bench runs
`--repeats` times on each, alternating (ABBA), each as a process of its own; it prints every configuration's
env steps/s on both and their ratio, and writes the JSON of both sides.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# every actor's lines in the log, not deduplicated: read when Ray is imported
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

from bench.breakdown import actor_rows  # noqa: E402
from bench.machine import machine, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve, settings  # noqa: E402
from beta_dqn.driver.outputs import actor_fractions  # noqa: E402
from beta_dqn.driver.run import Run  # noqa: E402
from beta_dqn.driver.runtime import RayBackend, build, make_replay  # noqa: E402
from learner.learner import Learner, LearnerSettings, pick_device  # noqa: E402

ALGOS = ("beta_dqn", "dqn")
# of the actors' wall time: stepping and acting, the insert's round trip to the replay, waiting for the next chunk
ACTOR_FRACTIONS = ("actor_busy_fraction", "actor_insert_fraction", "actor_idle_fraction")


def config(args, algo: str, actors: int, out: str, arm_exchange: str = "auto"):
    extra = {"envs_per_actor": args.envs_per_actor} if args.envs_per_actor else {}
    cfg = Config.of(env=args.env, algo=algo, actors=actors, total_steps=args.learning_starts + args.steps, **extra,
                 arm_exchange=arm_exchange,
                 learning_starts=args.learning_starts, eval_every=10**9, eval_episodes=1, device=args.device,
                 out=out, wandb="disabled", progress=False, log_every=1.0, seed=args.seed)
    return resolve(cfg)


def end_to_end(args, algo: str, actors: int) -> dict:
    """One training run; its steady-state rates, learner time split, staleness, startup and memory."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = config(args, algo, actors, tmp)
        summary = Run(cfg, spec).run()
    t = summary["throughput"]
    return {"algo": algo, "actors": actors, "device": summary["device"],
            "env_steps_per_s": t["steady_env_steps_per_s"], "updates_per_s": t["steady_updates_per_s"],
            "replay_ratio": t["steady_updates_per_s"] / t["steady_env_steps_per_s"],
            "update_ms": t["update_ms"], "learner_update_fraction": t["learner_update_fraction"],
            "learner_wait_fraction": t["learner_wait_fraction"], "learner_idle_fraction": t["learner_idle_fraction"],
            "staleness_median": t["staleness_median"], "staleness_p95": t["staleness_p95"],
            **{k: t.get(k) for k in ACTOR_FRACTIONS},
            "first_transition_s": t["first_transition_s"], "all_actors_ready_s": t["all_actors_ready_s"],
            "peak_rss_gb": summary["peak_rss_gb"], "steady_seconds": t["steady_seconds"]}


def actors_only(args, algo: str, actors: int, seconds: float, arm_exchange: str = "auto") -> dict:
    """The actors with the learner paused: every actor collects chunks back to back for `seconds` (β-DQN: and
    how late the bandit's arms were, `SlidingWindowBandit.lag`)."""
    lag = None
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = config(args, algo, actors, tmp, arm_exchange)
        backend = RayBackend(cfg.address)
        try:
            parts = build(cfg, spec, backend, make_replay(cfg, spec, backend, Path(tmp)).ports)
            learner = Learner.solo(settings(LearnerSettings, cfg), spec)
            weights = backend.put(learner.weights())
            handles = parts.actors
            # warm: every actor has its weights and has acted once (past learning_starts: arms in use)
            backend.get([backend.call(h, "collect", cfg.chunk_steps, weights, 0, cfg.learning_starts)
                         for h in handles])
            steps, acting, inserting, t0 = 0, 0.0, 0.0, time.perf_counter()
            inflight = {backend.call(h, "collect", cfg.chunk_steps, None, 0, cfg.learning_starts): h
                        for h in handles}
            while time.perf_counter() - t0 < seconds:
                for fut in backend.ready(list(inflight), block=True):
                    h = inflight.pop(fut)
                    stats = backend.get(fut)
                    steps += stats["steps"]
                    acting, inserting = acting + stats["seconds"], inserting + stats["insert_seconds"]
                    inflight[backend.call(h, "collect", cfg.chunk_steps, None, 0, cfg.learning_starts)] = h
            wall = time.perf_counter() - t0
            backend.get(list(inflight))
            if not parts.arm_local:
                lag = backend.get(backend.call(parts.arm_source, "summary"))["lag"]
        finally:
            backend.shutdown()
    # where the actors' time went (the chunks counted: those that returned inside the window)
    return {"algo": algo, "actors": actors, "arm_exchange": cfg.value("arm_exchange") if algo == "beta_dqn" else None,
            "env_steps_per_s": steps / wall, "arm_lag": lag, **actor_fractions(acting, inserting, actors * wall)}


def actors_alone(args, actors: int) -> dict:
    """The actors' β-DQN/DQN cost ratio on Ray (learner paused; β-DQN with each `--arm-exchange`) against the
    same ratio for one actor in this process (no Ray, no round trips)."""
    rows = [actors_only(args, "beta_dqn", actors, args.actor_seconds, "chunk"),
            actors_only(args, "dqn", actors, args.actor_seconds),
            actors_only(args, "beta_dqn", actors, args.actor_seconds, "episode")]
    for r in rows:
        print(f"  actors alone: {r['algo']:9s} {r['arm_exchange'] or '':8s} {r['env_steps_per_s']:7.0f} env steps/s",
              file=sys.stderr)

    layout = args.envs_per_actor or Config.envs_per_actor
    local = actor_rows(args.env, args.in_process_seconds, layouts=(layout,))
    speed = {r["algo"]: r["env_steps_per_s"] for r in local}
    in_process = speed["dqn"] / speed["beta_dqn"]
    dqn = rows[1]["env_steps_per_s"]
    ratio = {r["arm_exchange"]: dqn / r["env_steps_per_s"] for r in rows if r["algo"] == "beta_dqn"}
    return {"rows": rows, "in_process": [{k: r[k] for k in ("algo", "envs_per_actor", "env_steps_per_s")}
                                         for r in local],
            "in_process_ratio": round(in_process, 3),
            "actors_only_ratio": round(ratio["chunk"], 3), "actors_only_ratio_episode": round(ratio["episode"], 3),
            # the goal: ≤ 1.2 (the actors on Ray cost no more, relatively, than their arithmetic)
            "actors_only_over_in_process": round(ratio["chunk"] / in_process, 3),
            "actors_only_over_in_process_episode": round(ratio["episode"] / in_process, 3)}


def parse(argv=None):
    # no abbreviations: compare mode forwards the command line but --baseline, --repeats and --out, by their names
    p = OneLineParser(prog="bench/throughput.py", description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--actors", default="1,2,4,32", help="comma-separated actor counts")
    p.add_argument("--steps", type=int, default=20_000, help="steady-state env steps per run (after warm-up)")
    p.add_argument("--learning-starts", type=int, default=5_000)
    p.add_argument("--envs-per-actor", type=int, default=0, help="0: the run's default")
    p.add_argument("--actor-seconds", type=float, default=8.0, help="seconds of each actors-only measurement")
    p.add_argument("--in-process-seconds", type=float, default=4.0, help="seconds of each in-process measurement")
    p.add_argument("--skip-end-to-end", action="store_true", help="measure only the actors (alone and in-process)")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="", help="JSON path (default bench/results/throughput-<cpus>cpu-<device>.json; "
                                              "with --skip-end-to-end actors-<cpus>cpu-<device>.json)")
    p.add_argument("--baseline", default="", help="another checkout: run the bench on it too, alternating")
    p.add_argument("--repeats", type=int, default=2, help="with --baseline: runs on each side")
    args = p.parse_args(argv)
    if args.baseline and not (Path(args.baseline) / "bench" / "throughput.py").is_file():
        p.error(f"--baseline: no bench/throughput.py in {args.baseline!r}")
    if args.repeats < 1:
        p.error(f"--repeats: must be >= 1, got {args.repeats}")
    try:
        args.actor_counts = [int(a) for a in args.actors.split(",")]
        if not args.actor_counts or min(args.actor_counts) < 1:
            raise ValueError
    except ValueError:
        p.error(f"--actors: expected comma-separated positive integers, got {args.actors!r}")
    return args


def compare(args, argv: list[str]) -> int:
    """This checkout against `--baseline`: the bench on each, `--repeats` times, ABBA; a table of ratios."""
    forward, skip = [], False
    for a in argv:  # the same measurement on both sides
        if skip:
            skip = False
        elif a in ("--baseline", "--repeats", "--out"):
            skip = True
        elif not a.startswith(("--baseline=", "--repeats=", "--out=")):
            forward.append(a)
    sides = {"this": ROOT, "baseline": Path(args.baseline).resolve()}
    results: dict[str, list[dict]] = {"this": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for side in (("this", "baseline") if rep % 2 == 0 else ("baseline", "this")):
                out = Path(tmp) / f"{side}-{rep}.json"
                subprocess.run([sys.executable, str(sides[side] / "bench" / "throughput.py"), *forward, "--out",
                                str(out)], cwd=sides[side], check=True, stdout=subprocess.DEVNULL)
                res = json.loads(out.read_text())
                res["command"] = res["command"].replace(str(out), out.name)  # no temporary path in the record
                results[side].append(res)
    rows = []
    print(f"\n{'algo':9s} {'actors':>6s} {'this':>9s} {'baseline':>9s} {'ratio':>6s}   (env steps/s, mean of "
          f"{args.repeats})")
    for run in results["this"][0]["runs"]:
        key = (run["algo"], run["actors"])
        mean = {side: sum(r["env_steps_per_s"] for res in results[side] for r in res["runs"]
                          if (r["algo"], r["actors"]) == key) / args.repeats for side in results}
        rows.append({"algo": key[0], "actors": key[1], **{f"{s}_env_steps_per_s": round(v, 1) for s, v in mean.items()},
                     "ratio": round(mean["this"] / mean["baseline"], 3)})
        print(f"{key[0]:9s} {key[1]:6d} {mean['this']:9.0f} {mean['baseline']:9.0f} {rows[-1]['ratio']:6.3f}")
    info = results["this"][0]["machine"]
    out = Path(args.out or ROOT / "bench" / "results" / f"throughput-compare-{info['cpu_count']}cpu.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    shown, after_flag = [], False  # the baseline's path as DIR: its commit names it, not this machine's path
    for a in argv:
        shown.append("DIR" if after_flag else "--baseline=DIR" if a.startswith("--baseline=") else a)
        after_flag = a == "--baseline"
    write_result(out, {"command": "python bench/throughput.py " + " ".join(shown), "machine": info,
                       "baseline_commit": results["baseline"][0]["machine"]["commit"], "rows": rows,
                       "this": results["this"], "baseline": results["baseline"]})
    return 0


def main(argv=None) -> int:
    args = parse(argv)
    if args.baseline:
        return compare(args, list(argv if argv is not None else sys.argv[1:]))
    info = machine()
    t_start = time.perf_counter()
    runs = []
    for k, n in enumerate([] if args.skip_end_to_end else args.actor_counts):
        for algo in (ALGOS if k % 2 == 0 else ALGOS[::-1]):  # ABBA across actor counts
            row = end_to_end(args, algo, n)
            runs.append(row)
            print(f"  {algo:9s} {n:3d} actors: {row['env_steps_per_s']:7.0f} env steps/s", file=sys.stderr)
    alone = actors_alone(args, max(args.actor_counts))
    result = {"env": args.env, "machine": info}
    if runs:
        def find(algo, n):
            return next(r for r in runs if r["algo"] == algo and r["actors"] == n)

        best_n = max(args.actor_counts, key=lambda n: find("beta_dqn", n)["env_steps_per_s"])
        beta, dqn = find("beta_dqn", best_n), find("dqn", best_n)
        big = [r for r in runs if r["actors"] == 32]
        result.update({
            "beta_dqn_env_steps_per_s": round(beta["env_steps_per_s"], 1),
            "dqn_env_steps_per_s": round(dqn["env_steps_per_s"], 1),
            # wall-clock cost per env step of β-DQN relative to DQN (the paper's "computational cost")
            "cost_ratio_beta_over_dqn": round(dqn["env_steps_per_s"] / beta["env_steps_per_s"], 3),
            "actors32_ready_s": max(r["first_transition_s"] for r in big) if big else None,  # all up, first chunk in
            "actors32_peak_rss_gb": round(max(r["peak_rss_gb"] for r in big), 2) if big else None,
            "learner_wait_fraction": round(beta["learner_wait_fraction"], 4),
            "staleness_p95": beta["staleness_p95"],
            "replay_ratio_achieved": round(beta["replay_ratio"], 4),
            "best_actors": best_n, "device": beta["device"]})
    else:
        result["device"] = str(pick_device(args.device))
    result.update({
        **{k: v for k, v in alone.items() if k not in ("rows", "in_process")},
        "command": "python bench/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "bench_seconds": round(time.perf_counter() - t_start, 1),
        "runs": runs, "actors_only": alone["rows"], "in_process": alone["in_process"],
    })
    print_table(result)
    device = "gpu" if result["device"].startswith("cuda") else "cpu"
    kind = "actors" if args.skip_end_to_end else "throughput"  # a partial bench keeps the full one's file
    out = Path(args.out or ROOT / "bench" / "results" / f"{kind}-{info['cpu_count']}cpu-{device}.json")
    write_result(out, result)
    return 0


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['env']} on {m['cpu']} ({m['cpu_count']} CPUs), learner on {result['device']}"
          + (f" ({m['gpu']})" if m["gpu"] else "") + f"; torch {m['torch']}, ray {m['ray']}")
    cols = ("algo", "actors", "env steps/s", "updates/s", "ratio", "update ms", "learner busy", "wait",
            "idle", "actors busy/insert/idle", "stale p50/p95", "first step s", "all ready s", "peak RSS GB")
    print(" | ".join(cols))
    for r in result["runs"]:
        print(" | ".join([r["algo"], str(r["actors"]), f"{r['env_steps_per_s']:.0f}", f"{r['updates_per_s']:.0f}",
                          f"{r['replay_ratio']:.3f}", f"{r['update_ms']:.2f}", f"{r['learner_update_fraction']:.2f}",
                          f"{r['learner_wait_fraction']:.3f}", f"{r['learner_idle_fraction']:.3f}",
                          "/".join("?" if r.get(k) is None else f"{r[k]:.2f}" for k in ACTOR_FRACTIONS),
                          f"{r['staleness_median']:.0f}/{r['staleness_p95']:.0f}", f"{r['first_transition_s']:.1f}",
                          f"{r['all_actors_ready_s']:.1f}", f"{r['peak_rss_gb']:.2f}"]))
    for r in result["actors_only"]:
        lag = r["arm_lag"]
        how = f", --arm-exchange {r['arm_exchange']}" if r["arm_exchange"] else ""
        late = f"; arm lag median {lag['median']:.0f}, p95 {lag['p95']:.0f}, max {lag['max']} episodes" if lag else ""
        print(f"actors only ({r['algo']}{how}, {r['actors']} actors, learner paused): "
              f"{r['env_steps_per_s']:.0f} env steps/s{late}; of the actors' time: busy "
              f"{r['actor_busy_fraction']:.2f}, insert {r['actor_insert_fraction']:.2f}, "
              f"idle {r['actor_idle_fraction']:.2f}")
    for r in result["in_process"]:
        print(f"one actor in this process ({r['algo']}, {r['envs_per_actor']} envs): {r['env_steps_per_s']:.0f} "
              "env steps/s")
    print()
    for k in ("beta_dqn_env_steps_per_s", "dqn_env_steps_per_s", "cost_ratio_beta_over_dqn", "actors32_ready_s",
              "actors32_peak_rss_gb", "learner_wait_fraction", "staleness_p95", "replay_ratio_achieved",
              "best_actors", "in_process_ratio", "actors_only_ratio", "actors_only_ratio_episode",
              "actors_only_over_in_process", "actors_only_over_in_process_episode"):
        if k in result:
            print(f"{k:36s} {result[k]}")


if __name__ == "__main__":
    run_script("bench/throughput.py", main)
