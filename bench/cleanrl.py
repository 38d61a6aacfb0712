"""Our serial runtime against CleanRL's `dqn.py` on CartPole-v1, at CleanRL's hyperparameters, in one sitting.

    python bench/cleanrl.py --cleanrl DIR --cleanrl-python PY       # 3 seeds × 100k steps each; ~2 min, 2 cores
    python bench/cleanrl.py --cleanrl DIR --cleanrl-python PY --steps 50000 --seeds 0

DIR is a checkout of github.com/vwxyzjn/cleanrl (its `cleanrl/dqn.py` and `cleanrl_utils/`); PY an interpreter
with CleanRL's own requirements (it pins gymnasium 0.29; its evaluation records video, which needs moviepy < 2
and pygame), e.g.:

    python -m venv /tmp/cleanrl-venv
    /tmp/cleanrl-venv/bin/pip install torch==2.13.0 gymnasium==0.29.1 tyro tensorboard "numpy<2" "moviepy<2" pygame

Both sides run the same DQN: CleanRL's defaults for CartPole-v1 (batch 128, one update every 10 env steps,
a hard target copy every 500, replay of 10,000, Adam at 2.5e-4, MSE loss, γ 0.99, ε 1 → 0.05 over half the run
after 10,000 steps of warm-up) set by our flags on ours (`--runtime serial --actors 1 --envs-per-actor 1`: one
environment, as CleanRL's). The networks differ: CleanRL's 120-84 MLP (10,934 parameters on CartPole), ours
spec §5's one hidden layer of 128 (898): ours does less arithmetic per update.
Both sides' torch on one thread (CleanRL's through `OMP_NUM_THREADS=1`; ours `--learner-threads 1`).

Per seed, alternating (CleanRL, ours): each side's env steps/s over its training (CleanRL's own last `SPS:`
line; ours its steady rate and its whole-run rate), each process's wall clock, and the final greedy return
over 10 episodes (ours: its final evaluation at `--eval-epsilon 0`; CleanRL: its saved network, loaded here
with `torch.load(weights_only=True)` and run greedily here on episode seeds of its own, 10,000 + 10 × seed + i:
not the episodes our evaluator plays; CleanRL's own evaluation, at ε 0.05, is recorded beside it). Prints a
table and writes JSON.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine, run_main, write_result  # noqa: E402
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402

ENV = "CartPole-v1"
EPISODES = 10
# CleanRL's dqn.py defaults (its Args), as our flags
OURS = ["--batch-size", "128", "--replay-ratio", "0.1", "--target-update", "500", "--replay-capacity", "10000",
        "--lr", "2.5e-4", "--loss", "mse", "--gamma", "0.99", "--eps-start", "1", "--eps-end", "0.05",
        "--eps-decay-fraction", "0.5", "--learning-starts", "10000"]


def cleanrl(where: Path, python: str, seed: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [python, str(where / "cleanrl" / "dqn.py"), "--seed", str(seed), "--total-timesteps", str(steps),
               "--no-cuda", "--save-model"]
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env={"PYTHONPATH": str(where),
                                                                                  "PATH": "/usr/bin:/bin",
                                                                                  "OMP_NUM_THREADS": "1"})
        wall = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"bench/cleanrl.py: CleanRL's dqn.py (seed {seed}) failed ({done.returncode}): "
                             f"{(done.stderr.strip().splitlines() or [''])[-1]}")
        sps = [int(m) for m in re.findall(r"^SPS: (\d+)$", done.stdout, re.M)]
        own = [float(m) for m in re.findall(r"^eval_episode=\d+, episodic_return=\[([-\d.]+)\]$", done.stdout, re.M)]
        model = next(Path(tmp).glob("runs/*/dqn.cleanrl_model"), None)
        if not sps or model is None:
            raise SystemExit(f"bench/cleanrl.py: CleanRL's dqn.py (seed {seed}) printed no SPS line or saved no "
                             "network; is DIR a checkout of vwxyzjn/cleanrl?")
        greedy = _greedy(torch.load(model, weights_only=True), seed)
    return {"side": "cleanrl", "seed": seed, "env_steps_per_s": sps[-1], "process_wall_seconds": round(wall, 2),
            "greedy_return": greedy, "own_eval_return_eps_0_05": float(np.mean(own)) if own else None,
            "command": " ".join(["dqn.py", *cmd[2:]])}


def _greedy(state: dict, seed: int) -> float:
    """CleanRL's saved QNetwork (`network.0`, `.2`, `.4`: Linear, ReLU between) greedily, EPISODES episodes."""
    layers = []
    for i in sorted({int(k.split(".")[1]) for k in state}):
        w = state[f"network.{i}.weight"]
        layer = torch.nn.Linear(w.shape[1], w.shape[0])
        layer.load_state_dict({"weight": w, "bias": state[f"network.{i}.bias"]})
        layers += [layer, torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    env, returns = gym.make(ENV), []
    for episode in range(EPISODES):
        obs, _ = env.reset(seed=10_000 + seed * EPISODES + episode)
        total, over = 0.0, False
        while not over:
            with torch.no_grad():
                action = int(net(torch.as_tensor(obs, dtype=torch.float32)).argmax())
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            over = terminated or truncated
        returns.append(total)
    return float(np.mean(returns))


def ours(seed: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        args = ["--env", ENV, "--algo", "dqn", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "1",
                "--learner-threads", "1", *OURS, "--seed", str(seed), "--total-steps", str(steps), "--eval-every",
                str(steps), "--eval-episodes", str(EPISODES), "--eval-epsilon", "0", "--eval-basic", "false",
                "--wandb", "disabled", "--progress", "false", "--json", "true"]
        done, wall = run_main("bench/cleanrl.py", f"our run (seed {seed})", [*args, "--out", str(Path(tmp) / "r")])
        summary = json.loads(done.stdout)
    return {"side": "ours", "seed": seed, "env_steps_per_s": summary["throughput"]["steady_env_steps_per_s"],
            "whole_run_env_steps_per_s": summary["env_steps_per_s"], "process_wall_seconds": round(wall, 2),
            "greedy_return": summary["final_eval"]["return_mean"],
            "command": " ".join(["python", "-m", "learner.main", *args])}


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser.script("bench/cleanrl.py", __doc__)
    p.add_argument("--cleanrl", required=True, help="a checkout of vwxyzjn/cleanrl")
    p.add_argument("--cleanrl-python", default=sys.executable, help="an interpreter with CleanRL's requirements")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    p.add_argument("--steps", type=int, default=100_000, help="env steps of each run (CleanRL's --total-timesteps)")
    p.add_argument("--out", default="", help="the JSON (default bench/results/cleanrl-<cores>cpu.json)")
    args = p.parse_args(argv)
    where = Path(args.cleanrl)
    if not (where / "cleanrl" / "dqn.py").is_file():
        p.error(f"--cleanrl {args.cleanrl!r}: no cleanrl/dqn.py there; give a checkout of vwxyzjn/cleanrl")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        seeds = []
    if not seeds or any(s < 0 for s in seeds):
        p.error(f"--seeds {args.seeds!r}: give comma-separated seeds of 0 or more")
    if not 20_000 <= args.steps <= 10_000_000:
        p.error(f"--steps {args.steps}: from 20,000 (past the 10,000-step warm-up) to 10,000,000")
    info, t0, rows = machine(), time.perf_counter(), []
    for seed in seeds:
        for r in (cleanrl(where, args.cleanrl_python, seed, args.steps), ours(seed, args.steps)):
            rows.append(r)
            print(f"{r['side']} seed {seed}: {r['env_steps_per_s']:.0f} env steps/s, greedy return "
                  f"{r['greedy_return']:.1f}", file=sys.stderr, flush=True)
    cores = info["cpu_count"]
    cleanrl_commit = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip() or None
    result = {"env": ENV, "steps": args.steps, "seeds": seeds, "machine": info, "cleanrl_commit": cleanrl_commit,
              "command": "python bench/cleanrl.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "rows": rows, "bench_seconds": round(time.perf_counter() - t0, 1)}
    for side in ("cleanrl", "ours"):
        mine = [r for r in rows if r["side"] == side]
        result[side] = {"env_steps_per_s": float(np.mean([r["env_steps_per_s"] for r in mine])),
                        "greedy_return": float(np.mean([r["greedy_return"] for r in mine]))}
    result["speed_ratio"] = result["ours"]["env_steps_per_s"] / result["cleanrl"]["env_steps_per_s"]
    print_table(result)
    write_result(Path(args.out or ROOT / "bench" / "results" / f"cleanrl-{cores}cpu.json"), result)
    return 0


def print_table(result: dict) -> None:
    m = result["machine"]
    print(f"\n{result['env']}, {result['steps']:,} env steps a run, CleanRL's DQN hyperparameters, on {m['cpu']} "
          f"({m['cpu_count']} cores), commit {m['commit']}, CleanRL {result['cleanrl_commit']}")
    print("| side | seed | env steps/s (training) | process wall (s) | greedy return (10 episodes) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in result["rows"]:
        print(f"| {r['side']} | {r['seed']} | {r['env_steps_per_s']:.0f} | {r['process_wall_seconds']:.1f} | "
              f"{r['greedy_return']:.1f} |")
    print(f"\nours / CleanRL, env steps/s: {result['speed_ratio']:.2f}×; greedy return "
          f"{result['ours']['greedy_return']:.1f} against {result['cleanrl']['greedy_return']:.1f}")


if __name__ == "__main__":
    run_script("bench/cleanrl.py", main)
