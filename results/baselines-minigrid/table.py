"""The six-column MiniGrid table (PLAN.md beside this file, "Reporting"), from the committed records: DQN (Table 1's
serial column, seeds 0-4), Bootstrapped DQN, εz-greedy, RND and LESSON (this study, seeds 0-2) and β-DQN (the
MinAtar-departure study's stage 1a, seeds 0-4), the RND side arm beside them, at any point of the grid:

    python results/baselines-minigrid/table.py      # prints the report; writes table.md and profile.png beside it

Per task: each column's mean final success rate [95% percentile bootstrap interval] and t interval (at n = 3 the
percentile interval undercovers badly: read the t interval), and each new column against DQN by Welch's t-test
(the call, Holm's correction within the column's six tasks) and the exact Mann–Whitney test beside it. Per
domain: the IQM of raw success rates and P(column > DQN) over the six tasks, each with a 95% stratified bootstrap
interval, and a performance profile; the cost rows from `bench/cost.py` (PLAN.md's note). Then each of the paper's
patterns by PLAN.md's rule. A column with fewer than 3 seeds on a task shows its n and is not tested there; an
aggregate needs every task at the column's full seeds."""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "results"))
from study_grid import host  # noqa: E402 - a run's CPU and kernels as its summary names them

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402

HERE = Path("results/baselines-minigrid")
TASKS = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy", "LavaCrossing-Hard")
# column: (its records, by task and seed; its seeds); DQN first (the baseline), the paper's order
COLUMNS = {"DQN": ("results/table1-protocol/{task}-dqn-s{seed}", range(5)),
           "Bootstrapped DQN": (f"{HERE}/{{task}}-boot-s{{seed}}", range(3)),
           "εz-greedy": (f"{HERE}/{{task}}-ez-s{{seed}}", range(3)),
           "RND": (f"{HERE}/{{task}}-rnd-s{{seed}}", range(3)),
           "LESSON": (f"{HERE}/{{task}}-lesson-s{{seed}}", range(3)),
           "β-DQN": ("results/minatar-departure/1a/{task}-beta-s{seed}", range(5))}
SIDE = ("RND, centred bonus (side arm)", f"{HERE}/{{task}}-rnd-centred-s{{seed}}", range(3), ("DoorKey", "Unlock"))
NEW = ("Bootstrapped DQN", "εz-greedy", "RND", "LESSON")
PAPER = {"DQN": (0.44, 0.22, 1.0, 1.0, 0.29, 0.0), "Bootstrapped DQN": (0.11, 0.17, 1.0, 0.81, 0.66, 0.01),
         "εz-greedy": (0.0, 0.0, 0.95, 0.05, 0.26, 0.0), "RND": (0.99, 0.95, 0.95, 0.93, 0.68, 0.39),
         "LESSON": (0.86, 0.64, 0.97, 0.6, 0.75, 0.06), "β-DQN": (0.98, 0.99, 0.99, 1.0, 0.84, 0.16)}
PAPER_AVERAGE = {"DQN": 0.49, "Bootstrapped DQN": 0.46, "εz-greedy": 0.21, "RND": 0.82, "LESSON": 0.65, "β-DQN": 0.83}
ALGO = {"DQN": "dqn", "Bootstrapped DQN": "bootstrapped_dqn", "εz-greedy": "ez_greedy", "RND": "rnd",
        "LESSON": "lesson", "β-DQN": "beta_dqn"}
PAPER_COST = {"DQN": 100, "Bootstrapped DQN": 195, "εz-greedy": 94, "RND": 153, "LESSON": 371, "β-DQN": 139}
COSTS = {"DoorKey": "bench/results/cost-2cpu-cpu-doorkey-2026-12-07.json",
         "Breakout": "bench/results/cost-2cpu-cpu-breakout-2026-12-07.json"}
# the paper's patterns our budget can check (PLAN.md, "Question"): column, task, the side of DQN the paper puts it
PATTERNS = (("εz-greedy", "DoorKey", "below"), ("εz-greedy", "Unlock", "below"), ("RND", "DoorKey", "above"),
            ("RND", "Unlock", "above"), ("Bootstrapped DQN", "DoorKey", "below"))
MIN_SEEDS = 3


class NotSuccess(ValueError):
    """A record whose score is not a MiniGrid success rate (a record of another environment in a column's place)."""


def score(record: str) -> float | None:
    """A record's final success rate (its runs.csv), or None where it is not recorded."""
    path = ROOT / record / "runs.csv"
    if not path.is_file():
        return None
    with open(path, newline="") as f:
        (row,) = csv.DictReader(f)
    if row["metric"] != "success_rate":
        raise NotSuccess(f"{record}: its score is {row['metric']}, not a success rate")
    return float(row["score"])


