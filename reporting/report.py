"""`python -m learner.report RUNS_DIR [RUNS_DIR ...]`: the paper's table and figures from finished runs.

Reads every run under each RUNS_DIR (a directory with `summary.json`, `config.json`, `evals.csv` and
`metrics.jsonl`; grids nest them one level down) and writes `report.md` and PNG figures (default: into
RUNS_DIR/report; with several, `--out` says where), e.g. one Table 1 from one grid per domain:
`python -m learner.report runs/table1-minigrid runs/table1-minatar --out results/table1`.

- Table 1's layout: per environment and algorithm the final score — success rate on MiniGrid and
  CliffWalk, return elsewhere — as the mean over seeds with a 95% bootstrap confidence interval and the
  number of seeds; domain averages; computational cost relative to DQN (seconds per env step: the runs'
  own, or with `--cost bench/results/cost-2cpu-cpu.json` what `bench/cost.py` measured) and performance/cost
  ((score / DQN's score) / cost, spec §8);
- per environment and column: seeds solved, the first evaluation at ≥ 0.9, and what the behaviour did at the
  end (the training episodes of the last evaluation interval, 100k env steps by default: their success rate
  or mean return), which tells a greedy score of 0 that learned nothing from one whose behaviour succeeds;
- learning curves (mean over seeds, shaded 95% bootstrap interval) per environment;
- β-DQN's policy-selection proportions over training (π_cov, π_cor(α>0), π_cor(0));
- β-DQN's three basic policies (pure exploitation, argmin β, argmax Q), when the runs evaluated them;
- each β-DQN run's meta-controller at its end: its training episodes' score, the arm holding most of the
  window and the best other arm by μ + b;
- CliffWalk state-visitation heatmaps of β-DQN and DQN.

A column is a method and, for a grid with axes besides --env, --algo and --seeds, its variant (the values of
those axes: `--bandit-returns minmax,raw` makes two β-DQN columns). `--column-by bandit-returns` does the same
for runs of separate grids that differ in that flag, e.g. a probe with `--bandit-returns raw` beside the grid
it departs from. Runs are compared only when their configurations agree in everything but the seed, the
method, the grid's axes (and the flags --column-by names) and bookkeeping such as directories and addresses
(`configuration.flags`'s field roles; a field a method does not read is not compared with that method's runs);
otherwise it stops with one line naming the field and two runs that differ.
`--seeds 0-2` keeps the runs of those seeds only (Table 1's three from records that also hold seeds 3-4). A
run that two RUNS_DIRs both hold (a probe's record repeats the runs of its grid) counts once.
Beside the report, `study.json` lists every run with the command line that computes it again.

A RUNS_DIR may also be a report's directory (runs.csv and study.json, no run under it: a committed
`results/<grid>/`): its runs enter the tables as it recorded them (`reporting.records`), when
their directories are gone; the figures and the meta-controller's rows are drawn from run directories only.
"""
from __future__ import annotations

import argparse
import csv
import errno
import json
import math
import os
import shlex
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from actors.envs import SUCCESS_DOMAINS, domain
from configuration.errors import OneLineParser, user_error
from configuration.flags import LEGACY, ConfigError, flag, grid_command, parse_seeds, run_command, run_seed
from filesystem.safe import OutputDirectory, Unreadable, read_bounded, write_error
from reporting.figures import basic_policies, learning_curves, performance_profile, selection_proportions, visitation
from reporting.records import (
    RECORDS,
    check_copies_dir,
    command_fields,
    is_recorded,
    load_all,
    pinned_command,
    write_copies,
)
from reporting.results import (
    ALGO_LABELS,
    SOLVED,
    ReportError,
    RunData,
    bandit_arms,
    check_comparable,
    column_by,
    column_fields,
    column_label,
    columns_of,
    copies_once,
    exploration,
    final_score,
    first_solved,
    group_labels,
    has_directory,
    metric,
    steps_text,
    train_score,
    train_window,
    value_order,
    window_shares,
)
from reporting.stats import MAX_REPS, REPS, aggregates, difference, improvement, mean_ci, profile


def score_text(mean: float, lo: float, hi: float, n: int) -> str:
    """A cell's mean with its 95% interval and seed count; one seed has no interval to show: its value alone."""
    return f"{mean:.2f} (n=1)" if n == 1 else f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={n})"

REPORT_FILES = ("report.md", "report.json", "study.json", "runs.csv", RECORDS)
FIGURES = ("curves_", "selection_", "basic_", "visits_", "profile.png", "cliffwalk_visits.png")  # (the last: older)
RUN_SIGNS = (".written", ".lock", "config.json", "checkpoint.pt", "summary.json")  # a run's own directory


