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

A column is a method and, for a grid with axes besides --env, --algo and --seeds, its variant (the values
of those axes: `--bandit-returns minmax,raw` makes two β-DQN columns). Runs are compared only when their
configurations agree in everything but the seed, the method, the grid's axes and bookkeeping such as
directories and addresses (`learner.config`'s field roles; a field a method does not read is not compared
with that method's runs); otherwise it stops with one line naming the field and two runs that differ.
Beside the report, `study.json` lists every run with the command line that computes it again.
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

from learner.config import BOOKKEEPING, FIELDS, reads

ALGO_LABELS = {"dqn": "DQN", "bootstrapped_dqn": "Bootstrapped DQN", "ez_greedy": "εz-greedy", "rnd": "RND",
               "lesson": "LESSON", "beta_dqn": "β-DQN"}
BOOTSTRAP_SAMPLES = 10_000
SOLVED = 0.9  # a success rate at or above this counts as solved (seeds ≥ 0.9, first evaluation ≥ 0.9)
MANY = 6  # more columns than this: one small panel per column instead of one crowded plot


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

    @property
    def variant(self) -> str:
        return self.config.get("variant", "")

    @property
    def column(self) -> tuple[str, str]:
        return self.algo, self.variant

    @property
    def label(self) -> str:
        return column_label(self.column)


def column_label(column: tuple[str, str]) -> str:
    algo, variant = column
    name = ALGO_LABELS.get(algo, algo)
    return f"{name} [{variant.replace(',', ', ')}]" if variant else name


def _axes(variant: str) -> set[str]:
    """The config fields a variant names ("bandit-returns=raw,count-mode=off" -> bandit_returns, count_mode)."""
    return {part.split("=", 1)[0].replace("-", "_") for part in variant.split(",") if part}


def _reads(algo: str, key: str) -> bool:
    return key not in FIELDS or reads(algo, key)


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
    """Within an environment, runs of one column agree in everything but the seed and bookkeeping, and
    columns differ only in their method and their variant's axes; ReportError names the first field that
    differs and two runs."""
    by_env: dict[str, list[RunData]] = defaultdict(list)
    for run in runs:
        by_env[run.env].append(run)

    def value(run: RunData, key: str):  # a field added after the run was made has its default there
        return run.config.get(key, FIELDS[key].default if key in FIELDS else None)

    def compare(a: RunData, b: RunData, free: set[str]) -> None:
        for key in sorted((set(a.config) | set(b.config)) - BOOKKEEPING - {"algo", "seed"} - free):
            if _reads(a.algo, key) and _reads(b.algo, key) and value(a, key) != value(b, key):
                raise ReportError(
                    f"{a.env}: runs differ in {key} ({a.name}: {value(a, key)!r}, {b.name}: "
                    f"{value(b, key)!r}); only the seed, the algorithm and a grid's axes may differ between "
                    "runs that are compared")

    for env, group in by_env.items():
        seen: dict[tuple, RunData] = {}
        first: dict[tuple[str, str], RunData] = {}
        for run in group:
            key = (run.column, run.config.get("seed"))
            if key in seen:
                raise ReportError(f"{env}: {run.label} seed {key[1]} appears twice ({seen[key].name}, {run.name}); "
                                  "report each run once")
            seen[key] = run
            compare(first.setdefault(run.column, run), run, set())
        columns = list(first.values())
        for i, a in enumerate(columns):
            for b in columns[i + 1:]:
                # only along an axis both columns name (two grids' columns differ along one axis at most)
                compare(a, b, _axes(a.variant) & _axes(b.variant))


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


def columns_of(runs: list[RunData]) -> list[tuple[str, str]]:
    """The table's columns in the paper's order of methods, each method's variants in sorted order."""
    order = {a: i for i, a in enumerate(ALGO_LABELS)}

    def typed(variant: str) -> tuple:  # numbers as numbers: bandit-window=50 before bandit-window=100
        parts = [part.partition("=") for part in variant.split(",") if part]
        return tuple((name, *((0, float(v)) if _is_number(v) else (1, v))) for name, _, v in parts)

    return sorted({r.column for r in runs}, key=lambda c: (order.get(c[0], len(order)), c[0], typed(c[1])))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def steps_text(n: float) -> str:
    """Env steps as people write them: 20k, 1.5M."""
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k" if n >= 1e3 else f"{n:g}"


def table(runs: list[RunData]) -> tuple[list[str], list[list[str]], dict]:
    """Table 1's rows (domain, environment, one cell per column), domain averages, cost and
    performance/cost against DQN (its first column when DQN has variants); and the numbers behind them."""
    columns = columns_of(runs)
    envs = sorted({r.env for r in runs}, key=lambda e: (domain(e), e))
    cells: dict[tuple[str, tuple], tuple[float, float, float, int]] = {}
    rates: dict[tuple[str, tuple], float] = {}
    for env in envs:
        for column in columns:
            group = [r for r in runs if r.env == env and r.column == column]
            if group:
                cells[env, column] = (*bootstrap_ci([final_score(r) for r in group]), len(group))
                rates[env, column] = float(np.mean([r.summary["env_steps_per_s"] for r in group]))
    header = ["Domain", "Environment", *[column_label(c) for c in columns]]
    rows = []
    for dom in sorted({domain(e) for e in envs}):
        dom_envs = [e for e in envs if domain(e) == dom]
        for env in dom_envs:
            row = [dom, env]
            for column in columns:
                if (env, column) in cells:
                    mean, lo, hi, n = cells[env, column]
                    row.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={n})")
                else:
                    row.append("—")
            rows.append(row)
        if len(dom_envs) > 1:
            row = [dom, "average"]
            for column in columns:
                means = [cells[e, column][0] for e in dom_envs if (e, column) in cells]
                row.append(f"{np.mean(means):.2f}" if len(means) == len(dom_envs) else "—")
            rows.append(row)
    numbers = {"cells": {f"{e}|{column_label(c)}": v for (e, c), v in cells.items()}, "cost": {},
               "performance_per_cost": {}}
    dqn = next((c for c in columns if c[0] == "dqn"), None)
    if dqn is not None:
        cost_row, perf_row = ["Computational cost", ""], ["Performance/cost", ""]
        for column in columns:
            shared = [e for e in envs if (e, column) in rates and (e, dqn) in rates]
            if not shared:
                cost_row.append("—")
                perf_row.append("—")
                continue
            # seconds per env step relative to DQN's, averaged over the environments both ran
            cost = float(np.mean([rates[e, dqn] / rates[e, column] for e in shared]))
            numbers["cost"][column_label(column)] = cost
            cost_row.append(f"{100 * cost:.0f}%")
            # (score / DQN's score) / cost, over the environments where DQN's score is not 0 (cost over the
            # same ones)
            scored = [e for e in shared if cells[e, dqn][0] != 0]
            if scored:
                relative = np.mean([cells[e, column][0] / cells[e, dqn][0] for e in scored])
                cost_scored = np.mean([rates[e, dqn] / rates[e, column] for e in scored])
                numbers["performance_per_cost"][column_label(column)] = float(relative / cost_scored)
                perf_row.append(f"{numbers['performance_per_cost'][column_label(column)]:.2f}")
            else:
                perf_row.append("—")
        rows += [cost_row, perf_row]
    return header, rows, numbers


