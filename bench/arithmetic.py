"""The learner's update and the actors' acting forward against the arithmetic they do, on one thread.

    python bench/arithmetic.py                              # MinAtar/Breakout, every method
    python bench/arithmetic.py --algos dqn beta_dqn --out /tmp/a.json
    python bench/arithmetic.py --baseline /tmp/before     # this checkout's updates against another's, ABBA

Learner, per method (β-DQN with β on the main thread, as a grid runs it):
- FLOPs per update, counted: every matrix op of one update (mm, addmm, bmm, convolution and its backward) recorded
  with torch.utils.flop_counter's formula (Adam and the elementwise ops do no matrix arithmetic and count none);
- the update's wall time: `Learner.update` on replay-shaped batches, as a run calls it (the batch's conversion to
  tensors included), methods alternated, the fastest of --rounds blocks (on these noisy hosts noise only adds
  time; the median is recorded beside it);
- each recorded op replayed alone on tensors of its shapes and strides, hot: the rate of the update's largest op
  (its FLOPs over its time alone) is the yardstick, and the sum of the ops' times alone is the update's arithmetic
  floor on this core; the figure is the update's rate (FLOPs over its time) as a share of the yardstick, and the
  same share with the ops' times alone in place of the update's is the most that an update without any overhead
  (only its matrix ops, each as fast as alone) could reach; and the update timed piece by piece (the batch made
  tensors, the method's loss with its forward passes, zeroing, backward, the optimizers' steps).
Actor, per method: one step's acting forward (`acting_values`, numpy) over --envs-per-actor observations, its FLOPs
(the torch twin of each acting network counted at that batch), its time, and numpy's rate at its largest product.
Bootstrapped DQN's actor computes one head a row and its twin all ten: it has no actor row.
With `--baseline DIR` (a checkout of other code: `git worktree add DIR <commit>`), the learner's half runs `--repeats`
times on each side, ABBA, each a fresh process of this script measuring that side's code (`--repo`); per method, the
fastest update of each side and their ratio, and the median of the paired runs' ratios. On these noisy hosts a
difference of a few percent shows only this way: two sittings minutes apart differ by up to 50%.
Prints a table and writes JSON.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # numpy on one thread, as an actor's
    os.environ[_var] = "1"  # (set before numpy is imported)

import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.flop_counter import flop_registry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _repo_argument(argv: list[str]) -> str:
    """--repo's value (`--repo DIR` or `--repo=DIR`), or ''."""
    for i, a in enumerate(argv):
        if a == "--repo" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--repo="):
            return a.split("=", 1)[1]
    return ""


CODE = Path(_repo_argument(sys.argv[1:]) or ROOT).resolve() if __name__ == "__main__" else ROOT
if __name__ == "__main__":  # --repo DIR: that checkout's code (and its bench/machine.py) measured by this script
    sys.path.insert(0, str(CODE))

import learner as learner_package  # noqa: E402
from bench.machine import machine, write_result  # noqa: E402  (with --repo, that checkout's: its commit recorded)
from beta_dqn.configuration.errors import OneLineParser, run_script  # noqa: E402
from beta_dqn.configuration.flags import Config, resolve, settings  # noqa: E402
from learner.learner import Learner, LearnerSettings  # noqa: E402
from learner.methods import METHODS, extras  # noqa: E402
from learner.methods.numpy_net import NumpyNet, acting_values, unflatten  # noqa: E402
from replay_service.schema import Schema  # noqa: E402

BATCHES = 16  # distinct batches cycled through while timing


def _machine() -> dict:
    """`machine()` of the code measured, its commit only where that code's folder is a git checkout's top (a copy
    inside another repository would otherwise be given that repository's commit)."""
    info = machine()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=CODE, capture_output=True, text=True)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != CODE:
        info["commit"] = None
    return info


class MatrixOps(TorchDispatchMode):
    """Records every op torch's FLOP counter has a formula for: (op, its arguments copied, its FLOPs)."""

    def __init__(self):
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.ops.append((func, [_copy(a) for a in args], dict(kwargs), int(formula(*args, **kwargs, out_val=out))))
        return out


def _copy(a):
    """A tensor argument as a fresh tensor of the same shape, strides and values (detached); the rest as it is."""
    if isinstance(a, torch.Tensor):
        return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype).copy_(a.detach())
    return a


def _seconds(fn, reps: int) -> float:
    """The fastest of 5 blocks of `reps` calls, per call (after a warm-up block): noise only adds time."""
    for _ in range(reps):
        fn()
    blocks = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        blocks.append((time.perf_counter() - t) / reps)
    return min(blocks)