def report_directory(out: Path) -> OutputDirectory:
    """Where a report is written whole (`filesystem.safe.OutputDirectory`): `out` absent, empty, or an
    earlier report (its report.md a report's, beside its study.json or report.json), whose entries this report
    replaces (its figures too: none stays stale); a user's other files beside an earlier report are kept and
    named. Never a run's own directory, a user's directory, or anything through a link."""
    if not out.is_symlink() and out.is_dir():
        run = next((name for name in RUN_SIGNS if os.path.lexists(out / name)), None)
        if run is not None:
            raise ReportError(f"--out {out} is a run's directory (it holds {run}): a report is never written into "
                              "one; give --out another directory")

    def owns(name: str) -> bool:
        return name in REPORT_FILES or (name.endswith(".png") and name.startswith(FIGURES))

    def earlier(path: Path) -> bool:
        try:
            head = read_bounded(path / "report.md", 4096 << 10).split("\n", 1)[0]
        except Unreadable:
            return False
        return head.startswith("# Report: ") and any((path / n).is_file() for n in ("study.json", "report.json"))

    return _Announced(out, owns, earlier)


class _Announced(OutputDirectory):
    """A report's OutputDirectory whose refusals and failures to write are a ReportError (one line), and that
    names, in one line, a user's files it leaves beside the earlier report."""

    def __enter__(self) -> Path:
        try:
            stage = super().__enter__()
        except OutputDirectory.Refused as e:
            raise ReportError(str(e)) from None
        except OSError as e:
            raise ReportError(f"{write_error(self.target, e)}; no report was written") from None
        if self.kept:
            print(f"note: {self.target} holds an earlier report and other files, kept as they are: "
                  f"{', '.join(self.kept[:4])}{' …' if len(self.kept) > 4 else ''}", file=sys.stderr)
        return stage

    def __exit__(self, kind, value, traceback) -> None:
        try:
            super().__exit__(kind, value, traceback)
        except OSError as e:  # a full disk, a read-only file system, as the report is moved in
            raise ReportError(f"{write_error(self.target, e)}; the report is not complete") from None
        if isinstance(value, OSError):  # as the report was written: nothing of it is left
            where = Path(value.filename) if value.filename else self.target
            if self.stage in where.parents:
                where = self.target / where.relative_to(self.stage)
            raise ReportError(f"{write_error(where, value)}; no report was written") from None


MAX_COST_BYTES = 1 << 20  # bench/cost.py's JSON is a few kB
COST_RANGE = (0.01, 1e6)  # a method's cost in percent of DQN's: what a measurement can sanely say


def markdown_text(value, at_most: int = 120) -> str:
    """Text from a file, safe inside a Markdown paragraph or table cell: one line (control characters and line
    breaks as spaces), Markdown's own characters escaped, at most `at_most` characters."""
    text = "".join(" " if not c.isprintable() else c for c in str(value))
    text = " ".join(text.split())
    if len(text) > at_most:
        text = text[:at_most - 1] + "…"
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in text)


