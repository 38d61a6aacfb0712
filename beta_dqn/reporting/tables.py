"""The report's tables, as Markdown lines from the runs (`beta_dqn.reporting.results.RunData`): Table 1 with its cost
and
performance/cost rows (`table`), each environment against DQN with its tests (`test_rows`), the aggregates over
environments and the probability of improvement, both per domain, with the performance profile
(`aggregate_rows`), and per environment the columns' rows (`variant_rows`), each axis value's (`axis_rows`) and
β-DQN's meta-controller at the end of each run (`bandit_rows`); `explorations` lists the ε schedules each column
acted by."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from actors.envs import domain
from beta_dqn.reporting.figures import PNG, Look, performance_profile
from beta_dqn.reporting.results import (
    ALGO_LABELS,
    SOLVED,
    RunData,
    bandit_arms,
    column_label,
    columns_of,
    config_value,
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
from beta_dqn.reporting.stats import aggregates, difference, improvement, mean_ci, profile, t_interval


def score_text(mean: float, lo: float, hi: float, n: int, t: tuple[float, float] | None = None) -> str:
    """A cell's mean with its 95% percentile bootstrap interval, Student's t interval where given (`t`), and seed
    count; one seed has no interval to show: its value alone."""
    if n == 1:
        return f"{mean:.2f} (n=1)"
    return f"{mean:.2f} [{lo:.2f}, {hi:.2f}]" + (f" t[{t[0]:.2f}, {t[1]:.2f}]" if t else "") + f" (n={n})"


def table(runs: list[RunData], reps: int | None = None, measured: dict[str, float] | None = None
          ) -> tuple[list[str], list[list[str]], dict]:
    """Table 1's rows (domain, environment, one cell per column), domain averages, cost and
    performance/cost against DQN (its first column when DQN has variants); and the numbers behind them.
    The cost is the runs' own seconds per env step, or `measured`'s per method (`measured_cost`) when given."""
    columns = columns_of(runs)
    envs = sorted({r.env for r in runs}, key=lambda e: (domain(e), e))
    cells: dict[tuple[str, tuple], tuple[float, float, float, int]] = {}
    t_cells: dict[tuple[str, tuple], tuple[float, float]] = {}  # Student's t intervals beside the bootstrap's
    rates: dict[tuple[str, tuple], float] = {}
    for env in envs:
        for column in columns:
            group = [r for r in runs if r.env == env and r.column == column]
            if group:
                scores = [final_score(r) for r in group]
                cells[env, column] = (*mean_ci(scores, reps), len(group))
                t_cells[env, column] = t_interval(scores)
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
                    row.append(score_text(mean, lo, hi, n, t_cells[env, column]))
                else:
                    row.append("—")
            rows.append(row)
        if len(dom_envs) > 1:
            row = [dom, "average"]
            for column in columns:
                means = [cells[e, column][0] for e in dom_envs if (e, column) in cells]
                row.append(f"{np.mean(means):.2f}" if len(means) == len(dom_envs) else "—")
            rows.append(row)
    numbers: dict[str, dict[str, tuple[float, float, float, int] | float]]
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


def aggregate_rows(runs: list[RunData], out: Path, reps: int | None = None, look: Look = PNG
                   ) -> tuple[list[str], dict]:
    """With two or more columns: per domain (and over all of them), each column's IQM, mean and median of its
    final scores normalised by the baseline's mean in the same environment (DQN's first column, else the first
    column), with stratified bootstrap intervals; for every two columns, per domain (and over all of them), the
    probability that a run of the later one scores above a run of the earlier one (raw scores, per environment,
    averaged); and the performance profile of the normalised scores (a figure). All from rliable
    (`beta_dqn.reporting.stats`). The numbers are keyed "domain|column" and "domain|X|Y" ("all" over every domain)."""
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
              "in the same environment (a tie counts half), averaged over the environments of the row's domain "
              "(all: every environment) that both ran; 95% stratified bootstrap interval. 0.5 is no difference. "
              "— where a column's seed count differs between those environments; a pair with no environment of "
              "a domain in common has no row there.", "",
              "| domain | X | Y | environments | P(X > Y) |", "| --- | --- | --- | --- | --- |"]
    for dom, dom_envs in groups.items():
        for i, y in enumerate(columns):
            for x in columns[i + 1:]:
                shared = [e for e in dom_envs if any(r.env == e and r.column == x for r in runs)
                          and any(r.env == e and r.column == y for r in runs)]
                if not shared:
                    continue
                mx, my = _matrix(runs, x, shared), _matrix(runs, y, shared)
                row = f"| {dom} | {column_label(x)} | {column_label(y)} | {len(shared)} |"
                if mx is None or my is None:
                    lines.append(f"{row} — |")
                    continue
                p, lo, hi = improvement(mx, my, reps)
                numbers["improvement"][f"{dom}|{column_label(x)}|{column_label(y)}"] = (p, lo, hi)  # as "aggregates"
                lines.append(f"{row} {p:.2f} [{lo:.2f}, {hi:.2f}] |")
    lines.append("")
    if profiled:
        top = max(float(m.max()) for m in profiled.values())
        taus = np.linspace(0.0, max(top, 1.0) * 1.05, 60)
        curves, intervals = profile(profiled, taus, reps)
        performance_profile(taus, curves, intervals, column_label(base), out / look.name("profile"), look)
        lines += [look.shown("performance profile", "profile"), ""]
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
        arms = bandit_arms(r)
        assert arms is not None  # the group's runs have a bandit
        top, other = arms
        first, trained = first_solved(r) if success else None, train_score(r)
        lines.append(f"| {r.label} | {r.config['seed']} | {final_score(r):.2f} | "
                     + (f"{'—' if first is None else f'{first / 1e3:.0f}k'} | " if success else "")
                     + f"{'—' if trained is None else f'{trained:.2f}'} | "
                     f"{top[0]}: {top[1]:.2f}, {top[2]:.2f}, {top[3]:.2f} | "
                     + ("— |" if other is None else f"{other[0]}: {other[1]:.2f}, {other[2]:.2f}, {other[3]:.2f} |"))
    return lines


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
    length (the decay is a share of the run: each schedule then names the run length it is for) or a grid varied
    the schedule."""
    found: dict[tuple, dict[str, set[int]]] = {}
    for run in sorted(runs, key=lambda r: (r.algo, r.variant)):
        found.setdefault(run.column, {}).setdefault(exploration(run), set()).add(config_value(run, "total_steps"))
    return {column: [schedule if len(schedules) == 1 or schedule == "no ε"
                     else f"{schedule} (runs of {' and '.join(f'{n:,}' for n in sorted(lengths))} env steps)"
                     for schedule, lengths in sorted(schedules.items(), key=lambda item: min(item[1]))]
            for column, schedules in found.items()}