def first_solved(run: RunData) -> int | None:
    """The first evaluation's env steps with a success rate ≥ SOLVED (None: never, or no notion of success)."""
    return next((int(e["env_steps"]) for e in run.evals if e.get("success_rate", float("nan")) >= SOLVED), None)


def _arms(run: RunData) -> list:
    from actors.policies import policy_set

    return policy_set(run.config.get("policy_set", "13"))


def window_shares(run: RunData) -> dict[str, float] | None:
    """β-DQN: the share of each policy group in the meta-controller's window at the end of the run."""
    bandit = run.summary.get("bandit")
    if not bandit:
        return None
    plays = np.asarray(bandit["plays"], dtype=np.float64)
    groups = [a.group for a in _arms(run)]
    return {g: float(plays[[x == g for x in groups]].sum() / max(plays.sum(), 1)) for g in ("cov", "cor", "cor0")}


def bandit_arms(run: RunData) -> tuple[tuple, tuple] | None:
    """β-DQN at the end of the run: the arm holding most of the window and, of the others, the one with the
    largest μ + b, each as (label, share, μ, b)."""
    bandit = run.summary.get("bandit")
    if not bandit:
        return None
    plays, mu, bonus = (np.asarray(bandit[k], dtype=np.float64) for k in ("plays", "mu", "bonus"))
    labels = [a.label.replace("pi_", "π_") for a in _arms(run)]
    top = int(np.argmax(plays))
    score = np.where((plays > 0) & (np.arange(len(plays)) != top), mu + bonus, -np.inf)
    other = int(np.argmax(score))
    share = plays / max(plays.sum(), 1)
    if not np.isfinite(score[other]):  # no other arm in the window
        return (labels[top], share[top], mu[top], bonus[top]), None
    return ((labels[top], share[top], mu[top], bonus[top]), (labels[other], share[other], mu[other], bonus[other]))