def _batches(spec, algo: str, packer, n: int, rng: np.random.Generator) -> list[dict]:
    """Replay-shaped batches (sparse observations, as MinAtar's); a method's extras drawn within their bounds."""
    fields = Schema(extras(algo)).extras
    out = []
    for _ in range(BATCHES):
        b = {"obs": packer.pack(rng.random((n, *spec.obs_shape)) < 0.1),
             "next_obs": packer.pack(rng.random((n, *spec.obs_shape)) < 0.1),
             "action": rng.integers(0, spec.n_actions, n), "reward": rng.standard_normal(n).astype(np.float32),
             "terminated": rng.random(n) < 0.05}
        for f in fields:
            low, high = f.bounds() or (0, 1)
            b[f.name] = rng.integers(low, high + 1, n).astype(f.dtype)
        out.append(b)
    return out


def _learner(env: str, algo: str, seed: int = 0):
    cfg, spec = resolve(Config.of(env=env, algo=algo, beta_thread=False, wandb="disabled", device="cpu", seed=seed))
    return cfg, spec, Learner.solo(settings(LearnerSettings, cfg), spec)


def learner_rows(env: str, algos: list[str], rounds: int, updates: int) -> list[dict]:
    made = {}
    for algo in algos:
        cfg, spec, learner = _learner(env, algo)
        batches = _batches(spec, algo, learner.packer, cfg.batch_size, np.random.default_rng(0))
        for b in batches:  # warm: allocator, kernels' first calls
            learner.update(b)
        made[algo] = (learner, batches)
    times: dict[str, list[float]] = {algo: [] for algo in algos}
    for _ in range(rounds):  # alternated, so that a noisy minute lands on every method
        for algo, (learner, batches) in made.items():
            t = time.perf_counter()
            for i in range(updates):
                learner.update(batches[i % BATCHES])
            times[algo].append((time.perf_counter() - t) / updates)
    rows = []
    for algo, (learner, batches) in made.items():
        phases = _phases(learner, batches, updates)
        recorder = MatrixOps()
        with recorder:
            learner.update(batches[0])
        alone = [(func, flops, _seconds(lambda f=func, a=args, k=kwargs: f(*a, **k), 50))
                 for func, args, kwargs, flops in recorder.ops]
        flops = sum(op[1] for op in alone)
        most = max(op[1] for op in alone)
        largest = max((op for op in alone if op[1] == most), key=lambda op: op[1] / op[2])
        update_s = min(times[algo])
        yardstick = most / largest[2]  # the best of the largest ops (forward and backward products of one shape)
        alone_s = sum(op[2] for op in alone)
        convs = [op for op in alone if "convolution" in str(op[0])]
        rows.append({"algo": algo, "flops_per_update": flops, "matrix_ops": len(alone),
                     "update_ms": 1e3 * update_s, "update_ms_median": 1e3 * statistics.median(times[algo]),
                     "gflops": flops / update_s / 1e9,
                     "largest_op": str(largest[0]), "largest_op_flops": most,
                     "yardstick_gflops": yardstick / 1e9, "share_of_yardstick": flops / update_s / yardstick,
                     "ops_alone_ms": 1e3 * alone_s, "ops_alone_share": flops / alone_s / yardstick,
                     "conv_ms": 1e3 * sum(op[2] for op in convs),
                     "conv_gflops": sum(op[1] for op in convs) / sum(op[2] for op in convs) / 1e9 if convs else None,
                     "phases_ms": phases,
                     "ops": [{"op": str(f), "flops": n, "alone_us": 1e6 * s} for f, n, s in alone]})
        learner.close()
    return rows


def _phases(learner, batches: list[dict], updates: int) -> dict[str, float]:
    """Where an update's time goes, as `learner.learner.GradientStep` spends it, timed piece by piece (the median of
    `updates` updates, ms): the batch made tensors, the method's loss (its forward passes and its arithmetic on them),
    the gradients zeroed, the backward pass, the optimizers' steps."""
    step, host = learner.path.step, learner.path.batches.host
    spent: dict[str, list[float]] = {name: [] for name in ("batch", "loss", "zero_grad", "backward", "optimizer")}
    for i in range(updates):
        t0 = time.perf_counter()
        tensors = host(batches[i % BATCHES])
        t1 = time.perf_counter()
        loss, _ = step.algo.loss(step.nets, step.frozen, tensors, step.settings.gamma, step.settings.method)
        t2 = time.perf_counter()
        for opt in step.optimizers:
            opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        loss.backward()
        t4 = time.perf_counter()
        for opt in step.optimizers:
            opt.step()
        t5 = time.perf_counter()
        for name, seconds in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            spent[name].append(seconds)
    return {name: 1e3 * statistics.median(times) for name, times in spent.items()}


