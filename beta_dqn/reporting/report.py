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
(`beta_dqn.configuration.fields`' field roles; a field a method does not read is not compared with that method's runs);
otherwise it stops with one line naming the field and two runs that differ.
`--seeds 0-2` keeps the runs of those seeds only (Table 1's three from records that also hold seeds 3-4), and
`--only bandit-returns=raw` the runs with that value, where their method reads the flag (one reading from
records that hold both; DQN's runs, which do not read it, stay). A run that two RUNS_DIRs both hold (a probe's
record repeats the runs of its grid) counts once.
Beside the report, `study.json` lists every run with the command line that computes it again.

A RUNS_DIR may also be a report's directory (runs.csv and study.json, no run under it: a committed
`results/<grid>/`): its runs enter the tables as it recorded them (`beta_dqn.reporting.records`), when
their directories are gone; the figures and the meta-controller's rows are drawn from run directories only.
"""
from __future__ import annotations

import csv
import json
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from actors.envs import domain, success_domains
from beta_dqn.configuration.errors import OneLineParser, user_error
from beta_dqn.configuration.flags import LEGACY, ConfigError, cli_name, grid_command, parse_seeds, run_command, run_seed
from beta_dqn.reporting.cost import cost_phrase, measured_cost
from beta_dqn.reporting.directory import report_directory
from beta_dqn.reporting.figures import (
    FORMATS,
    PNG,
    Look,
    basic_policies,
    learning_curves,
    selection_proportions,
    visitation,
)
from beta_dqn.reporting.records import (
    RECORDS,
    check_copies_dir,
    command_fields,
    is_recorded,
    load_all,
    pinned_command,
    write_copies,
)
from beta_dqn.reporting.results import (
    ReportError,
    RunData,
    check_comparable,
    column_by,
    column_fields,
    column_label,
    columns_of,
    config_value,
    copies_once,
    final_score,
    first_solved,
    has_directory,
    keep_only,
    metric,
    only_text,
    only_values,
    train_score,
)
from beta_dqn.reporting.stats import MAX_REPS, REPS
from beta_dqn.reporting.tables import (
    aggregate_rows,
    axis_rows,
    bandit_rows,
    explorations,
    table,
    test_rows,
    variant_rows,
)


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


def _names(roots: list[Path]) -> list[str]:
    """Each root's name, and where roots share it, the shortest end of their paths that tells them apart (a serial
    record beside the Ray record of the same run: `table1-protocol/breakout-dqn-s0 + table1-protocol-ray/...`). A
    root written as `.` or `..` is named by the directory it is."""
    paths = [root.resolve() if root.name in ("", "..") else root for root in roots]
    names = [path.name or path.as_posix() for path in paths]
    for depth in range(2, max((len(path.parts) for path in paths), default=1) + 1):
        if len(set(names)) == len(names):
            break
        names = [Path(*path.parts[-depth:]).as_posix() if names.count(name) > 1 else name
                 for path, name in zip(paths, names, strict=True)]
    return names


@dataclass
class _Selection:
    """The runs a report covers, and what it left out: `found` finished runs (each once) with --only's values,
    before --seeds; `other_values` those --only left out; `copies` duplicates, `unfinished` run directories;
    `kept` the seeds --seeds names (None: every seed)."""

    roots: list[Path]
    runs: list[RunData]
    unfinished: list[str]
    found: int
    copies: int
    kept: set[int] | None
    fields: list[str]
    measured: dict[str, float] | None
    source: dict | None
    other_values: int = 0

    def left_out(self) -> list[str]:
        """What the report's first paragraph says it left out."""
        return ([f"{self.other_values} with other values of --only left out"] if self.other_values else []) \
            + ([f"{self.found - len(self.runs)} of other seeds left out"] if len(self.runs) < self.found else []) \
            + ([f"{self.copies} duplicate{'' if self.copies == 1 else 's'} left out: a run that two sources hold "
                "counts once"] if self.copies else []) \
            + ([f"{len(self.unfinished)} unfinished or damaged left out"] if self.unfinished else [])