def variant_rows(runs: list[RunData], env: str) -> list[str]:
    """One row per column: the final score, seeds solved, the first evaluation at ≥ 0.9 and β-DQN's
    window shares at the end."""
    success = metric(env) == "success_rate"
    head = ["column", "final score", *(["seeds ≥ 0.9", "first eval ≥ 0.9: median (range)"] if success else []),
            "window at end: π_cov / π_cor(α>0) / π_cor(0)"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for column in columns_of([r for r in runs if r.env == env]):
        group = [r for r in runs if r.env == env and r.column == column]
        mean, lo, hi = bootstrap_ci([final_score(r) for r in group])
        cells = [column_label(column), f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(group)})"]
        if success:
            firsts = [f for f in (first_solved(r) for r in group) if f is not None]
            cells.append(f"{sum(final_score(r) >= SOLVED for r in group)} of {len(group)}")
            cells.append(f"{np.median(firsts) / 1e3:.0f}k ({min(firsts) / 1e3:.0f}k–{max(firsts) / 1e3:.0f}k), "
                         f"{len(firsts)} of {len(group)} seeds" if firsts else "never")
        shares = [s for s in (window_shares(r) for r in group) if s]
        cells.append(" / ".join(f"{np.mean([s[g] for s in shares]):.2f}" for g in ("cov", "cor", "cor0"))
                     if shares else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def axis_rows(runs: list[RunData], env: str) -> list[str]:
    """Per method and axis of its variants, each value's final score over every run with that value (all the
    other axes mixed): which detail moves the result, at a glance."""
    lines = []
    success = metric(env) == "success_rate"
    for algo in dict.fromkeys(c[0] for c in columns_of(runs)):
        group = [r for r in runs if r.env == env and r.algo == algo]
        values: dict[str, dict[str, list[RunData]]] = defaultdict(lambda: defaultdict(list))
        for r in group:
            for part in filter(None, r.variant.split(",")):
                name, _, value = part.partition("=")
                values[name][value].append(r)
        for name, by_value in values.items():
            if len(by_value) < 2:
                continue
            for value, members in sorted(by_value.items(), key=lambda kv: (not _is_number(kv[0]),
                                                                           float(kv[0]) if _is_number(kv[0]) else 0,
                                                                           kv[0])):
                mean, lo, hi = bootstrap_ci([final_score(r) for r in members])
                solved = f" | {sum(final_score(r) >= SOLVED for r in members)} of {len(members)}" if success else ""
                lines.append(f"| {ALGO_LABELS.get(algo, algo)} | {name}={value} | {mean:.2f} [{lo:.2f}, {hi:.2f}] "
                             f"(n={len(members)}){solved} |")
    if not lines:
        return []
    head = ["method", "axis value", "final score over its runs", *(["runs ≥ 0.9"] if success else [])]
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head), *lines]


def bandit_rows(runs: list[RunData], env: str) -> list[str]:
    """β-DQN per run: its final score, first evaluation at ≥ 0.9, and the meta-controller's window at the end
    (the arm holding most of it, and the best other arm by μ + b)."""
    group = [r for r in runs if r.env == env and r.summary.get("bandit")]
    if not group:
        return []
    lines = ["| column | seed | final | first ≥ 0.9 | top arm: share, μ, b | best other by μ + b: share, μ, b |",
             "|" + " --- |" * 6]
    for r in sorted(group, key=lambda r: (columns_of(group).index(r.column), r.config["seed"])):
        top, other = bandit_arms(r)
        first = first_solved(r)
        lines.append(f"| {r.label} | {r.config['seed']} | {final_score(r):.2f} | "
                     f"{'—' if first is None else f'{first / 1e3:.0f}k'} | "
                     f"{top[0]}: {top[1]:.2f}, {top[2]:.2f}, {top[3]:.2f} | "
                     + ("— |" if other is None else f"{other[0]}: {other[1]:.2f}, {other[2]:.2f}, {other[3]:.2f} |"))
    return lines


def study(runs: list[RunData], root: Path) -> dict:
    """Every run with the command line that computes it again, its final score and its first evaluation at
    ≥ 0.9; and the grid's command when `root` is a grid."""
    from learner.config import command_line, run_command

    command = None
    if (root / "grid.json").is_file():
        args = json.loads((root / "grid.json").read_text())["args"]
        command = command_line({k: v for k, v in args.items() if k not in ("out", "resume", "grid", "variant")})
    rows = []
    for r in sorted(runs, key=lambda r: (r.env, columns_of(runs).index(r.column), r.config["seed"])):
        success = metric(r.env) == "success_rate"
        rows.append({"env": r.env, "variant": r.variant, "algo": r.algo, "seed": r.config["seed"],
                     "cmd": run_command(r.config, r.summary.get("device", "cpu")), "final_score": final_score(r),
                     "final_success": final_score(r) if success else None,
                     "first_success_step": first_solved(r) if success else None})
    return {"command": command, "runs": rows}


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