def finite(value):
    """`value` with every float that is not finite as None: what report.json holds is valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, np.floating):
        return finite(float(value))
    return value


def measured_cost(path: Path) -> tuple[dict[str, float], dict]:
    """`bench/cost.py`'s measured cost per method from the JSON it wrote (seconds per env step relative to
    DQN's, as a fraction), and where it was measured (its environment, device, runtime, actors, CPU, GPU and
    commit, as far as the file says); a ReportError naming the bad value for anything else."""
    def refuse(what: str) -> ReportError:
        return ReportError(f"--cost {path}: {what}; give the JSON bench/cost.py wrote, e.g. "
                           "bench/results/cost-2cpu-cpu.json")
    try:
        result = json.loads(read_bounded(path, MAX_COST_BYTES))
    except Unreadable as e:
        raise refuse("no such file" if e.cause == os.strerror(errno.ENOENT) else str(e)) from None
    except (ValueError, RecursionError) as e:
        raise refuse(f"not JSON ({type(e).__name__})") from None
    if not isinstance(result, dict) or "bench/cost.py" not in str(result.get("command", "")) or \
            not isinstance(result.get("cost_percent"), dict):
        raise refuse("not a bench/cost.py result (its command and cost_percent)")
    percent = {}
    for algo, value in result["cost_percent"].items():
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not COST_RANGE[0] <= number <= COST_RANGE[1]:  # (NaN too; an int too large too)
            shown = repr(value) if len(repr(value)) <= 24 else repr(value)[:20] + "…"
            raise refuse(f"cost_percent[{algo[:40]!r}] is {shown}, where a positive finite number "
                         f"belongs (a percentage of DQN's cost, {COST_RANGE[0]:g} to {COST_RANGE[1]:,.0f})")
        percent[algo] = float(number)
    if "dqn" not in percent:
        raise refuse("its cost_percent has no dqn, which every cost is relative to")
    cost = {algo: value / percent["dqn"] for algo, value in percent.items()}
    machine = result.get("machine") if isinstance(result.get("machine"), dict) else {}
    source = {"file": path.name, "env": result.get("env"), "device": result.get("device"),
              "runtime": result.get("runtime"), "actors": result.get("actors"), "cpu": machine.get("cpu"),
              "gpu": machine.get("gpu"), "commit": machine.get("commit")}
    return cost, {k: v for k, v in source.items() if v is not None}


def cost_phrase(source: dict) -> str:
    """Where a measured cost came from, in words: `cost-2cpu-cpu.json: MinAtar/Breakout, cpu, serial runtime,
    1 actor, AMD EPYC, commit c300f13`."""
    parts = [source.get("env"), source.get("device"),
             source.get("runtime") and f"{source['runtime']} runtime",
             source.get("actors") is not None and f"{source['actors']} actor{'' if source['actors'] == 1 else 's'}",
             source.get("cpu"), source.get("gpu"), source.get("commit") and f"commit {source['commit']}"]
    return markdown_text(f"{source['file']}: {', '.join(str(p) for p in parts if p)}", 400)


def table(runs: list[RunData], reps: int | None = None, measured: dict[str, float] | None = None
          ) -> tuple[list[str], list[list[str]], dict]:
    """Table 1's rows (domain, environment, one cell per column), domain averages, cost and
    performance/cost against DQN (its first column when DQN has variants); and the numbers behind them.
    The cost is the runs' own seconds per env step, or `measured`'s per method (`measured_cost`) when given."""
    columns = columns_of(runs)
    envs = sorted({r.env for r in runs}, key=lambda e: (domain(e), e))
    cells: dict[tuple[str, tuple], tuple[float, float, float, int]] = {}
    rates: dict[tuple[str, tuple], float] = {}
    for env in envs:
        for column in columns:
            group = [r for r in runs if r.env == env and r.column == column]
            if group:
                cells[env, column] = (*mean_ci([final_score(r) for r in group], reps), len(group))
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
                    row.append(score_text(mean, lo, hi, n))
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
            # seconds per env step relative to DQN's: measured, or the runs' own averaged over the environments
            # both ran
            cost = measured[column[0]] if measured else float(np.mean([rates[e, dqn] / rates[e, column]
                                                                        for e in shared]))
            numbers["cost"][column_label(column)] = cost
            cost_row.append(f"{100 * cost:.0f}%")
            # (score / DQN's score) / cost, over the environments where DQN's score is not 0 (the runs' own
            # cost over the same ones)
            scored = [e for e in shared if cells[e, dqn][0] != 0]
            if scored:
                relative = np.mean([cells[e, column][0] / cells[e, dqn][0] for e in scored])
                cost_scored = cost if measured else np.mean([rates[e, dqn] / rates[e, column] for e in scored])
                numbers["performance_per_cost"][column_label(column)] = float(relative / cost_scored)
                perf_row.append(f"{numbers['performance_per_cost'][column_label(column)]:.2f}")
            else:
                perf_row.append("—")
        rows += [cost_row, perf_row]
    return header, rows, numbers


def _matrix(runs: list[RunData], column: tuple, envs: list[str], scale: dict[str, float] | None = None
            ) -> np.ndarray | None:
    """A column's final scores as rliable takes them, runs × environments (seeds in order, each divided by
    `scale[env]` when given); None when its seed counts differ between the environments (no such matrix)."""
    per_env = [sorted((r for r in runs if r.env == env and r.column == column), key=lambda r: r.config["seed"])
               for env in envs]
    if not per_env or len({len(group) for group in per_env}) != 1 or not per_env[0]:
        return None
    return np.array([[final_score(r) / (scale[env] if scale else 1.0) for env, r in zip(envs, row, strict=True)]
                     for row in zip(*per_env, strict=True)])


def aggregate_rows(runs: list[RunData], out: Path, reps: int | None = None) -> tuple[list[str], dict]:
    """With two or more columns: per domain (and over all of them), each column's IQM, mean and median of its
    final scores normalised by the baseline's mean in the same environment (DQN's first column, else the first
    column), with stratified bootstrap intervals; for every two columns the probability that a run of the later
    one scores above a run of the earlier one (raw scores, per environment, averaged); and the performance
    profile of the normalised scores (a figure). All from rliable (`reporting.stats`)."""
    columns = columns_of(runs)
    if len(columns) < 2:
        return [], {}
    base = next((c for c in columns if c[0] == "dqn"), columns[0])
    envs = sorted({r.env for r in runs}, key=lambda e: (domain(e), e))
    base_mean = {e: float(np.mean([final_score(r) for r in runs if r.env == e and r.column == base]))
                 for e in envs if any(r.env == e and r.column == base for r in runs)}
    groups = {dom: [e for e in envs if domain(e) == dom] for dom in sorted({domain(e) for e in envs})}
    if len(groups) > 1:
        groups["all"] = envs
    numbers: dict = {"baseline": column_label(base), "aggregates": {}, "improvement": {}}
    lines = [f"Final scores normalised by {column_label(base)}'s mean in the same environment (environments where "
             "that mean is not above 0, or that it did not run, are left out), aggregated over a domain's "
             "environments as rliable does: the interquartile mean of every run's score, and the mean and the "
             "median of the environments' means; each with a 95% stratified bootstrap interval over seeds. A column "
             "whose seed counts differ between environments has no aggregate (—).", "",
             "| domain | environments | column | IQM | mean | median |", "| --- | --- | --- | --- | --- | --- |"]
    profiled: dict[str, np.ndarray] = {}
    for dom, dom_envs in groups.items():
        scaled = [e for e in dom_envs if base_mean.get(e, 0) > 0]
        left = [e for e in dom_envs if e not in scaled]
        where = f"{len(scaled)}" + (f" ({', '.join(left)} left out)" if left else "")
        for column in columns:
            matrix = _matrix(runs, column, scaled, base_mean) if scaled else None
            if matrix is None:
                lines.append(f"| {dom} | {where} | {column_label(column)} | — | — | — |")
                continue
            values = aggregates(matrix, reps)
            numbers["aggregates"][f"{dom}|{column_label(column)}"] = values
            if dom == ("all" if "all" in groups else next(iter(groups))):
                profiled[column_label(column)] = matrix
            lines.append(f"| {dom} | {where} | {column_label(column)} | "
                         + " | ".join(f"{p:.2f} [{lo:.2f}, {hi:.2f}]" for p, lo, hi in values.values()) + " |")
    lines += ["", "Probability of improvement (rliable): P(X > Y), the chance that a run of X ends above a run of Y "
              "in the same environment (a tie counts half), averaged over the environments both ran with equal seed "
              "counts; 95% stratified bootstrap interval. 0.5 is no difference.", "",
              "| X | Y | environments | P(X > Y) |", "| --- | --- | --- | --- |"]
    for i, y in enumerate(columns):
        for x in columns[i + 1:]:
            shared = [e for e in envs if any(r.env == e and r.column == x for r in runs)
                      and any(r.env == e and r.column == y for r in runs)]
            mx, my = _matrix(runs, x, shared), _matrix(runs, y, shared)
            if mx is None or my is None:
                lines.append(f"| {column_label(x)} | {column_label(y)} | {len(shared)} | — |")
                continue
            p, lo, hi = improvement(mx, my, reps)
            numbers["improvement"][f"{column_label(x)}|{column_label(y)}"] = (p, lo, hi)
            lines.append(f"| {column_label(x)} | {column_label(y)} | {len(shared)} | {p:.2f} [{lo:.2f}, {hi:.2f}] |")
    lines.append("")
    if profiled:
        top = max(float(m.max()) for m in profiled.values())
        taus = np.linspace(0.0, max(top, 1.0) * 1.05, 60)
        curves, intervals = profile(profiled, taus, reps)
        performance_profile(taus, curves, intervals, column_label(base), out / "profile.png")
        lines += ["![performance profile](profile.png)", ""]
    return lines, numbers


def variant_rows(runs: list[RunData], env: str, reps: int | None = None) -> list[str]:
    """One row per column: the final score, seeds solved, the first evaluation at ≥ 0.9, the training
    episodes' score over the last evaluation interval and the groups' shares of the window at the end (β-DQN's
    policy groups)."""
    success = metric(env) == "success_rate"
    window = "/".join(steps_text(w) for w in sorted({train_window(r) for r in runs if r.env == env}))
    groups = " or ".join(dict.fromkeys(" / ".join(group_labels(r.algo).values()) for r in runs
                                       if r.env == env and group_labels(r.algo)))
    head = ["column", "final score", *(["seeds ≥ 0.9", "first eval ≥ 0.9: median (range)"] if success else []),
            f"training {'success' if success else 'return'}, last {window}",
            f"window at end: {groups or 'groups of arms'}"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for column in columns_of([r for r in runs if r.env == env]):
        group = [r for r in runs if r.env == env and r.column == column]
        mean, lo, hi = mean_ci([final_score(r) for r in group], reps)
        cells = [column_label(column), score_text(mean, lo, hi, len(group))]
        if success:
            firsts = [f for f in (first_solved(r) for r in group) if f is not None]
            cells.append(f"{sum(final_score(r) >= SOLVED for r in group)} of {len(group)}")
            cells.append(f"{np.median(firsts) / 1e3:.0f}k ({min(firsts) / 1e3:.0f}k–{max(firsts) / 1e3:.0f}k), "
                         f"{len(firsts)} of {len(group)} seeds" if firsts else "never")
        trained = [t for t in (train_score(r) for r in group) if t is not None]
        if trained:
            mean, lo, hi = mean_ci(trained, reps)
            cells.append(score_text(mean, lo, hi, len(trained)))
        else:
            cells.append("—")
        shares = [s for s in (window_shares(r) for r in group) if s]
        cells.append(" / ".join(f"{np.mean([s[g] for s in shares]):.2f}" for g in group_labels(column[0]))
                     + (f" (n={len(shares)})" if len(shares) < len(group) else "") if shares
                     else "in the record's report.md" if group_labels(column[0]) and not any(map(has_directory, group))
                     else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def axis_rows(runs: list[RunData], env: str, reps: int | None = None) -> list[str]:
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
            for value, members in sorted(by_value.items(), key=lambda kv: value_order(kv[0])):
                mean, lo, hi = mean_ci([final_score(r) for r in members], reps)
                solved = f" | {sum(final_score(r) >= SOLVED for r in members)} of {len(members)}" if success else ""
                lines.append(f"| {ALGO_LABELS.get(algo, algo)} | {name}={value} | {mean:.2f} [{lo:.2f}, {hi:.2f}] "
                             f"(n={len(members)}){solved} |")
    if not lines:
        return []
    head = ["method", "axis value", "final score over its runs", *(["runs ≥ 0.9"] if success else [])]
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head), *lines]


def bandit_rows(runs: list[RunData], env: str) -> list[str]:
    """β-DQN per run: its final score, first evaluation at ≥ 0.9 (where success is the score), the training
    episodes' score over the last evaluation interval (what the behaviour the bandit chose earned), and the
    meta-controller's window at the end (the arm holding most of it, and the best other arm by μ + b)."""
    group = [r for r in runs if r.env == env and r.summary.get("bandit")]
    if not group:
        return []
    success = metric(env) == "success_rate"
    window = "/".join(steps_text(w) for w in sorted({train_window(r) for r in group}))
    head = ["column", "seed", "final", *(["first ≥ 0.9"] if success else []),
            f"training {'success' if success else 'return'}, last {window}", "top arm: share, μ, b",
            "best other by μ + b: share, μ, b"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in sorted(group, key=lambda r: (columns_of(group).index(r.column), r.config["seed"])):
        top, other = bandit_arms(r)
        first, trained = first_solved(r) if success else None, train_score(r)
        lines.append(f"| {r.label} | {r.config['seed']} | {final_score(r):.2f} | "
                     + (f"{'—' if first is None else f'{first / 1e3:.0f}k'} | " if success else "")
                     + f"{'—' if trained is None else f'{trained:.2f}'} | "
                     f"{top[0]}: {top[1]:.2f}, {top[2]:.2f}, {top[3]:.2f} | "
                     + ("— |" if other is None else f"{other[0]}: {other[1]:.2f}, {other[2]:.2f}, {other[3]:.2f} |"))
    return lines


def same_grid(a: str, b: str) -> bool:
    """Whether two grid commands are one grid: the same flags with the same values, in any order, but a LEGACY
    flag that one of them leaves out (a record's command from before it was named; pinned_command)."""
    fa, fb = command_fields(a) or {}, command_fields(b) or {}
    return all(fa.get(k) == fb.get(k) for k in set(fa) | set(fb) if not (k in LEGACY and (k not in fa or k not in fb)))


def study(runs: list[RunData], roots: list[Path]) -> dict:
    """Every run with the command line that computes it again, its final score and its first evaluation at
    ≥ 0.9; and the command of each root that is a grid."""
    commands = []
    for root in roots:
        if (root / "grid.json").is_file():
            args = json.loads((root / "grid.json").read_text())["args"]
            commands.append(grid_command(args))
    for r in runs:  # a report's record: the commands of the grids its runs came from
        for c in (pinned_command(c, grid=True) for c in (r.recorded or {}).get("commands", [])):
            if not any(same_grid(c, known) for known in commands):
                commands.append(c)
    rows = []
    for r in sorted(runs, key=lambda r: (r.env, columns_of(runs).index(r.column), r.config["seed"])):
        success = metric(r.env) == "success_rate"
        rows.append({"env": r.env, "variant": r.variant, "algo": r.algo, "seed": r.config["seed"],
                     "cmd": pinned_command(r.recorded["cmd"]) if r.recorded
                     else run_command(r.config, r.summary.get("device", "cpu")),
                     "final_score": final_score(r), "train_score": train_score(r),
                     "final_success": final_score(r) if success else None,
                     "first_success_step": first_solved(r) if success else None})
    return {"commands": commands, "runs": rows}


def listed(names: list[str], sep: str, at_most: int = 4) -> str:
    """Names joined by `sep`, the first `at_most` of them and a count of the rest where there are more (a Table 1
    built from dozens of records still has a one-line title; the report's command lists them all)."""
    more = len(names) - at_most
    return sep.join(names if more <= 1 else [*names[:at_most], f"{more} more"])


def write_report(roots: Path | list[Path], out: Path | None = None, column_flags: str = "",
                 reps: int | None = None, seeds: str = "", cost: Path | None = None) -> Path:
    """The report of every finished run under `roots` (one directory or several) in `out` (default: the one
    root's `report/`); `column_flags` (`--column-by`'s text) names flags whose values split the columns as a
    grid's axes do; `reps`: the bootstrap's resamples (default `reporting.stats.REPS`); `seeds` (`--seeds`'
    text, e.g. 0-2): only the runs of those seeds; `cost`: a `bench/cost.py` JSON whose measured cost per
    method the cost row takes instead of the runs' own speeds."""
    fields = column_fields(column_flags)
    measured, source = measured_cost(Path(cost)) if cost is not None else (None, None)
    try:
        kept = set(parse_seeds(seeds)) if seeds else None
    except ConfigError as e:
        raise ReportError(str(e)) from None
    given = [Path(roots)] if isinstance(roots, (str, Path)) else [Path(root) for root in roots]
    roots = [root for k, root in enumerate(given) if root.resolve() not in {r.resolve() for r in given[:k]}]
    if out is None and len(roots) > 1:
        raise ReportError(f"{len(roots)} RUNS_DIRs need --out (where their one report goes)")
    if len(roots) > 1:
        for root in roots:
            if next(root.rglob("config.json"), None) is None and not is_recorded(root):
                raise ReportError(f"no run (a directory with config.json) under {root}, and it is not a report's "
                                  "directory (with runs.csv)")
    runs, unfinished = load_all(*roots)
    if not runs:
        raise ReportError(f"no finished run (a directory with summary.json) under {' or '.join(map(str, roots))}, "
                          "and no report's record (runs.csv and study.json)")
    column_by(runs, fields)
    found = len(copies_once(runs)[0])  # finished runs, each once
    if kept is not None:
        runs = [r for r in runs if int(r.config["seed"]) in kept]
        unfinished = [u for u in unfinished if run_seed(Path(u).name) in kept | {None}]
        if not runs:
            raise ReportError(f"--seeds {seeds}: none of the {found} finished runs under "
                              f"{' and '.join(map(str, roots))} has one of those seeds")
    runs, copies = copies_once(runs)
    check_comparable(runs)
    if measured is not None:
        if not any(r.algo == "dqn" for r in runs):
            raise ReportError(f"--cost {cost}: these runs have no DQN column, which the cost row is relative to "
                              "(leave out --cost)")
        unmeasured = sorted({r.algo for r in runs} - set(measured))
        if unmeasured:
            raise ReportError(f"--cost {cost} has no cost for {', '.join(unmeasured)} (it has "
                              f"{', '.join(sorted(measured))}); measure it with bench/cost.py --algos")
    asked = out is not None
    out = out or roots[0] / "report"
    for root in roots:  # a record is what is left of its runs: never written over
        if is_recorded(root) and out.resolve().is_relative_to(root.resolve()):
            raise ReportError(f"{root} is a report's record, which this report would write into "
                              f"({out}); give --out another directory")
        if not is_recorded(root) and root.resolve().is_relative_to(out.resolve()):  # a record above runs
            raise ReportError(f"--out {out} would put this report's record (runs.csv) at or above the runs of "
                              f"{root}, which then could not be reported again; give --out another directory "
                              f"(default: {root / 'report'})")
    check_copies_dir(out)
    with report_directory(out) as stage:
        header, rows, numbers = table(runs, reps, measured)
        drawn = [r for r in runs if has_directory(r)]  # curves and the meta-controller need the run's directory
        described = study(runs, roots)
        records = list(dict.fromkeys(str(Path(r.path).parent) for r in runs if not has_directory(r)))  # (runs.csv's)
        left = ([f"{found - len(runs)} of other seeds left out"] if len(runs) < found else []) + \
            ([f"{copies} duplicate{'' if copies == 1 else 's'} left out: a run that two sources hold counts once"]
             if copies else []) + ([f"{len(unfinished)} unfinished or damaged left out"] if unfinished else [])
        lines = [f"# Report: {listed([root.name for root in roots], ' + ')}", ""]
        again = (f"python -m learner.report {' '.join(shlex.quote(str(r)) for r in roots)}"
                 + (f" --out {shlex.quote(str(out))}" if asked else "")
                 + (f" --column-by {','.join(flag(f)[2:] for f in fields)}" if fields else "")
                 + (f" --seeds {shlex.quote(seeds)}" if kept is not None else "")
                 + (f" --cost {shlex.quote(str(cost))}" if cost is not None else ""))
        lines += ["```bash", *described["commands"], again, "```", ""]  # the grids' commands, then this report's
        lines += [
            f"{len(runs)} finished runs" + (f" of seeds {seeds}" if kept is not None else "")
            + (f" ({'; '.join(left)})" if left else "") + ". "
            "Scores are the final evaluation's (30 episodes unless the runs said otherwise): success rate on "
            f"{' and '.join(SUCCESS_DOMAINS)}, return elsewhere; mean over seeds [95% bootstrap CI] (n = seeds). "
            "With few seeds the percentile bootstrap interval is narrow (never wider than the seeds' range); one "
            "seed's cell is its value alone. "
            "A column is a method and, in a grid with axes besides --env, --algo and --seeds (or for the flags "
            "--column-by names), its variant. "
            + ("Computational cost: seconds per env step relative to DQN's (its first column), from the runs' own "
               "wall clock (runs that shared a machine slow each other), averaged over environments. "
               if measured is None
               else "Computational cost: what `bench/cost.py` measured per method, seconds per env step relative to "
               f"DQN's ({cost_phrase(source)}), the same for every column of a method. ")
            + "Performance/cost: (score / DQN's score) / cost, averaged over the environments where DQN's score is "
            "not 0. `study.json` lists every run with the command that computes it again."
            + (f" {len(runs) - len(drawn)} of the runs are a report's record (its runs.csv and study.json: "
               f"{listed(records, ', ')}): they count in the tables, with their training "
               "score as recorded; the curves, the selection shares and the meta-controller's rows are drawn from the "
               "runs' directories only." if len(drawn) < len(runs) else ""), "",
            "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines += ["", "Exploration, as each column's runs acted: " + "; ".join(
            f"{column_label(column)}: {', '.join(schedules)}"
            for column, schedules in explorations(runs).items()) + ".",
            ""]
        tested, numbers["tests"] = test_rows(runs)
        if tested:
            lines += ["## Each environment against DQN", "",
                      "The difference of the final scores' means (the column's minus DQN's), two-sided tests over the "
                      "seeds: Welch's t-test, and the Mann–Whitney test as an exact permutation test over every split "
                      "of the runs (ties count half) with the smallest p it can reach with these run counts (3 a side: "
                      "0.10, so it can never call a difference at 0.05; 5 a side: 0.008). \"Called\": "
                      "Welch's p below 0.05.", "", *tested, ""]
        summed, extra = aggregate_rows(runs, stage, reps)
        numbers.update(extra)
        if summed:
            lines += ["## Aggregates over environments", "", *summed]
        for env in sorted({r.env for r in runs}, key=lambda e: (domain(e), e)):
            slug = env.replace("/", "-").replace(":", "-")
            lines += [f"## {env}", ""]
            if len(columns_of([r for r in runs if r.env == env])) > 1 or any(r.variant for r in runs) or \
                    not any(r.env == env for r in drawn):  # a record's runs alone: no curve, so their numbers here
                lines += variant_rows(runs, env, reps) + [""]
            effects = axis_rows(runs, env, reps)
            if effects:
                lines += [f"### {env}: each axis value over all its runs", "",
                          "Every run of a method with that value, whatever its other axes (a main effect, averaged "
                          "over the others' values).", "", *effects, ""]
            if any(r.env == env for r in drawn):
                learning_curves(drawn, env, stage / f"curves_{slug}.png")
                lines += [f"![learning curves]({'curves_' + slug}.png)", ""]
            if selection_proportions(drawn, env, stage / f"selection_{slug}.png"):
                lines += [f"![policy selection](selection_{slug}.png)", ""]
            if basic_policies(drawn, env, stage / f"basic_{slug}.png"):
                lines += [f"![evaluation policies](basic_{slug}.png)", ""]
            per_run = bandit_rows(drawn, env)
            if per_run:
                lines += [f"### {env}: the meta-controller at the end of each run", "",
                          "The window's episodes per arm at the last step: the arm that holds most of them (its share, "
                          "μ and b), and of the others the one with the largest μ + b [eq:policy select].", "",
                          *per_run, ""]
        drawn_visits = visitation(drawn, stage)
        if drawn_visits is not None:
            env, name = drawn_visits
            lines += [f"## {env}: state visitation (training)", "", f"![visits]({name})", ""]
        (stage / "report.md").write_text("\n".join(lines) + "\n")
        (stage / "report.json").write_text(json.dumps(finite({"runs": len(runs), "unfinished": unfinished,
                                                              **numbers, "cost_source": source}),
                                                      indent=2, allow_nan=False) + "\n")
        (stage / "study.json").write_text(json.dumps(finite(described), indent=2, allow_nan=False) + "\n")
        write_runs_csv(runs, stage / "runs.csv")
        write_copies(runs, stage / RECORDS)
    return out / "report.md"


