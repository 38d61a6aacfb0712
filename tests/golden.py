"""Golden outputs of deterministic serial runs: proof that a refactor left behaviour unchanged.

    git worktree add /tmp/before <commit before the change>
    python tests/golden.py --repo /tmp/before --out /tmp/golden-before   # the code before the change
    python tests/golden.py --out /tmp/golden-after                       # this checkout, the same machine
    python tests/golden.py --compare /tmp/golden-before /tmp/golden-after

For every algorithm, a short serial run (`--runtime serial`: one process, deterministic for a seed) on CliffWalk
and on MinAtar/Breakout, plus a few runs through other paths (β-DQN's two-Q ablation and policy set 8 without
counts, Redis replay, two shards, two MiniGrid tasks). Each writes `<name>/evals.csv` (every evaluation, as the run
wrote it), `<name>/params.sha256` (a checksum of every final parameter, target and optimizer tensor in the
checkpoint, in name order), `<name>/checkpoint.sha256` (the same over the whole final checkpoint but its
configuration, which holds the run's directory and a random Redis namespace: counters, schedules, the arm source's
and the replay's state; not a Redis run's random claim id, nor the keys added since, `ADDED`) and
`<name>/summary.json` (the summary without its timings, memory and commit). `--compare` says, run by run, whether
all are identical byte for byte. `--only NAMES` records some of the runs. `--flags "..."` adds flags to every run
it records, after the run's own (so they override them), and writes them to `<out>/FLAGS`; `--compare` says where
the two sides were given different flags. Where a change moves a default on purpose, the code after it given the
old value (`--flags="--bandit-returns minmax"`) must match the code before it.

Bit-identity holds on one machine: float kernels can differ between hosts (AMD and Intel, and hosts of one name),
so compare directories written on the same host, never against outputs recorded elsewhere. It goes through the
command line only (`python -m learner.main`), so it runs unchanged on either side of a refactor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("beta_dqn", "dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson")
SHORT = ["--runtime", "serial", "--actors", "2", "--envs-per-actor", "2", "--total-steps", "3000",
         "--learning-starts", "500", "--eval-every", "1000", "--eval-episodes", "3", "--target-update", "250",
         "--checkpoint-every", "2000", "--progress", "false", "--wandb", "disabled", "--json", "true", "--seed", "7"]
EXTRA = {  # other paths through the run: ablations, a second policy set, Redis replay, shards
    "CliffWalk_beta_dqn_two-q": ["--env", "CliffWalk", "--algo", "beta_dqn", "--two-q", "true"],
    "CliffWalk_beta_dqn_set8_counts-off": ["--env", "CliffWalk", "--algo", "beta_dqn", "--policy-set", "8",
                                           "--count-mode", "off"],
    "CliffWalk_dqn_redis": ["--env", "CliffWalk", "--algo", "dqn", "--replay", "redis-local", "--replay-shards", "2"],
    "MinAtar-Breakout_beta_dqn_shards2": ["--env", "MinAtar/Breakout", "--algo", "beta_dqn", "--replay-shards", "2"],
    "DoorKey_beta_dqn": ["--env", "DoorKey", "--algo", "beta_dqn"],
    "LavaCrossing-Easy_dqn": ["--env", "LavaCrossing-Easy", "--algo", "dqn"],
}


def runs() -> dict[str, list[str]]:
    out = {}
    for env in ("CliffWalk", "MinAtar/Breakout"):
        for algo in ALGOS:
            out[f"{env.replace('/', '-')}_{algo}"] = ["--env", env, "--algo", algo]
    return {**out, **EXTRA}


# what a summary records of the machine, the software and the configuration: nothing the run computed
TIMING = ("wall_seconds", "env_steps_per_s", "peak_rss_gb", "throughput", "commit", "cpu", "cpu_capability",
          "cpu_kernels", "placement", "replay_servers", "versions", "epsilon", "observations")
# measurements added since (no run computes anything from them), left out so that outputs of code from before
# them compare: the bandit's count of reports and the lag of its arms, the run's seconds in its checkpoint
MEASURED = {"arm_source": ("reported",), "bandit": ("lag",), "counters": ("wall_seconds",)}


def without_measurements(state: dict) -> dict:
    """`state` (a checkpoint's or a summary's top level) without the MEASURED keys."""
    return {k: {kk: vv for kk, vv in v.items() if kk not in MEASURED[k]} if k in MEASURED and isinstance(v, dict)
            else v for k, v in state.items()}


# a checkpoint's top-level keys that are not computed: the configuration (it holds the run's directory and a
# random Redis namespace) and the random id a Redis run marks its rings with
UNCOMPUTED = ("config", "replay_claim")
# a checkpoint's keys added since, left out so that outputs of code from before them compare: `best`, the networks
# of the run's best evaluation (a copy of parameters the run evaluated, whose scores evals.csv holds)
ADDED = ("best",)
FILES = ("evals.csv", "params.sha256", "checkpoint.sha256", "summary.json")


def checksum(state) -> str:
    """sha256 over a checkpoint's contents (tensors, numbers, strings), in key order."""
    import torch

    digest = hashlib.sha256()

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for key in sorted(value, key=str):
                walk(f"{prefix}/{key}", value[key])
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(f"{prefix}/{i}", item)
        elif isinstance(value, torch.Tensor):
            digest.update(prefix.encode())
            digest.update(value.detach().contiguous().cpu().numpy().tobytes())
        else:
            digest.update(f"{prefix}={value!r}".encode())

    walk("", state)
    return digest.hexdigest()