def actor_rows(env: str, algos: list[str], envs: int) -> list[dict]:
    rows = []
    for algo in algos:
        if algo == "bootstrapped_dqn":
            continue
        cfg, spec, learner = _learner(env, algo)
        nets = {name: NumpyNet(p, spec.reading) for name, p in unflatten(learner.weights()).items()}
        obs = (np.random.default_rng(0).random((envs, *spec.obs_shape)) < 0.1).astype(spec.obs_dtype)
        forward_s = _seconds(lambda n=nets, o=obs: acting_values(n, o), 2000)
        recorder = MatrixOps()
        with recorder, torch.no_grad():
            for name in learner.algo.acting_networks(learner.settings.method):
                learner.nets[name](torch.from_numpy(obs))
        flops = sum(op[3] for op in recorder.ops)
        fc1 = learner.nets["q"].fc1.weight  # the forward's largest product: (envs, features) by (features, hidden)
        x, w = np.random.default_rng(1).random((envs, fc1.shape[1]), np.float32), fc1.detach().numpy().T.copy()
        product_s = _seconds(lambda a=x, b=w: a @ b, 2000)
        yardstick = 2 * envs * fc1.shape[1] * fc1.shape[0] / product_s
        rows.append({"algo": algo, "envs": envs, "networks": list(nets), "flops_per_step": flops,
                     "forward_us": 1e6 * forward_s, "gflops": flops / forward_s / 1e9,
                     "largest_product": f"({envs}, {fc1.shape[1]}) @ ({fc1.shape[1]}, {fc1.shape[0]})",
                     "yardstick_gflops": yardstick / 1e9, "share_of_yardstick": flops / forward_s / yardstick})
        learner.close()
    return rows