def scores(pattern: str, seeds, task: str) -> list[float]:
    found = [score(pattern.format(task=task.lower(), seed=s)) for s in seeds]
    return [x for x in found if x is not None]


def runs_of(pattern: str, seeds, task: str) -> list[dict]:
    """The recorded runs' configurations and summaries (the record's copies), for their hosts and resumes."""
    found = []
    for s in seeds:
        for run in sorted((ROOT / pattern.format(task=task.lower(), seed=s)).glob("runs/*/config.json")):
            summary = run.parent / "summary.json"
            found.append({"seed": s, "config": json.loads(run.read_text()),
                          "summary": json.loads(summary.read_text()) if summary.is_file() else {}})
    return found


def pattern(side: str, difference: float, adjusted: float | None) -> str:
    """PLAN.md's rule for one of the paper's patterns, from the Holm-adjusted Welch p."""
    way = (difference < 0) if side == "below" else (difference > 0)
    if adjusted is not None and adjusted < 0.05:
        return "agrees" if way else "departs"
    if difference == 0:  # no sign to read (PLAN.md's note of 2026-12-07)
        return "no difference, not shown"
    return "points the paper's way, not shown" if way else "points the other way, not shown"


def _p(p: float | None) -> str:
    return "—" if p is None else f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def main(reps: int = 2000) -> int:
    from beta_dqn.reporting.stats import difference, holm, profile

    try:
        found = {c: {t: scores(p, seeds, t) for t in TASKS} for c, (p, seeds) in COLUMNS.items()}
        side = {t: scores(SIDE[1], SIDE[2], t) for t in SIDE[3]}
    except NotSuccess as e:
        print(f"table.py: error: {e}", file=sys.stderr)
        return 2
    tests: dict[str, dict[str, dict]] = {c: {} for c in NEW}
    for c in NEW:
        for t in TASKS:
            if len(found[c][t]) >= MIN_SEEDS and len(found["DQN"][t]) >= MIN_SEEDS:
                tests[c][t] = difference(found[c][t], found["DQN"][t])
    # Holm over the column's six tasks always: a task not tested (yet) or one Welch cannot test (both sides
    # constant) enters at p = 1, so a call never rests on a smaller family
    adjusted = {c: holm({t: (tests[c][t]["welch_p"] if t in tests[c] else None) or 1.0 for t in TASKS})
                for c in NEW}
    lines = task_lines(found, tests, adjusted, reps)
    lines += ["", f"{SIDE[0]}, under no rule: " + "; ".join(
        f"{t} {np.mean(side[t]):.2f} (n = {len(side[t])})" if side[t] else f"{t}: none yet" for t in SIDE[3]), ""]
    more, matrices = aggregate_lines(found, reps)
    lines += more + cost_and_host_lines(matrices)
    lines += ["", "The paper's patterns (PLAN.md's rule: agrees / departs where the Holm-adjusted Welch p is below "
              "0.05, else the sign of the difference, not shown):", ""]
    for c, t, where in PATTERNS:
        test = tests[c].get(t)
        said = "not tested (fewer than 3 seeds)" if test is None else \
            f"{pattern(where, test['difference'], adjusted[c].get(t))} ({test['difference']:+.2f}, Holm " \
            f"{_p(adjusted[c].get(t))})"
        lines.append(f"- {c} {where} DQN on {t}: {said}")
    if matrices:
        taus = np.linspace(0.0, 1.0, 51)
        curves, intervals = profile(matrices, taus, reps)
        _figure(taus, curves, intervals, ROOT / HERE / "profile.png")
        lines += ["", "![performance profile](profile.png)"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (ROOT / HERE / "table.md").write_text(text)
    return 0


def task_lines(found, tests, adjusted, reps: int) -> list[str]:
    """The per-task table: every column's seeds, intervals and the paper's; each new column against DQN."""
    from beta_dqn.reporting.stats import mean_ci, t_interval

    lines = ["# The paper's six columns on MiniGrid (500k env steps; the paper's at 5M)", "",
             "Final success rate, mean [95% percentile bootstrap] t[95% t interval] (n: seeds), and the paper's; "
             "each new column against DQN: Welch's p → Holm-adjusted over the column's tasks (the call), exact "
             "Mann–Whitney p beside it.", "",
             "| task | column | n | mean [bootstrap] t[interval] | paper | vs DQN: Welch → Holm | Mann–Whitney |",
             "| --- | --- | ---: | --- | ---: | --- | --- |"]
    for i, t in enumerate(TASKS):
        for c in COLUMNS:
            x = found[c][t]
            if not x:
                lines.append(f"| {t} | {c} | 0 | — | {PAPER[c][i]} | | |")
                continue
            m, lo, hi = mean_ci(x, reps)
            tl, th = t_interval(x)
            cell = f"{m:.2f} [{lo:.2f}, {hi:.2f}] t[{tl:.2f}, {th:.2f}]" if len(x) > 1 else f"{m:.2f}"
            test = tests.get(c, {}).get(t)
            versus = "" if test is None else \
                f"{test['difference']:+.2f}: {_p(test['welch_p'])} → {_p(adjusted[c].get(t))}"
            whitney = "" if test is None else _p(test["mann_whitney_p"])
            resumed = sorted(r["seed"] for r in runs_of(*COLUMNS[c], t) if r["config"].get("resume"))
            n = f"{len(x)}" + (f" (seed {', '.join(map(str, resumed))} resumed)" if resumed else "")
            lines.append(f"| {t} | {c} | {n} | {cell} | {PAPER[c][i]} | {versus} | {whitney} |")
    return lines


def aggregate_lines(found, reps: int) -> tuple[list[str], dict[str, np.ndarray]]:
    """The IQM and P(column > DQN) over the six tasks, for the columns with every task at their full seeds (their
    matrices, seeds × tasks, returned for the profile and the cost row)."""
    from beta_dqn.reporting.stats import aggregates, improvement

    lines = ["Over the six tasks: the IQM of raw success rates and P(column > DQN), each with a 95% stratified "
             "bootstrap interval; — where a task lacks the column's full seeds.", "",
             "| column | IQM | P(column > DQN) | average | paper's average |", "| --- | --- | --- | ---: | ---: |"]
    matrices = {}
    for c, (_, seeds) in COLUMNS.items():
        if all(len(found[c][t]) == len(seeds) for t in TASKS):
            matrices[c] = np.array([[found[c][t][s] for t in TASKS] for s in range(len(seeds))])
    for c in COLUMNS:
        if c not in matrices:
            lines.append(f"| {c} | — | — | — | {PAPER_AVERAGE[c]:.2f} |")
            continue
        iqm = aggregates(matrices[c], reps)["IQM"]
        p = "" if c == "DQN" else "—" if "DQN" not in matrices else \
            "{:.2f} [{:.2f}, {:.2f}]".format(*improvement(matrices[c], matrices["DQN"], reps))
        lines.append(f"| {c} | {iqm[0]:.2f} [{iqm[1]:.2f}, {iqm[2]:.2f}] | {p} | {matrices[c].mean():.2f} | "
                     f"{PAPER_AVERAGE[c]:.2f} |")
    return lines, matrices


def cost_and_host_lines(matrices: dict[str, np.ndarray]) -> list[str]:
    """The cost rows (PLAN.md's note), performance per cost, and each column's hosts."""
    lines = ["", "Cost, wall-clock seconds per env step against DQN's (`bench/cost.py`, serial, one core, AMD EPYC; "
             "PLAN.md's note), and performance per cost (the average over cost / 100, DoorKey's cost):", "",
             "| column | cost, DoorKey | cost, Breakout | the paper's | average / cost (DoorKey) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    cost = {env: json.loads((ROOT / path).read_text())["cost_percent"] for env, path in COSTS.items()}
    for c in COLUMNS:
        door, breakout = cost["DoorKey"][ALGO[c]], cost["Breakout"][ALGO[c]]
        per = f"{matrices[c].mean() / (door / 100):.2f}" if c in matrices else "—"
        lines.append(f"| {c} | {door:.0f}% | {breakout:.0f}% | {PAPER_COST[c]}% | {per} |")
    lines += ["", "Hosts, per column (each run's CPU and the kernels its summary records):", ""]
    for c, (records, seeds) in COLUMNS.items():
        hosts = Counter(host(r["summary"]) for t in TASKS for r in runs_of(records, seeds, t))
        lines.append(f"- {c}: " + ("; ".join(f"{h} × {n}" for h, n in sorted(hosts.items())) or "no runs yet"))
    return lines


def _figure(taus, curves: dict, intervals: dict, path: Path) -> None:
    """The performance profile of raw success rates: per column the share of its runs above each τ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for label, curve in curves.items():
        ax.plot(taus, curve, label=label)
        ax.fill_between(taus, intervals[label][0], intervals[label][1], alpha=0.2)
    ax.set_xlabel("final success rate (τ)")
    ax.set_ylabel("fraction of runs above τ")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


if __name__ == "__main__":
    OneLineParser.script("python results/baselines-minigrid/table.py", __doc__).parse_args()  # --help; no options
    sys.exit(main())
