"""The replay service, memory (Ray actor shards) against Redis (redis-local servers), at 1 and 4 shards.

    python bench/replay.py                  # MinAtar/Breakout transitions; ~4 min here
    python bench/replay.py --run-steps 0    # the micro-benchmarks only

Per backend and shard count: transitions inserted per second (chunks of 64 real MinAtar transitions, as
actors send them, from one client), batches of 32 sampled per second (uniform across shards, as the
learner draws them, from one client), and bytes per stored transition (memory: the ring's arrays; Redis:
the servers' used memory over the transitions stored). Then a 32-actor MinAtar/Breakout β-DQN run per
configuration, for the learner's fraction of time waiting on replay (goal: under 5%). Prints a table,
writes JSON.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import ray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.envs import env_spec, make_env  # noqa: E402
from bench.machine import check_ranges, machine, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve, settings  # noqa: E402
from beta_dqn.driver.cluster import start_local_cluster  # noqa: E402
from beta_dqn.driver.run import Run  # noqa: E402
from replay_service.buffer import ReplayBuffer, make_packer  # noqa: E402
from replay_service.client import concat, split_batch  # noqa: E402
from replay_service.redis_replay import RedisReplay, RedisSettings  # noqa: E402

CONFIGS = [("memory", 1), ("memory", 4), ("redis-local", 1), ("redis-local", 4)]


def real_chunks(env: str, n_chunks: int, chunk: int = 64):
    spec = env_spec(env)
    packer = make_packer(spec)
    e, rng = make_env(env, seed=0), np.random.default_rng(0)
    obs, _ = e.reset(seed=0)
    rows = {k: [] for k in ("obs", "next_obs", "action", "reward", "terminated", "truncated")}
    for _ in range(n_chunks * chunk):
        a = int(rng.integers(spec.n_actions))
        nxt, r, term, trunc, _ = e.step(a)
        for k, v in zip(rows, (obs, nxt, a, r, term, trunc), strict=True):
            rows[k].append(v)
        obs = e.reset()[0] if term or trunc else nxt
    arrays = {k: np.asarray(v) for k, v in rows.items()}
    arrays["obs"], arrays["next_obs"] = packer.pack(arrays["obs"]), packer.pack(arrays["next_obs"])
    arrays["reward"] = arrays["reward"].astype(np.float32)
    chunks = [{k: v[i * chunk:(i + 1) * chunk] for k, v in arrays.items()} for i in range(n_chunks)]
    for c in chunks:
        c.update(actor=0, version=0, episode=np.zeros(chunk, dtype=np.int64))
    return spec, packer, chunks


def micro(args, kind: str, shards: int) -> dict:
    spec, packer, chunks = real_chunks(args.env, args.chunks)
    n = sum(len(c["action"]) for c in chunks)
    capacity = n  # everything fits: the size measured is the size of n transitions
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "memory":
            handles = [ray.remote(ReplayBuffer).remote(capacity // shards, packer.packed_shape,
                                                       packer.packed_dtype.name, s) for s in range(shards)]
            ray.get([h.stats.remote() for h in handles])
            t = time.perf_counter()
            for i, c in enumerate(chunks):  # as actors do: one call per chunk, acknowledged
                ray.get(handles[i % shards].insert.remote(c))
            insert_s = time.perf_counter() - t
            sizes = np.array([ray.get(h.stats.remote())["size"] for h in handles])
            t = time.perf_counter()
            for _ in range(args.batches):
                counts = split_batch(sizes, 32, rng)
                concat(ray.get([handles[s].sample.remote(int(k)) for s, k in enumerate(counts) if k > 0]))
            sample_s = time.perf_counter() - t
            one = ReplayBuffer(1, packer.packed_shape, packer.packed_dtype.name)  # one slot: what it allocates
            bytes_per = sum(column.nbytes for column in one.columns.values())
            for h in handles:
                ray.kill(h)
        else:
            cfg, _ = resolve(Config.of(env=args.env, replay="redis-local", replay_shards=shards,
                                    replay_capacity=capacity, out=tmp, wandb="disabled"))
            replay = RedisReplay(settings(RedisSettings, cfg), spec, Path(tmp), concurrent=False)
            try:
                used0 = sum(int(s.client.info("memory")["used_memory"]) for s in replay.shards)
                t = time.perf_counter()
                for i, c in enumerate(chunks):
                    replay.shards[i % shards].insert(c)
                insert_s = time.perf_counter() - t
                for i, c in enumerate(chunks):  # what the run would have harvested
                    replay.added(i % shards, len(c["action"]))
                used1 = sum(int(s.client.info("memory")["used_memory"]) for s in replay.shards)
                t = time.perf_counter()
                for _ in range(args.batches):
                    replay.sample()
                sample_s = time.perf_counter() - t
                bytes_per = (used1 - used0) / n
            finally:
                replay.close()
    return {"backend": kind, "shards": shards, "inserts_per_s": n / insert_s,
            "batches_per_s": args.batches / sample_s, "bytes_per_transition": bytes_per}


def learner_wait(args, kind: str, shards: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cfg, spec = resolve(Config.of(env=args.env, actors=32, total_steps=5000 + args.run_steps, replay=kind,
                                   replay_shards=shards, eval_every=10**9, eval_episodes=1, wandb="disabled",
                                   progress=False, out=tmp, log_every=2.0))
        summary = Run(cfg, spec).run()
    t = summary["throughput"]
    return {"backend": kind, "shards": shards, "learner_wait_fraction": t["learner_wait_fraction"],
            "env_steps_per_s": t["steady_env_steps_per_s"], "replay_rejected": summary["replay_rejected"]}


def main(argv=None) -> int:
    p = OneLineParser(prog="bench/replay.py", description=__doc__.split("\n")[0])
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--chunks", type=int, default=300, help="chunks of 64 transitions inserted per configuration")
    p.add_argument("--batches", type=int, default=1000, help="batches of 32 sampled per configuration")
    p.add_argument("--run-steps", type=int, default=15_000, help="steady-state steps of each 32-actor run; 0: none")
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    # (4 chunks at least: each of 4 Redis shards holds one chunk of the replay sized to them)
    check_ranges(p, ("--chunks", args.chunks, 4, 100_000), ("--batches", args.batches, 1, 1_000_000),
                 ("--run-steps", args.run_steps, 0, 10_000_000))

    info = machine()
    start_local_cluster(ray, {}, num_cpus=os.cpu_count())  # free ports, as a run's cluster
    try:
        rows = [micro(args, kind, shards) for kind, shards in CONFIGS]
    finally:
        ray.shutdown()
    runs = [learner_wait(args, kind, shards) for kind, shards in CONFIGS] if args.run_steps else []
    print(f"\nreplay, {args.env}, {info['cpu']} ({info['cpu_count']} CPUs), one client")
    print("backend | shards | inserts/s | batches/s (32) | bytes/transition | learner waiting (32 actors) "
          "| env steps/s")
    for r in rows:
        run = next((x for x in runs if (x["backend"], x["shards"]) == (r["backend"], r["shards"])), None)
        wait = f"{run['learner_wait_fraction']:.1%}" if run else "-"
        rate = f"{run['env_steps_per_s']:.0f}" if run else "-"
        print(f"{r['backend']} | {r['shards']} | {r['inserts_per_s']:.0f} | {r['batches_per_s']:.0f} | "
              f"{r['bytes_per_transition']:.0f} | {wait} | {rate}")
    out = Path(args.out or ROOT / "bench" / "results" / f"replay-{info['cpu_count']}cpu.json")
    write_result(out, {"env": args.env, "machine": info, "micro": rows, "runs": runs,
                       "command": "python bench/replay.py " + " ".join(argv or sys.argv[1:])})
    return 0


if __name__ == "__main__":
    run_script("bench/replay.py", main)
