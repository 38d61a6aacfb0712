"""Packed seeds against solo seeds: aggregate throughput of K seeds trained by one learner or by K learners.

    python bench/packed.py                         # β-DQN on MinAtar/Breakout; K = 1, 2, 4 (CPU) or 1, 4, 8, 16 (GPU)
    python bench/packed.py --ks 1,4 --steps 10000 --out /tmp/p.json

Two measurements per K, in one invocation:

- learner: the update alone, on random batches already on the host (no actors, no replay). Packed: one
  `PackedLearner` update for all K seeds; solo: K `Learner`s updated in turn in this process (what K
  processes sharing one GPU get, less their context switches). Aggregate seed-updates/s = K × updates/s.
- end to end: a grid of K seeds (`python -m learner.main --seeds 0-(K-1)`), packed (`--pack-seeds K`: one
  learner process) and solo (`--pack-seeds 1`: K learner processes side by side), each on a fresh local
  Ray cluster, resources declared so that all K solo runs run at once. Aggregate env steps/s is the sum of
  the seeds' steady-state rates (from their first update to their last; they run over the same period), and
  also total env steps over the grid's task time (start-up included).

Prints a table and writes JSON (default bench/results/packed-<cpus>cpu-<device>.json) with the machine,
every figure, `speedup_k4_over_k1` (end-to-end aggregate env steps/s of 4 packed seeds over 1 seed) and the
packed/solo ratio per K.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine, write_json  # noqa: E402
from beta_dqn.configuration.cli import build_parser  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve, settings  # noqa: E402
from beta_dqn.launcher.grid import grid_from_args  # noqa: E402
from learner.learner import Learner, LearnerSettings, pick_device  # noqa: E402
from learner.packed import PackedLearner  # noqa: E402


def learner_rates(args, k: int, device) -> dict:
    """Aggregate seed-updates/s of K seeds, packed and solo (in turn), on the same batches."""

    cfg, spec = resolve(Config.of(env=args.env, algo=args.algo, wandb="disabled", device=str(device)))
    cfgs = [dataclasses.replace(cfg, seed=s) for s in range(k)]
    rng = np.random.default_rng(0)
    packer = Learner.solo(settings(LearnerSettings, cfgs[0]), spec).packer

    def batch():
        n = cfg.batch_size
        return {"obs": packer.pack(rng.random((n, *spec.obs_shape)) < 0.1),
                "next_obs": packer.pack(rng.random((n, *spec.obs_shape)) < 0.1),
                "action": rng.integers(0, spec.n_actions, n), "reward": rng.standard_normal(n).astype(np.float32),
                "terminated": rng.random(n) < 0.05, "option": np.zeros(n, dtype=np.int64)}

    feed = [[batch() for _ in range(k)] for _ in range(16)]
    out = {"k": k}
    for mode in ("packed", "solo"):
        if mode == "packed":
            step = PackedLearner([settings(LearnerSettings, c) for c in cfgs], spec, device).update
        else:
            solos = [Learner.solo(settings(LearnerSettings, c), spec, device) for c in cfgs]

            def step(batches, solos=solos):
                return [learner.update(b) for learner, b in zip(solos, batches, strict=True)]
        for i in range(args.warmup):  # CUDA: eager warm-up and the graph's capture
            step(feed[i % 16])
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0, i = time.perf_counter(), 0
        while time.perf_counter() - t0 < args.learner_seconds:
            step(feed[i % 16])
            i += 1
        if device.type == "cuda":
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        out[f"{mode}_seed_updates_per_s"] = k * i / wall
        out[f"{mode}_update_ms"] = 1000 * wall / i  # one round: the pack's update, or K solo updates
    out["packed_over_solo"] = out["packed_seed_updates_per_s"] / out["solo_seed_updates_per_s"]
    return out


def end_to_end(args, k: int, packed: bool, gpus: int) -> dict:
    """A grid of K seeds, packed or solo; aggregate rates."""
    cpus = os.cpu_count()
    # all K solo runs at once: each declares 1/K of the machine, half for its learner, half for its actors
    learner_cpus = cpus / (2 * k)
    actor_cpus = cpus / (2 * k * args.actors)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["--env", args.env, "--algo", args.algo, "--seeds", f"0-{k - 1}", "--runtime", "ray",
                "--pack-seeds", str(k if packed else 1),
                "--actors", str(args.actors), "--total-steps", str(args.learning_starts + args.steps),
                "--learning-starts", str(args.learning_starts), "--eval-every", str(10**9), "--eval-episodes", "1",
                "--wandb", "disabled", "--progress", "false", "--device", args.device,
                "--learner-cpus", f"{learner_cpus:g}", "--actor-cpus", f"{actor_cpus:g}",
                "--learner-gpus", f"{(1.0 if packed else 1.0 / k) if gpus else 0:g}", "--out", f"{tmp}/grid"]
        grid = grid_from_args(vars(build_parser().parse_args(argv)))
        summary = grid.run()
        if summary["done"] != k:
            raise RuntimeError(f"grid of {k} ({'packed' if packed else 'solo'}) failed: {summary}")
        runs = [json.loads((Path(r["out"]) / "summary.json").read_text()) for r in grid.runs]
    steady = [r["throughput"] for r in runs]
    start = min(row["task"]["started"] for row in summary["runs"])
    end = max(row["task"]["ended"] for row in summary["runs"])
    return {"k": k, "mode": "packed" if packed else "solo", "device": runs[0]["device"],
            "env_steps_per_s": sum(t["steady_env_steps_per_s"] for t in steady),
            "updates_per_s": sum(t["steady_updates_per_s"] for t in steady),
            "env_steps_per_s_with_startup": sum(r["env_steps"] for r in runs) / (end - start),
            "per_seed_env_steps_per_s": [round(t["steady_env_steps_per_s"], 1) for t in steady],
            "update_ms": sum(t["update_ms"] for t in steady) / k,
            "learner_update_fraction": sum(t["learner_update_fraction"] for t in steady) / k,
            "steady_seconds": min(t["steady_seconds"] for t in steady),
            "task_seconds": end - start}


def parse(argv=None):
    p = OneLineParser(prog="bench/packed.py", description=__doc__.split("\n")[0])
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--algo", default="beta_dqn")
    p.add_argument("--ks", default="", help="comma-separated pack sizes (default 1,2,4 on CPU, 1,4,8,16 on a GPU)")
    p.add_argument("--actors", type=int, default=1, help="actors per seed")
    p.add_argument("--steps", type=int, default=20_000, help="env steps per seed after learning starts")
    p.add_argument("--learning-starts", type=int, default=5_000)
    p.add_argument("--learner-seconds", type=float, default=4.0, help="seconds of each learner-only measurement")
    p.add_argument("--warmup", type=int, default=5, help="learner-only: updates before timing")
    p.add_argument("--device", default="auto")
    p.add_argument("--skip-end-to-end", action="store_true")
    p.add_argument("--out", default="", help="JSON path (default bench/results/packed-<cpus>cpu-<device>.json)")
    args = p.parse_args(argv)
    try:
        args.k_list = [int(x) for x in args.ks.split(",")] if args.ks else []
        if any(k < 1 for k in args.k_list):
            raise ValueError
    except ValueError:
        p.error(f"--ks: expected comma-separated positive integers, got {args.ks!r}")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    device = pick_device(args.device)
    gpus = torch.cuda.device_count() if device.type == "cuda" else 0
    ks = args.k_list or ([1, 4, 8, 16] if gpus else [1, 2, 4])
    t0 = time.perf_counter()
    torch.set_num_threads(1)  # as a run's learner (--learner-threads 1)
    out = Path(args.out or ROOT / "bench" / "results" / f"packed-{os.cpu_count()}cpu-{device.type}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    learner, e2e = [], []
    host = machine()  # before the first write: the results file is in the repo, and would read as a change
    # every figure is printed and written as it comes: a bench stopped halfway keeps what it measured
    for k in ks:
        learner.append(learner_rates(args, k, device))
        print(json.dumps(learner[-1]), flush=True)
        write(out, summarise(args, argv, ks, device, t0, learner, e2e, host))
    if not args.skip_end_to_end:
        for k in ks:  # solo then packed (K = 1: once, it is both)
            for packed in (False, True) if k > 1 else (False,):
                e2e.append(end_to_end(args, k, packed=packed, gpus=gpus))
                print(json.dumps(e2e[-1]), flush=True)
                write(out, summarise(args, argv, ks, device, t0, learner, e2e, host))
    result = summarise(args, argv, ks, device, t0, learner, e2e, host)
    print_table(result)
    write(out, result)
    print(f"\nwritten: {out}")
    return 0


def write(path: Path, result: dict) -> None:
    write_json(path, result)


def summarise(args, argv, ks, device, t0, learner: list, e2e: list, host: dict) -> dict:
    rate = {(r["k"], r["mode"]): r["env_steps_per_s"] for r in e2e}
    return {
        "env": args.env, "algo": args.algo, "actors_per_seed": args.actors, "device": str(device),
        "speedup_k4_over_k1": round(rate[(4, "packed")] / rate[(1, "solo")], 3) if (4, "packed") in rate else None,
        "packed_over_solo": {str(k): round(rate[(k, "packed")] / rate[(k, "solo")], 3)
                             for k in ks if k > 1 and (k, "packed") in rate},
        "packed_over_one_seed": {str(k): round(rate[(k, "packed")] / rate[(1, "solo")], 3)
                                 for k in ks if k > 1 and (k, "packed") in rate and (1, "solo") in rate},
        "machine": host, "command": "python bench/packed.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "bench_seconds": round(time.perf_counter() - t0, 1), "learner": learner, "end_to_end": e2e,
    }


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['algo']} on {result['env']}, {m['cpu_count']} CPUs ({m['cpu']}), {m['gpu'] or 'no GPU'}, "
          f"commit {m['commit']}")
    print("\nlearner alone (aggregate seed-updates/s)")
    print(f"{'K':>3} {'packed':>10} {'solo, in turn':>14} {'packed/solo':>12} {'pack update ms':>15}")
    for r in result["learner"]:
        print(f"{r['k']:>3} {r['packed_seed_updates_per_s']:>10,.0f} {r['solo_seed_updates_per_s']:>14,.0f} "
              f"{r['packed_over_solo']:>12.2f} {r['packed_update_ms']:>15.2f}")
    if result["end_to_end"]:
        print(f"\nend to end, {result['actors_per_seed']} actor(s) per seed (aggregate env steps/s)")
        print(f"{'K':>3} {'mode':>7} {'steady':>9} {'with start-up':>14} {'updates/s':>10} {'per seed':>30}")
        for r in result["end_to_end"]:
            per_seed = ", ".join(f"{x:,.0f}" for x in r["per_seed_env_steps_per_s"][:6])
            print(f"{r['k']:>3} {r['mode']:>7} {r['env_steps_per_s']:>9,.0f} "
                  f"{r['env_steps_per_s_with_startup']:>14,.0f} {r['updates_per_s']:>10,.0f} {per_seed:>30}")
        print(f"\npacked / solo (same K): {result['packed_over_solo']}; packed K / one seed: "
              f"{result['packed_over_one_seed']}; speedup_k4_over_k1: {result['speedup_k4_over_k1']}")


if __name__ == "__main__":
    run_script("bench/packed.py", main)
