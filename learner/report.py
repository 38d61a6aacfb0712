"""`python -m learner.report RUNS_DIR`: the paper's table and figures from finished runs.

Reads every run under RUNS_DIR (a directory with `summary.json`, `config.json`, `evals.csv` and
`metrics.jsonl`; grids nest them one level down) and writes `report.md` and PNG figures (default: into
RUNS_DIR/report):

- Table 1's layout: per environment and algorithm the final score — success rate on MiniGrid and
  CliffWalk, return elsewhere — as the mean over seeds with a 95% bootstrap confidence interval and the
  number of seeds; domain averages; computational cost relative to DQN (seconds per env step, the runs'
  own) and performance/cost ((score / DQN's score) / cost, spec §8);
- learning curves (mean over seeds, shaded 95% bootstrap interval) per environment;
- β-DQN's policy-selection proportions over training (π_cov, π_cor(α>0), π_cor(0));
- β-DQN's three basic policies (pure exploitation, argmin β, argmax Q), when the runs evaluated them;
- CliffWalk state-visitation heatmaps of β-DQN and DQN.

Runs are compared only when their configurations agree in everything but the seed (and the algorithm,
which is the table's column, and bookkeeping such as directories and addresses); otherwise it stops with
one line naming the field and two runs that differ.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ALGO_LABELS = {"dqn": "DQN", "bootstrapped_dqn": "Bootstrapped DQN", "ez_greedy": "εz-greedy", "rnd": "RND",
               "lesson": "LESSON", "beta_dqn": "β-DQN"}
# fields that say where and how a run was executed or reported, not what it computed
# (device, threads and CPU shares change the speed, not the math: the cost row says so where they differ)
BOOKKEEPING = {"seed", "seeds", "out", "run_id", "grid", "resume", "address", "progress", "log_every", "wandb",
               "wandb_project", "replay", "replay_timeout", "replay_persist", "device", "learner_cpus",
               "learner_gpus", "retries", "actor_cpus", "cuda_graphs", "beta_thread", "learner_threads",
               "checkpoint_every"}
# fields that only some methods read: compared only between runs of the same method
METHOD_FIELDS = frozenset({"boot_heads", "boot_epsilon", "ez_mu", "rnd_scale", "lesson_tau", "lesson_alpha", "two_q",
                           "eval_basic", "policy_set", "count_mode", "beta_eps", "bandit_window"})
BOOTSTRAP_SAMPLES = 10_000


class ReportError(ValueError):
    """The runs cannot be reported as asked: one line for the user."""


@dataclass
class RunData:
    name: str
    config: dict
    summary: dict
    evals: list[dict]
    metrics: list[dict] = field(default_factory=list)

    @property
    def env(self) -> str:
        return self.config["env"]

    @property
    def algo(self) -> str:
        return self.config["algo"]


def domain(env: str) -> str:
    from actors.envs import MINIGRID_TASKS

    if env.startswith("MinAtar/"):
        return "MinAtar"
    if env in MINIGRID_TASKS:
        return "MiniGrid"
    return env if env == "CliffWalk" else "Other"


def metric(env: str) -> str:
    """The score the paper reports: success rate on MiniGrid and CliffWalk, return otherwise."""
    return "success_rate" if domain(env) in ("MiniGrid", "CliffWalk") else "return_mean"


def _number(text: str) -> float:
    return float("nan") if text in ("", "None", "nan") else float(text)


def load_runs(root: Path) -> tuple[list[RunData], list[str]]:
    """Every finished run under `root`, and the directories of unfinished ones (no summary.json)."""
    runs, unfinished = [], []
    for config_path in sorted(root.rglob("config.json")):
        run_dir = config_path.parent
        if not (run_dir / "summary.json").is_file():
            unfinished.append(str(run_dir))
            continue
        with open(run_dir / "evals.csv") as f:
            evals = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]
        metrics = []
        if (run_dir / "metrics.jsonl").is_file():
            for line in (run_dir / "metrics.jsonl").read_text().splitlines():
                row = json.loads(line)
                metrics.append({k: row[k] for k in ("env_steps", "arms_cov", "arms_cor", "arms_cor0") if k in row})
        runs.append(RunData(run_dir.name, json.loads(config_path.read_text()),
                            json.loads((run_dir / "summary.json").read_text()), evals, metrics))
    return runs, unfinished


def check_comparable(runs: list[RunData]) -> None:
    """Within an environment, every run's configuration equals every other's but for the seed, the
    algorithm and bookkeeping; ReportError names the first field that differs."""
    by_env: dict[str, list[RunData]] = defaultdict(list)
    for run in runs:
        by_env[run.env].append(run)
    for env, group in by_env.items():
        seen: dict[tuple, RunData] = {}
        for run in group:
            key = (run.algo, run.config.get("seed"))
            if key in seen:
                raise ReportError(f"{env}: {run.algo} seed {key[1]} appears twice ({seen[key].name}, {run.name}); "
                                  "report each run once")
            seen[key] = run
        first = group[0]
        for other in group[1:]:
            same_method = next((r for r in group if r.algo == other.algo), other)
            keys = sorted((set(first.config) | set(other.config)) - BOOKKEEPING - {"algo"})
            for key in keys:
                # a method's own field: compared between runs of that method only
                base = same_method if key in METHOD_FIELDS else first
                if base.config.get(key) != other.config.get(key):
                    raise ReportError(
                        f"{env}: runs differ in {key} ({base.name}: {base.config.get(key)!r}, {other.name}: "
                        f"{other.config.get(key)!r}); only the seed and the algorithm may differ between runs "
                        "that are compared")


def bootstrap_ci(values, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean and the 2.5th/97.5th percentiles of the means of `samples` resamples
    (with replacement, seeded: the same numbers every time)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(samples, x.size))].mean(1)
    return float(x.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def final_score(run: RunData) -> float:
    value = run.summary["final_eval"].get(metric(run.env))
    if value is None:
        raise ReportError(f"{run.name} has no final {metric(run.env)} in its summary.json")
    return float(value)


def table(runs: list[RunData]) -> tuple[list[str], list[list[str]], dict]:
    """Table 1's rows (domain, environment, one cell per algorithm), domain averages, cost and
    performance/cost; and the numbers behind them."""
    algos = [a for a in ALGO_LABELS if any(r.algo == a for r in runs)]
    algos += sorted({r.algo for r in runs} - set(algos))
    envs = sorted({r.env for r in runs}, key=lambda e: (domain(e), e))
    cells: dict[tuple[str, str], tuple[float, float, float, int]] = {}
    rates: dict[tuple[str, str], float] = {}
    for env in envs:
        for algo in algos:
            group = [r for r in runs if r.env == env and r.algo == algo]
            if group:
                cells[env, algo] = (*bootstrap_ci([final_score(r) for r in group]), len(group))
                rates[env, algo] = float(np.mean([r.summary["env_steps_per_s"] for r in group]))
    header = ["Domain", "Environment", *[ALGO_LABELS.get(a, a) for a in algos]]
    rows = []
    for dom in sorted({domain(e) for e in envs}):
        dom_envs = [e for e in envs if domain(e) == dom]
        for env in dom_envs:
            row = [dom, env]
            for algo in algos:
                if (env, algo) in cells:
                    mean, lo, hi, n = cells[env, algo]
                    row.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={n})")
                else:
                    row.append("—")
            rows.append(row)
        if len(dom_envs) > 1:
            row = [dom, "average"]
            for algo in algos:
                means = [cells[e, algo][0] for e in dom_envs if (e, algo) in cells]
                row.append(f"{np.mean(means):.2f}" if len(means) == len(dom_envs) else "—")
            rows.append(row)
    numbers = {"cells": {f"{e}|{a}": v for (e, a), v in cells.items()}, "cost": {}, "performance_per_cost": {}}
    if any(a == "dqn" for a in algos):
        cost_row, perf_row = ["Computational cost", ""], ["Performance/cost", ""]
        for algo in algos:
            shared = [e for e in envs if (e, algo) in rates and (e, "dqn") in rates]
            if not shared:
                cost_row.append("—")
                perf_row.append("—")
                continue
            # seconds per env step relative to DQN's, averaged over the environments both ran
            cost = float(np.mean([rates[e, "dqn"] / rates[e, algo] for e in shared]))
            numbers["cost"][algo] = cost
            cost_row.append(f"{100 * cost:.0f}%")
            # (score / DQN's score) / cost, over the environments where DQN's score is not 0 (cost over the
            # same ones)
            scored = [e for e in shared if cells[e, "dqn"][0] != 0]
            if scored:
                relative = np.mean([cells[e, algo][0] / cells[e, "dqn"][0] for e in scored])
                cost_scored = np.mean([rates[e, "dqn"] / rates[e, algo] for e in scored])
                numbers["performance_per_cost"][algo] = float(relative / cost_scored)
                perf_row.append(f"{numbers['performance_per_cost'][algo]:.2f}")
            else:
                perf_row.append("—")
        rows += [cost_row, perf_row]
    return header, rows, numbers


# ---- figures ----

def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _band(ax, steps, curves, label):
    """Mean over seeds with a shaded 95% bootstrap interval, at the steps every seed has."""
    stats = np.array([bootstrap_ci(col) for col in np.asarray(curves).T])
    ax.plot(steps, stats[:, 0], label=label)
    ax.fill_between(steps, stats[:, 1], stats[:, 2], alpha=0.25)


def _common(runs: list[RunData], key: str) -> tuple[list[float], list[list[float]]]:
    steps = sorted(set.intersection(*[{e["env_steps"] for e in r.evals if key in e} for r in runs]))
    curves = [[next(e[key] for e in r.evals if e["env_steps"] == s) for s in steps] for r in runs]
    return steps, curves


def learning_curves(runs: list[RunData], env: str, path: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    key = metric(env)
    for algo in ALGO_LABELS:
        group = [r for r in runs if r.env == env and r.algo == algo]
        if group:
            steps, curves = _common(group, key)
            if steps:
                _band(ax, steps, curves, f"{ALGO_LABELS[algo]} (n={len(group)})")
    ax.set(title=env, xlabel="env steps", ylabel="success rate" if key == "success_rate" else "return")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def basic_policies(runs: list[RunData], env: str, path: Path) -> bool:
    group = [r for r in runs if r.env == env and r.algo == "beta_dqn"]
    key = metric(env)
    if not group or not all(r.evals and f"argmin_beta_{key}" in r.evals[0] for r in group):
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for prefix, label in (("", "argmax_{a: β>ε} Q (pure exploitation)"), ("argmax_q_", "argmax_a Q"),
                          ("argmin_beta_", "argmin_a β")):
        steps, curves = _common(group, prefix + key)
        _band(ax, steps, curves, label)
    ax.set(title=f"{env}: β-DQN's basic policies (n={len(group)})", xlabel="env steps", ylabel=key)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def selection_proportions(runs: list[RunData], env: str, path: Path, points: int = 50) -> bool:
    """β-DQN's share of episodes per policy group in the bandit's window over training: each run's logged
    shares interpolated onto common env steps (within the span it logged), mean over seeds."""
    group = [r for r in runs if r.env == env and r.algo == "beta_dqn" and any("arms_cov" in m for m in r.metrics)]
    if not group:
        return False
    total = max(r.config["total_steps"] for r in group)
    grid = np.linspace(0, total, points)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in (("arms_cov", "π_cov"), ("arms_cor", "π_cor (α > 0)"), ("arms_cor0", "π_cor(0)")):
        per_run = []
        for r in group:
            rows = [m for m in r.metrics if key in m]
            steps = np.array([m["env_steps"] for m in rows], dtype=np.float64)
            values = np.array([m[key] for m in rows])
            per_run.append(np.where((grid >= steps[0]) & (grid <= steps[-1]), np.interp(grid, steps, values), np.nan))
        with warnings.catch_warnings():  # steps no run logged around stay empty
            warnings.simplefilter("ignore", RuntimeWarning)
            ax.plot(grid, np.nanmean(per_run, axis=0), label=label)
    ax.set(title=f"{env}: β-DQN's policy selection (n={len(group)})", xlabel="env steps",
           ylabel="share of the window's episodes", ylim=(0, 1))
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def visitation(runs: list[RunData], path: Path) -> bool:
    algos = [a for a in ("beta_dqn", "dqn") if any(r.env == "CliffWalk" and r.algo == a
                                                    and r.summary.get("state_visits") for r in runs)]
    if not algos:
        return False
    plt = _plt()
    fig, axes = plt.subplots(1, len(algos), figsize=(6 * len(algos), 2.6), squeeze=False)
    for ax, algo in zip(axes[0], algos, strict=True):
        group = [r for r in runs if r.env == "CliffWalk" and r.algo == algo and r.summary.get("state_visits")]
        counts = np.mean([np.asarray(r.summary["state_visits"], dtype=np.float64) for r in group], axis=0)
        image = ax.imshow(np.log10(1 + counts.reshape(4, 12)), cmap="viridis")
        ax.set(title=f"{ALGO_LABELS[algo]}: log10(1 + visits), n={len(group)}", xticks=[], yticks=[])
        fig.colorbar(image, ax=ax, fraction=0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_report(root: Path, out: Path | None = None) -> Path:
    runs, unfinished = load_runs(root)
    if not runs:
        raise ReportError(f"no finished run (a directory with summary.json) under {root}")
    check_comparable(runs)
    out = out or root / "report"
    out.mkdir(parents=True, exist_ok=True)
    header, rows, numbers = table(runs)
    lines = [f"# Report: {root}", "",
             f"{len(runs)} finished runs" + (f" ({len(unfinished)} unfinished left out)" if unfinished else "") + ". "
             "Scores are the final evaluation's (30 episodes unless the runs said otherwise): success rate on "
             "MiniGrid and CliffWalk, return elsewhere; mean over seeds [95% bootstrap CI] (n = seeds). "
             "With few seeds the percentile bootstrap interval is narrow (never wider than the seeds' range). "
             "Computational cost: seconds per env step relative to DQN's, from the runs' own wall clock "
             "(runs that shared a machine slow each other), averaged over environments. Performance/cost: "
             "(score / DQN's score) / cost, averaged over the environments where DQN's score is not 0.", "",
             "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    for env in sorted({r.env for r in runs}, key=lambda e: (domain(e), e)):
        slug = env.replace("/", "-")
        learning_curves(runs, env, out / f"curves_{slug}.png")
        lines += [f"## {env}", "", f"![learning curves]({'curves_' + slug}.png)", ""]
        if selection_proportions(runs, env, out / f"selection_{slug}.png"):
            lines += [f"![β-DQN's policy selection](selection_{slug}.png)", ""]
        if basic_policies(runs, env, out / f"basic_{slug}.png"):
            lines += [f"![β-DQN's basic policies](basic_{slug}.png)", ""]
    if visitation(runs, out / "cliffwalk_visits.png"):
        lines += ["## CliffWalk state visitation (training)", "", "![visits](cliffwalk_visits.png)", ""]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "report.json").write_text(json.dumps({"runs": len(runs), "unfinished": unfinished, **numbers},
                                                indent=2) + "\n")
    return out / "report.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learner.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs_dir", help="a directory of runs (a grid's, or any tree of run directories)")
    parser.add_argument("--out", default="", help="where report.md and the figures go (default RUNS_DIR/report)")
    args = parser.parse_args(argv)
    root = Path(args.runs_dir)
    if not root.is_dir():
        print(f"python -m learner.report: error: {args.runs_dir!r} is not a directory", file=sys.stderr)
        return 2
    try:
        path = write_report(root, Path(args.out) if args.out else None)
    except ReportError as e:
        print(f"python -m learner.report: error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