def _select(roots: Path | list[Path], out: Path | None, column_flags: str, seeds: str, cost: Path | None,
            only: str = "") -> _Selection:
    """The finished runs under `roots` that the report covers (`write_report`'s arguments), checked comparable;
    a ReportError for anything it cannot report."""
    fields, wanted = column_fields(column_flags), only_values(only)
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
    other = len(copies_once(runs)[0])
    runs = keep_only(runs, wanted)
    found = len(copies_once(runs)[0])  # finished runs with --only's values, each once
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
    return _Selection(roots, runs, unfinished, found, copies, kept, fields, measured, source, other - found)


def _check_out(roots: list[Path], out: Path) -> None:
    """A report is never written into a record, nor so that its record lies at or above runs it reports."""
    for root in roots:  # a record is what is left of its runs: never written over
        if is_recorded(root) and out.resolve().is_relative_to(root.resolve()):
            raise ReportError(f"{root} is a report's record, which this report would write into "
                              f"({out}); give --out another directory")
        if not is_recorded(root) and root.resolve().is_relative_to(out.resolve()):  # a record above runs
            raise ReportError(f"--out {out} would put this report's record (runs.csv) at or above the runs of "
                              f"{root}, which then could not be reported again; give --out another directory "
                              f"(default: {root / 'report'})")
    check_copies_dir(out)


def _head(chosen: _Selection, described: dict, again: str, header: list[str], rows: list[list[str]],
          seeds: str) -> list[str]:
    """The report's title, the commands, the paragraph that says what the tables hold, Table 1 and the ε
    schedules each column acted by."""
    runs, roots, left = chosen.runs, chosen.roots, chosen.left_out()
    drawn = [r for r in runs if has_directory(r)]
    records = list(dict.fromkeys(str(Path(r.path).parent) for r in runs if not has_directory(r)))  # (runs.csv's)
    lines = [f"# Report: {listed(_names(roots), ' + ')}", ""]
    lines += ["```bash", *described["commands"], again, "```", ""]  # the grids' commands, then this report's
    lines += [
        f"{len(runs)} finished runs" + (f" of seeds {seeds}" if chosen.kept is not None else "")
        + (f" ({'; '.join(left)})" if left else "") + ". "
        f"Scores are the final evaluation's ({_episodes(runs)}): success rate on "
        f"{' and '.join(success_domains())}, return elsewhere; mean over seeds [95% percentile bootstrap interval] "
        "and, in Table 1, t[95% Student's t interval] (n = seeds). "
        "With few seeds the percentile bootstrap interval is narrow (never wider than the seeds' range) and covers "
        "the mean less often than it says (at n = 5 about 83% of the time for normal scores, simulated); the t "
        "interval is the one to read there. One seed's cell is its value alone. "
        "A column is a method and, in a grid with axes besides --env, --algo and --seeds (or for the flags "
        "--column-by names), its variant. "
        + ("Computational cost: seconds per env step relative to DQN's (its first column), from the runs' own "
           "wall clock (runs that shared a machine slow each other), averaged over environments. "
           if chosen.measured is None
           else "Computational cost: what `bench/cost.py` measured per method, seconds per env step relative to "
           f"DQN's ({cost_phrase(cast(dict, chosen.source))}), the same for every column of a method. ")
        + "Performance/cost: (score / DQN's score) / cost, averaged over the environments where DQN's score is "
        "not 0. `study.json` lists every run with the command that computes it again."
        + (f" {len(runs) - len(drawn)} of the runs are a report's record (its runs.csv and study.json: "
           f"{listed(records, ', ')}): they count in the tables, with their training "
           "score as recorded; the curves, the selection shares and the meta-controller's rows are drawn from the "
           "runs' directories only." if len(drawn) < len(runs) else ""), "",
        "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", "Exploration, as each column's runs acted:", "",
              *(f"- {column_label(column)}: {'; '.join(schedules)}."
                for column, schedules in explorations(runs).items()), ""]
    return lines