def _panels(n: int, width: float, height: float, ncols: int = 4):
    """A figure of n small panels (ncols per row) and the list of their axes; the spare ones hidden."""
    plt = _plt()
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             sharex=True, sharey=True)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    from matplotlib.ticker import FuncFormatter

    for ax in flat[:n]:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: steps_text(x)))
    return fig, flat[:n]


def _title(ax, text: str) -> None:
    """A panel's title, wrapped to its width (a variant's label can be long)."""
    import textwrap

    ax.set_title("\n".join(textwrap.wrap(text, 60)), fontsize=8)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    _plt().close(fig)


def learning_curves(runs: list[RunData], env: str, path: Path) -> None:
    """Mean over seeds with a 95% interval per column: one plot, or one panel per column when there are many."""
    key = metric(env)
    columns = columns_of([r for r in runs if r.env == env])
    many = len(columns) > MANY
    fig, axes = _panels(len(columns), 4, 3) if many else _panels(1, 6, 4 + 0.25 * len(columns))
    for i, column in enumerate(columns):
        ax = axes[i if many else 0]
        group = [r for r in runs if r.env == env and r.column == column]
        steps, curves = _common(group, key)
        if steps:
            _band(ax, steps, curves, f"{column_label(column)} (n={len(group)})")
        if many:
            _title(ax, f"{column_label(column)} (n={len(group)})")
    ylabel = "success rate" if key == "success_rate" else "return"
    for ax in axes:
        ax.set(xlabel="env steps", ylabel=ylabel)
    if not many:
        axes[0].set_title(env)
        axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18))
    _save(fig, path)


def _beta_columns(runs: list[RunData], env: str, has) -> list[tuple[str, str]]:
    return [c for c in columns_of(runs) if c[0] == "beta_dqn"
            and all(has(r) for r in runs if r.env == env and r.column == c)
            and any(r.env == env and r.column == c for r in runs)]


def basic_policies(runs: list[RunData], env: str, path: Path) -> bool:
    """β-DQN's three basic policies per column (a panel each)."""
    key = metric(env)
    columns = _beta_columns(runs, env, lambda r: r.evals and f"argmin_beta_{key}" in r.evals[0])
    if not columns:
        return False
    fig, axes = _panels(len(columns), 5, 3.5, ncols=3)
    for ax, column in zip(axes, columns, strict=True):
        group = [r for r in runs if r.env == env and r.column == column]
        for prefix, label in (("", "argmax_{a: β>ε} Q (pure exploitation)"), ("argmax_q_", "argmax_a Q"),
                              ("argmin_beta_", "argmin_a β")):
            steps, curves = _common(group, prefix + key)
            _band(ax, steps, curves, label)
        ax.set(xlabel="env steps", ylabel=key)
        _title(ax, f"{column_label(column)} (n={len(group)})")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{env}: β-DQN's basic policies")
    _save(fig, path)
    return True


def selection_proportions(runs: list[RunData], env: str, path: Path, points: int = 50) -> bool:
    """β-DQN's share of episodes per policy group in the bandit's window over training, per column (a panel
    each): each run's logged shares interpolated onto common env steps (within the span it logged), mean
    over seeds."""
    columns = _beta_columns(runs, env, lambda r: any("arms_cov" in m for m in r.metrics))
    if not columns:
        return False
    fig, axes = _panels(len(columns), 5, 3.5, ncols=3)
    for ax, column in zip(axes, columns, strict=True):
        group = [r for r in runs if r.env == env and r.column == column]
        total = max(r.config["total_steps"] for r in group)
        grid = np.linspace(0, total, points)
        for key, label in (("arms_cov", "π_cov"), ("arms_cor", "π_cor (α > 0)"), ("arms_cor0", "π_cor(0)")):
            per_run = []
            for r in group:
                rows = [m for m in r.metrics if key in m]
                steps = np.array([m["env_steps"] for m in rows], dtype=np.float64)
                values = np.array([m[key] for m in rows])
                per_run.append(np.where((grid >= steps[0]) & (grid <= steps[-1]), np.interp(grid, steps, values),
                                        np.nan))
            with warnings.catch_warnings():  # steps no run logged around stay empty
                warnings.simplefilter("ignore", RuntimeWarning)
                ax.plot(grid, np.nanmean(per_run, axis=0), label=label)
        ax.set(xlabel="env steps", ylabel="share of the window's episodes", ylim=(0, 1))
        _title(ax, f"{column_label(column)} (n={len(group)})")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{env}: β-DQN's policy selection")
    _save(fig, path)
    return True