def main(argv=None) -> int:
    p = OneLineParser(prog="bench/arithmetic.py", description=__doc__.split("\n")[0])
    p.add_argument("--env", default="MinAtar/Breakout")
    p.add_argument("--algos", nargs="+", default=list(METHODS), choices=list(METHODS), metavar="ALGO")
    p.add_argument("--rounds", type=int, default=7, help="timed blocks per method, methods alternated")
    p.add_argument("--updates", type=int, default=100, help="updates per block")
    p.add_argument("--envs-per-actor", type=int, default=4, help="observations in one acting forward")
    p.add_argument("--repo", metavar="DIR", default="", help="measure that checkout's code (its commit is recorded)")
    p.add_argument("--baseline", metavar="DIR", default="", help="another checkout: its updates against this one's")
    p.add_argument("--repeats", type=int, default=4, help="with --baseline: runs on each side, ABBA")
    p.add_argument("--skip-actor", action="store_true", help="the learner's half only")
    p.add_argument("--out", default="")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    for name in ("rounds", "updates", "envs_per_actor", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    for flag in ("repo", "baseline"):
        if getattr(args, flag) and not (Path(getattr(args, flag)) / "learner" / "learner.py").is_file():
            p.error(f"--{flag} {getattr(args, flag)}: not a checkout of this project (no learner/learner.py)")
    if args.repo and not args.out:
        p.error(f"--repo {args.repo}: give --out FILE too (the default is this checkout's own result file)")
    if not Path(learner_package.__file__).resolve().is_relative_to(CODE):
        p.error(f"--repo {args.repo}: its code was not the code imported ({Path(learner_package.__file__).parent})")
    try:
        resolve(Config.of(env=args.env, algo=args.algos[0], wandb="disabled"))
    except Exception as e:  # noqa: BLE001 - a bad --env: one line, before any child starts
        p.error(str(e).splitlines()[0])
    if args.baseline:
        return compare(args, argv)
    torch.set_num_threads(1)

    big = torch.randn(1024, 1024)
    square = 2 * 1024 ** 3 / _seconds(lambda: big @ big, 5)
    learner = learner_rows(args.env, args.algos, args.rounds, args.updates)
    actors = [] if args.skip_actor else actor_rows(args.env, args.algos, args.envs_per_actor)

    print(f"\nlearner update on one thread, batch 32, {args.env}; 1024x1024 matmul here: {square / 1e9:.0f} GFLOP/s")
    print("algo | MFLOP | update ms | GFLOP/s | largest op alone GFLOP/s | share | matrix ops alone ms (share) | "
          "of which convolutions ms (GFLOP/s)")
    for r in learner:
        conv = f"{r['conv_ms']:.2f} ({r['conv_gflops']:.1f})" if r["conv_gflops"] else "-"
        print(f"{r['algo']} | {r['flops_per_update'] / 1e6:.1f} | {r['update_ms']:.2f} | {r['gflops']:.1f} | "
              f"{r['yardstick_gflops']:.1f} | {r['share_of_yardstick']:.0%} | {r['ops_alone_ms']:.2f} "
              f"({r['ops_alone_share']:.0%}) | {conv}")
    print("\nwhere an update's time goes, ms (median, piece by piece)")
    print("algo | " + " | ".join(learner[0]["phases_ms"]))
    for r in learner:
        print(f"{r['algo']} | " + " | ".join(f"{ms:.2f}" for ms in r["phases_ms"].values()))
    if actors:
        print(f"\nacting forward (numpy), {args.envs_per_actor} observations a step")
        print("algo | kFLOP | forward µs | GFLOP/s | numpy at its largest product GFLOP/s | share")
    for r in actors:
        print(f"{r['algo']} | {r['flops_per_step'] / 1e3:.0f} | {r['forward_us']:.0f} | {r['gflops']:.1f} | "
              f"{r['yardstick_gflops']:.1f} | {r['share_of_yardstick']:.0%}")

    result = {"env": args.env, "machine": _machine(), "threads": 1, "matmul_1024_gflops": square / 1e9,
              "learner": learner, "actor": actors, "command": "python bench/arithmetic.py " + " ".join(argv)}
    out = Path(args.out or ROOT / "bench" / "results" / f"arithmetic-{result['machine']['cpu_count']}cpu-cpu.json")
    write_result(out, result)
    return 0


def compare(args, argv: list[str]) -> int:
    """This checkout's updates against `--baseline`'s: `--repeats` fresh processes a side, ABBA (`--repo`)."""
    sides = {"this": ROOT, "baseline": Path(args.baseline).resolve()}
    runs: dict[str, list[dict]] = {"this": [], "baseline": []}
    common = ["--env", args.env, "--algos", *args.algos, "--rounds", str(args.rounds), "--updates", str(args.updates),
              "--skip-actor"]
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeats):
            for side in ("this", "baseline") if rep % 2 == 0 else ("baseline", "this"):
                out = Path(tmp) / f"{side}-{rep}.json"
                done = subprocess.run([sys.executable, str(ROOT / "bench" / "arithmetic.py"), *common, "--repo",
                                       str(sides[side]), "--out", str(out)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    last = (done.stderr.strip().splitlines() or [""])[-1]
                    raise SystemExit(f"bench/arithmetic.py: the {side} side's run {rep + 1} failed "
                                     f"({done.returncode}): {last}")
                run = json.loads(out.read_text())
                run["command"] = f"python bench/arithmetic.py {' '.join(common)} --repo {side.upper()}"
                runs[side].append(run)
    print(f"\nupdate ms on one thread, {args.env}: this checkout against the baseline, {args.repeats} runs a side, "
          "ABBA")
    print("algo | this (fastest) | baseline (fastest) | ratio | median of paired ratios")
    rows = []
    for algo in args.algos:
        ms = {side: [next(r for r in run["learner"] if r["algo"] == algo)["update_ms"] for run in runs[side]]
              for side in sides}
        paired = statistics.median(t / b for t, b in zip(ms["this"], ms["baseline"], strict=True))
        rows.append({"algo": algo, "this_ms": min(ms["this"]), "baseline_ms": min(ms["baseline"]),
                     "ratio": min(ms["this"]) / min(ms["baseline"]), "paired_ratio_median": paired,
                     "this_runs_ms": ms["this"], "baseline_runs_ms": ms["baseline"]})
        print(f"{algo} | {min(ms['this']):.2f} | {min(ms['baseline']):.2f} | {rows[-1]['ratio']:.3f} | {paired:.3f}")
    # the baseline's path as DIR: its commit names it, not this machine's path
    command = ["DIR" if before == "--baseline" else "--baseline=DIR" if a.startswith("--baseline=") else a
               for before, a in zip(["", *argv], argv, strict=False)]
    result = {"env": args.env, "machine": runs["this"][0]["machine"], "threads": 1,
              "baseline_commit": runs["baseline"][0]["machine"]["commit"], "rows": rows,
              "this": runs["this"], "baseline": runs["baseline"],
              "command": "python bench/arithmetic.py " + " ".join(command)}
    out = Path(args.out or ROOT / "bench" / "results" / f"arithmetic-compare-{result['machine']['cpu_count']}cpu.json")
    write_result(out, result)
    return 0


if __name__ == "__main__":
    run_script("bench/arithmetic.py", main)
