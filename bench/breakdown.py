"""Where the time goes, per learner update and per actor step, in one process (no Ray).

    python bench/breakdown.py                 # MinAtar/Breakout, learner on --device auto
    python bench/breakdown.py --device cpu --out /tmp/p.json

Learner: wall and CPU milliseconds of one update at batch 32 for DQN, β-DQN on one thread and β-DQN with
β on its second thread (and, on a GPU, both as CUDA graphs), alternating, on synthetic batches (the
update's cost does not depend on the data).
Actor: env steps/s of one actor's `collect` with `--envs-per-actor` 1, 2, 4 and 8 (past learning_starts,
so β-DQN acts with its arms, and the bandit in-process: no round trips), and the share of that time in
the numpy forward pass, the environment's step, and the rest (policies, bookkeeping).
Prints a table and writes JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.actor import Actor, ActorSettings  # noqa: E402
from bench.machine import machine, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve, settings  # noqa: E402
from learner.learner import Learner, LearnerSettings, pick_device  # noqa: E402
from learner.methods.numpy_net import NumpyNet  # noqa: E402
from meta_controller.bandit import FixedArm, SlidingWindowBandit  # noqa: E402
from replay_service.buffer import ReplayBuffer  # noqa: E402


def learner_rows(env: str, device: str, updates: int) -> list[dict]:
    torch.set_num_threads(1)
    variants = [("dqn", False, False), ("beta_dqn", False, False), ("beta_dqn", True, False)]
    if device == "cuda":
        variants += [("dqn", False, True), ("beta_dqn", False, True)]
    rows = {v: [] for v in variants}
    for _ in range(2):  # alternate, twice
        for algo, thread, graphs in variants:
            cfg, spec = resolve(Config.of(env=env, algo=algo, beta_thread=thread, cuda_graphs=graphs,
                                       wandb="disabled", device=device))
            learner = Learner.solo(settings(LearnerSettings, cfg), spec, pick_device(cfg.device))
            rng = np.random.default_rng(0)
            obs = rng.random((updates, 32, *spec.obs_shape)) < 0.1
            batches = [{"obs": learner.packer.pack(o), "next_obs": learner.packer.pack(o[::-1]),
                        "action": rng.integers(0, spec.n_actions, 32), "reward": np.zeros(32, np.float32),
                        "terminated": np.zeros(32, bool)} for o in obs]
            for b in batches[:20]:
                learner.update(b)
            sync = torch.cuda.synchronize if learner.device.type == "cuda" else (lambda: None)
            sync()
            t, c = time.perf_counter(), time.process_time()
            for b in batches:
                learner.update(b)
            sync()
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            rows[(algo, thread, graphs)].append((wall / updates, cpu / updates))
            learner.close()
    out = []
    for (algo, thread, graphs), samples in rows.items():
        wall = min(s[0] for s in samples)
        cpu = min(s[1] for s in samples)
        out.append({"algo": algo, "beta_thread": thread, "cuda_graphs": graphs, "device": device,
                    "update_ms": 1e3 * wall,
                    "update_cpu_ms": 1e3 * cpu})
    return out


def actor_rows(env: str, seconds: float, layouts: tuple[int, ...] = (1, 2, 4, 8)) -> list[dict]:
    """One actor's `collect` in this process, per algorithm and envs per actor in `layouts` (β-DQN's bandit
    asked once per episode, as the serial runner does: a call costs nothing here)."""
    rows = []
    for algo in ("beta_dqn", "dqn"):
        for epa in layouts:
            cfg, spec = resolve(Config.of(env=env, algo=algo, envs_per_actor=epa, learning_starts=0, wandb="disabled",
                                       runtime="serial"))
            learner = Learner.solo(settings(LearnerSettings, cfg), spec)
            window, returns = cfg.value("bandit_window"), cfg.value("bandit_returns")
            arms = SlidingWindowBandit(13, window, 0, returns) if algo == "beta_dqn" else FixedArm()
            replay = ReplayBuffer(cfg.replay_capacity, learner.packer.packed_shape, learner.packer.packed_dtype.name)
            actor = Actor(settings(ActorSettings, cfg), spec, 0, arms, replay)
            actor.collect(cfg.chunk_steps, learner.weights(), 0, 0)
            # time the forward pass and the env step by wrapping them for this measurement
            spent = {"forward": 0.0, "env": 0.0}
            real_call = NumpyNet.__call__

            def timed_call(self, *a, _real=real_call, _spent=spent, **k):
                t = time.perf_counter()
                try:
                    return _real(self, *a, **k)
                finally:
                    _spent["forward"] += time.perf_counter() - t

            def timed_env(env_step, _spent=spent):
                def step(a):
                    t = time.perf_counter()
                    try:
                        return env_step(a)
                    finally:
                        _spent["env"] += time.perf_counter() - t
                return step

            for env_ in actor.envs:
                env_.step = timed_env(env_.step)
            NumpyNet.__call__ = timed_call
            try:
                steps, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    steps += actor.collect(cfg.chunk_steps, None, 0, cfg.learning_starts)["steps"]
                wall = time.perf_counter() - t0
            finally:
                NumpyNet.__call__ = real_call
            rows.append({"algo": algo, "envs_per_actor": epa, "env_steps_per_s": steps / wall,
                         "us_per_step": 1e6 * wall / steps, "forward_share": spent["forward"] / wall,
                         "env_share": spent["env"] / wall,
                         "rest_share": 1 - (spent["forward"] + spent["env"]) / wall})
    return rows


def main(argv=None) -> int:
    p = OneLineParser(prog="bench/breakdown.py", description=__doc__.split("\n")[0])
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--device", default="auto")
    p.add_argument("--updates", type=int, default=300)
    p.add_argument("--actor-seconds", type=float, default=2.0, help="per actor configuration; 0 skips them")
    p.add_argument("--out", default="")
    args = p.parse_args(argv)

    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    if device == "auto":
        device = "cpu"
    learner = learner_rows(args.env, device, args.updates)
    actors = actor_rows(args.env, args.actor_seconds) if args.actor_seconds > 0 else []
    print(f"\nlearner update, batch 32, {args.env}, {device}"
          + (f" ({torch.cuda.get_device_name(0)})" if device == "cuda" else ""))
    print("algo | β thread | CUDA graph | wall ms | CPU ms (all threads)")
    for r in learner:
        print(f"{r['algo']} | {r['beta_thread']} | {r['cuda_graphs']} | {r['update_ms']:.2f} | "
              f"{r['update_cpu_ms']:.2f}")
    print(f"\none actor in-process (no Ray), {args.env}")
    print("algo | envs/actor | env steps/s | µs/step | forward | env step | rest")
    for r in actors:
        print(f"{r['algo']} | {r['envs_per_actor']} | {r['env_steps_per_s']:.0f} | {r['us_per_step']:.0f} | "
              f"{r['forward_share']:.0%} | {r['env_share']:.0%} | {r['rest_share']:.0%}")

    result = {"env": args.env, "machine": machine(), "learner": learner, "actor": actors,
              "command": "python bench/breakdown.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    out = Path(args.out or ROOT / "bench" / "results" / f"breakdown-{result['machine']['cpu_count']}cpu-{device}.json")
    write_result(out, result)
    return 0


if __name__ == "__main__":
    run_script("bench/breakdown.py", main)