def _episodes(runs: list[RunData]) -> str:
    """How many episodes the runs' evaluations played (`--eval-episodes`; a record's, as its command says)."""
    counts = sorted({int(config_value(r, "eval_episodes")) for r in runs})
    if len(counts) == 1:
        return f"{counts[0]} episode{'s' if counts[0] != 1 else ''} a run"
    return f"{counts[0]} to {counts[-1]} episodes a run, each its --eval-episodes"


def _environment(runs: list[RunData], env: str, stage: Path, reps: int | None, look: Look) -> list[str]:
    """One environment's section: its columns' rows, each axis value's, the figures (drawn into `stage`) and the
    meta-controller at the end of each β-DQN run."""
    drawn = [r for r in runs if has_directory(r)]  # curves and the meta-controller need the run's directory
    slug = env.replace("/", "-").replace(":", "-")
    lines = [f"## {env}", ""]
    if len(columns_of([r for r in runs if r.env == env])) > 1 or any(r.variant for r in runs) or \
            not any(r.env == env for r in drawn):  # a record's runs alone: no curve, so their numbers here
        lines += variant_rows(runs, env, reps) + [""]
    effects = axis_rows(runs, env, reps)
    if effects:
        lines += [f"### {env}: each axis value over all its runs", "",
                  "Every run of a method with that value, whatever its other axes (a main effect, averaged "
                  "over the others' values).", "", *effects, ""]
    if any(r.env == env for r in drawn):
        learning_curves(drawn, env, stage / look.name(f"curves_{slug}"), look)
        lines += [look.shown("learning curves", f"curves_{slug}"), ""]
    if selection_proportions(drawn, env, stage / look.name(f"selection_{slug}"), look):
        lines += [look.shown("policy selection", f"selection_{slug}"), ""]
    if basic_policies(drawn, env, stage / look.name(f"basic_{slug}"), look):
        lines += [look.shown("evaluation policies", f"basic_{slug}"), ""]
    per_run = bandit_rows(drawn, env)
    if per_run:
        lines += [f"### {env}: the meta-controller at the end of each run", "",
                  "The window's episodes per arm at the last step: the arm that holds most of them (its share, "
                  "μ and b), and of the others the one with the largest μ + b [eq:policy select].", "",
                  *per_run, ""]
    return lines