def visitation(runs: list[RunData], path: Path) -> bool:
    """CliffWalk's training visits per cell, mean over seeds, a heatmap per column."""
    visited = [r for r in runs if r.env == "CliffWalk" and r.summary.get("state_visits")]
    columns = columns_of(visited)
    if not columns:
        return False
    fig, axes = _panels(len(columns), 6, 2.6, ncols=2)
    for ax, column in zip(axes, columns, strict=True):
        group = [r for r in visited if r.column == column]
        counts = np.mean([np.asarray(r.summary["state_visits"], dtype=np.float64) for r in group], axis=0)
        image = ax.imshow(np.log10(1 + counts.reshape(4, 12)), cmap="viridis")
        ax.set(xticks=[], yticks=[])
        _title(ax, f"{column_label(column)}: log10(1 + visits), n={len(group)}")
        fig.colorbar(image, ax=ax, fraction=0.02)
    _save(fig, path)
    return True


def write_report(root: Path, out: Path | None = None) -> Path:
    runs, unfinished = load_runs(root)
    if not runs:
        raise ReportError(f"no finished run (a directory with summary.json) under {root}")
    check_comparable(runs)
    out = out or root / "report"
    out.mkdir(parents=True, exist_ok=True)
    header, rows, numbers = table(runs)
    described = study(runs, root)
    lines = [f"# Report: {root.name}", ""]
    if described["command"]:
        lines += ["```bash", described["command"], f"python -m learner.report {root}", "```", ""]
    lines += [
        f"{len(runs)} finished runs" + (f" ({len(unfinished)} unfinished left out)" if unfinished else "") + ". "
        "Scores are the final evaluation's (30 episodes unless the runs said otherwise): success rate on "
        "MiniGrid and CliffWalk, return elsewhere; mean over seeds [95% bootstrap CI] (n = seeds). "
        "With few seeds the percentile bootstrap interval is narrow (never wider than the seeds' range). "
        "A column is a method and, in a grid with axes besides --env, --algo and --seeds, its variant. "
        "Computational cost: seconds per env step relative to DQN's (its first column), from the runs' own "
        "wall clock (runs that shared a machine slow each other), averaged over environments. "
        "Performance/cost: (score / DQN's score) / cost, averaged over the environments where DQN's score is "
        "not 0. `study.json` lists every run with the command that computes it again.", "",
        "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    for env in sorted({r.env for r in runs}, key=lambda e: (domain(e), e)):
        slug = env.replace("/", "-")
        learning_curves(runs, env, out / f"curves_{slug}.png")
        lines += [f"## {env}", ""]
        if len(columns_of([r for r in runs if r.env == env])) > 1 or any(r.variant for r in runs):
            lines += variant_rows(runs, env) + [""]
        effects = axis_rows(runs, env)
        if effects:
            lines += [f"### {env}: each axis value over all its runs", "",
                      "Every run of a method with that value, whatever its other axes (a main effect, averaged "
                      "over the others' values).", "", *effects, ""]
        lines += [f"![learning curves]({'curves_' + slug}.png)", ""]
        if selection_proportions(runs, env, out / f"selection_{slug}.png"):
            lines += [f"![β-DQN's policy selection](selection_{slug}.png)", ""]
        if basic_policies(runs, env, out / f"basic_{slug}.png"):
            lines += [f"![β-DQN's basic policies](basic_{slug}.png)", ""]
        per_run = bandit_rows(runs, env)
        if per_run:
            lines += [f"### {env}: β-DQN's meta-controller at the end of each run", "",
                      "The window's episodes per arm at the last step: the arm that holds most of them (its share, "
                      "μ and b), and of the others the one with the largest μ + b [eq:policy select].", "",
                      *per_run, ""]
    if visitation(runs, out / "cliffwalk_visits.png"):
        lines += ["## CliffWalk state visitation (training)", "", "![visits](cliffwalk_visits.png)", ""]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    (out / "report.json").write_text(json.dumps({"runs": len(runs), "unfinished": unfinished, **numbers},
                                                indent=2) + "\n")
    (out / "study.json").write_text(json.dumps(described, indent=2) + "\n")
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