RUNS_CSV = ("env", "algo", "variant", "seed", "env_steps", "score", "metric", "train_score", "wall_seconds",
            "env_steps_per_s", "commit", "cpu")


def test_rows(runs: list[RunData]) -> tuple[list[str], dict]:
    """Per environment and column other than DQN's, its final scores against DQN's (`stats.difference`): the
    table's rows, and the numbers by "env|column"; none where no DQN column is there to test against."""
    columns = columns_of(runs)
    dqn = next((c for c in columns if c[0] == "dqn"), None)
    if dqn is None:
        return [], {}
    lines = ["| environment | column | n (column, DQN) | difference | Welch p | Mann–Whitney p (least) | called |",
             "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    numbers = {}
    for env in sorted({r.env for r in runs}, key=lambda e: (domain(e), e)):
        base = [final_score(r) for r in runs if r.env == env and r.column == dqn]
        for column in columns:
            if column == dqn:
                continue
            mine = [final_score(r) for r in runs if r.env == env and r.column == column]
            if len(mine) < 2 or len(base) < 2:
                continue
            d = difference(mine, base)
            numbers[f"{env}|{column_label(column)}"] = d
            welch = "—" if d["welch_p"] is None else f"{d['welch_p']:.3f}"
            if d["welch_p"] is not None:
                called = "yes" if d["welch_p"] < 0.05 else "no"
            else:  # both sides constant: Welch's test is undefined
                called = "no (identical scores)" if sorted(mine) == sorted(base) else \
                    "no (Welch undefined: each side constant)"
            whitney = "—" if d["mann_whitney_p"] is None else f"{d['mann_whitney_p']:.3f}"
            lines.append(f"| {env} | {column_label(column)} | {len(mine)}, {len(base)} | {d['difference']:+.2f} | "
                         f"{welch} | {whitney} ({d['mann_whitney_least_p']:.3f}) | {called} |")
    return (lines if len(lines) > 2 else []), numbers


def explorations(runs: list[RunData]) -> dict[tuple, list[str]]:
    """Per column, the ε schedules its runs acted by (`exploration`), each once: one, unless its runs differ in
    length (the decay is a share of the run) or a grid varied the schedule."""
    found: dict[tuple, dict[str, None]] = {}
    for run in sorted(runs, key=lambda r: (r.algo, r.variant)):
        found.setdefault(run.column, {})[exploration(run)] = None
    return {column: list(schedules) for column, schedules in found.items()}


def write_runs_csv(runs: list, path: Path) -> None:
    """One row per run: what it ran, its final score (success rate on MiniGrid and CliffWalk, return elsewhere),
    its training episodes' score over its last evaluation interval (`train_score`, same metric; empty when none
    was logged), how long and how fast, the commit of the code that ran it and the CPU model it ran on (empty
    where the run did not record it)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(RUNS_CSV)
        for r in sorted(runs, key=lambda r: (domain(r.env), r.env, r.algo, r.variant, int(r.config["seed"]))):
            trained = train_score(r)
            writer.writerow([r.env, r.algo, r.variant, r.config["seed"], r.summary.get("env_steps", ""),
                             f"{final_score(r):.6g}", metric(r.env), "" if trained is None else f"{trained:.6g}",
                             r.summary.get("wall_seconds", ""), r.summary["env_steps_per_s"],
                             r.summary.get("commit", ""), r.summary.get("cpu") or ""])


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m learner.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs_dir", nargs="+",
                        help="a directory of runs (a grid's, or any tree of run directories), or a report's directory "
                             "(runs.csv and study.json: its recorded runs); several make one report")
    parser.add_argument("--out", default="", help="where report.md and the figures go (default RUNS_DIR/report; "
                                                  "needed with several RUNS_DIRs)")
    parser.add_argument("--column-by", default="", metavar="FLAGS",
                        help="flags (e.g. bandit-returns) whose values split the columns as a grid's axes do: "
                             "runs of separate grids that differ in them, side by side (runs.csv's and "
                             "study.json's variant then name them too)")
    parser.add_argument("--seeds", default="", metavar="SEEDS",
                        help="only the runs of these seeds (as learner.main's --seeds: 0-2, 0,3,7 or 0-2,5), e.g. "
                             "Table 1's seeds 0-2 from records that also hold seeds 3-4")
    parser.add_argument("--reps", type=int, default=None, metavar="N",
                        help=f"bootstrap resamples of every interval (default {REPS}; rliable's stratified bootstrap)")
    parser.add_argument("--cost", default=None, metavar="JSON",
                        help="the JSON bench/cost.py wrote (e.g. bench/results/cost-2cpu-cpu.json): the cost row "
                             "and performance/cost take its measured cost per method instead of the runs' own "
                             "speeds, which runs sharing a machine distort")
    args = parser.parse_args(argv)
    if args.reps is not None and not 100 <= args.reps <= MAX_REPS:
        return user_error(parser.prog, f"--reps {args.reps}: give 100 to {MAX_REPS:,} resamples")
    if args.cost is not None and not args.cost.strip():
        return user_error(parser.prog, "--cost '': give the JSON bench/cost.py wrote, e.g. "
                                       "bench/results/cost-2cpu-cpu.json (or leave out --cost)")
    for name in args.runs_dir:
        if not Path(name).is_dir():
            return user_error(parser.prog, f"{name!r} is not a directory")
    try:
        path = write_report([Path(name) for name in args.runs_dir], Path(args.out) if args.out else None,
                            args.column_by, args.reps, args.seeds, None if args.cost is None else Path(args.cost))
    except ReportError as e:
        return user_error(parser.prog, str(e))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