def write_report(roots: Path | list[Path], out: Path | None = None, column_flags: str = "",
                 reps: int | None = None, seeds: str = "", cost: Path | None = None, only: str = "",
                 look: Look = PNG) -> Path:
    """The report of every finished run under `roots` (one directory or several) in `out` (default: the one
    root's `report/`); `column_flags` (`--column-by`'s text) names flags whose values split the columns as a
    grid's axes do; `reps`: the bootstrap's resamples (default `beta_dqn.reporting.stats.REPS`); `seeds` (`--seeds`'
    text, e.g. 0-2): only the runs of those seeds; `cost`: a `bench/cost.py` JSON whose measured cost per
    method the cost row takes instead of the runs' own speeds; `only` (`--only`'s text, e.g. bandit-returns=raw):
    only the runs with those values, where their method reads the flag; `look`: the figures' format and dpi."""
    chosen = _select(roots, out, column_flags, seeds, cost, only)
    runs, roots = chosen.runs, chosen.roots
    asked = out is not None
    out = out or roots[0] / "report"
    _check_out(roots, out)
    with report_directory(out) as stage:
        header, rows, numbers = table(runs, reps, chosen.measured)
        described = study(runs, roots)
        again = (f"python -m learner.report {' '.join(shlex.quote(str(r)) for r in roots)}"
                 + (f" --out {shlex.quote(str(out))}" if asked else "")
                 + (f" --column-by {','.join(cli_name(f)[2:] for f in chosen.fields)}" if chosen.fields else "")
                 + (f" --only {shlex.quote(only_text(only_values(only)))}" if only_values(only) else "")
                 + (f" --seeds {shlex.quote(seeds)}" if chosen.kept is not None else "")
                 + (f" --cost {shlex.quote(str(cost))}" if cost is not None else "")
                 + (f" --format {look.format}" if look.format != Look.format else "")
                 + (f" --dpi {look.dpi}" if look.dpi != Look.dpi else ""))
        lines = _head(chosen, described, again, header, rows, seeds)
        tested, numbers["tests"] = test_rows(runs)
        if tested:
            lines += ["## Each environment against DQN", "",
                      "The difference of the final scores' means (the column's minus DQN's), two-sided tests over the "
                      "seeds: Welch's t-test, and the Mann–Whitney test as an exact permutation test over every split "
                      "of the runs (ties count half) with the smallest p it can reach with these run counts (3 a side: "
                      "0.10, so it can never call a difference at 0.05; 5 a side: 0.008). \"Called\": "
                      "Welch's p below 0.05.", "", *tested, ""]
        summed, extra = aggregate_rows(runs, stage, reps, look)
        numbers.update(extra)
        if summed:
            lines += ["## Aggregates over environments", "", *summed]
        for env in sorted({r.env for r in runs}, key=lambda e: (domain(e), e)):
            lines += _environment(runs, env, stage, reps, look)
        drawn_visits = visitation([r for r in runs if has_directory(r)], stage, look)
        if drawn_visits is not None:
            env, stem = drawn_visits
            lines += [f"## {env}: state visitation (training)", "", look.shown("visits", stem), ""]
        (stage / "report.md").write_text("\n".join(lines) + "\n")
        (stage / "report.json").write_text(json.dumps(finite({"runs": len(runs), "unfinished": chosen.unfinished,
                                                              **numbers, "cost_source": chosen.source}),
                                                      indent=2, allow_nan=False) + "\n")
        (stage / "study.json").write_text(json.dumps(finite(described), indent=2, allow_nan=False) + "\n")
        write_runs_csv(runs, stage / "runs.csv")
        write_copies(runs, stage / RECORDS)
    return out / "report.md"


RUNS_CSV = ("env", "algo", "variant", "seed", "env_steps", "score", "metric", "train_score", "wall_seconds",
            "env_steps_per_s", "commit", "cpu")


def write_runs_csv(runs: list, path: Path) -> None:
    """One row per run: what it ran, its final score (success rate on CliffWalk and MiniGrid, return elsewhere),
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
    parser = OneLineParser.script("python -m learner.report", __doc__)
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
    parser.add_argument("--only", default="", metavar="FLAG=VALUE",
                        help="only the runs with these values (a comma list, e.g. bandit-returns=raw), where their "
                             "method reads the flag: one reading of a flag from records that hold several")
    parser.add_argument("--reps", type=int, default=None, metavar="N",
                        help=f"bootstrap resamples of every interval (default {REPS}; rliable's stratified bootstrap)")
    parser.add_argument("--cost", default=None, metavar="JSON",
                        help="the JSON bench/cost.py wrote (e.g. bench/results/cost-2cpu-cpu.json): the cost row "
                             "and performance/cost take its measured cost per method instead of the runs' own "
                             "speeds, which runs sharing a machine distort")
    parser.add_argument("--format", default=Look.format, metavar="|".join(FORMATS),
                        help=f"the figures' format (default {Look.format}; pdf and svg are vector: for a paper)")
    parser.add_argument("--dpi", type=int, default=Look.dpi, metavar="N",
                        help=f"the figures' pixels per inch (default {Look.dpi}: a 6-inch figure 600 pixels wide; "
                             "300 for print)")
    args = parser.parse_args(argv)
    try:
        look = Look(args.format, args.dpi)
    except ValueError as e:
        return user_error(parser.prog, str(e))
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
                            args.column_by, args.reps, args.seeds, None if args.cost is None else Path(args.cost),
                            args.only, look)
    except ReportError as e:
        return user_error(parser.prog, str(e))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