def record(out: Path, repo: Path, only: list[str], flags: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=False)
    (out / "FLAGS").write_text(shlex.join(flags) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in runs().items():
            if only and name not in only:
                continue
            run_dir = Path(tmp) / name
            cmd = [sys.executable, "-m", "learner.main", *SHORT, *argv, *flags, "--out", str(run_dir)]
            done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{name} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
            (out / name).mkdir()
            shutil.copy(run_dir / "evals.csv", out / name / "evals.csv")
            import torch

            ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True, map_location="cpu")
            (out / name / "params.sha256").write_text(checksum(ckpt["learner"]) + "\n")
            rest = without_measurements({k: v for k, v in ckpt.items() if k not in UNCOMPUTED + ADDED})
            (out / name / "checkpoint.sha256").write_text(checksum(rest) + "\n")
            summary = without_measurements(json.loads((run_dir / "summary.json").read_text()))
            (out / name / "summary.json").write_text(
                json.dumps({k: v for k, v in summary.items() if k not in TIMING}, indent=1, sort_keys=True) + "\n")
            print(f"{name:45s} {(out / name / 'params.sha256').read_text().strip()[:16]}", flush=True)


def compare(a: Path, b: Path) -> int:
    flags = [(d / "FLAGS").read_text().strip() if (d / "FLAGS").is_file() else "" for d in (a, b)]
    if flags[0] != flags[1]:
        print(f"flags added: {flags[0] or '(none)'} in {a}, {flags[1] or '(none)'} in {b}")
    names = sorted({p.name for p in a.iterdir() if p.is_dir()} | {p.name for p in b.iterdir() if p.is_dir()})
    differ = 0
    for name in names:
        same = all((a / name / f).is_file() and (b / name / f).is_file()
                   and (a / name / f).read_bytes() == (b / name / f).read_bytes()
                   for f in FILES)
        differ += not same
        print(f"{name:45s} {'identical' if same else 'DIFFERENT'}")
    print(f"{len(names) - differ} of {len(names)} runs identical")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="a new directory for this checkout's golden outputs")
    p.add_argument("--repo", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    p.add_argument("--only", default="", metavar="NAMES", help="record only these runs (comma-separated names)")
    p.add_argument("--flags", default="", metavar="FLAGS",
                   help='flags added to every run recorded, after its own: --flags="--bandit-returns minmax" '
                        '(with "=", as the value starts with --)')
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        p.error("give --out DIR or --compare BEFORE AFTER")
    only = [n for n in args.only.split(",") if n]
    unknown = sorted(set(only) - set(runs()))
    if unknown:
        p.error(f"--only: no run named {', '.join(unknown)}; known: {', '.join(runs())}")
    # outputs are never overwritten: a comparison against a half-replaced side proves nothing
    if args.out.exists() or args.out.is_symlink():
        p.error(f"--out {args.out} exists; give a new directory")
    record(args.out, args.repo.resolve(), only, shlex.split(args.flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
