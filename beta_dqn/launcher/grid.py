"""Grids: every (env, algo, seed) of `python -m learner.main --algo a,b --env e,f --seeds 0-9`, in parallel.

Each run declares what it needs — its learner (`--learner-cpus`, `--learner-gpus`, and one unit of a
`learner` resource when the cluster defines one: the nodes that host learners) and one bundle of
`--actor-cpus` per actor — as a Ray placement group. Ray's scheduler packs the groups onto the cluster
and holds back the ones that do not fit until others finish: the queue is Ray's, not ours. A run is one
Ray task whose process drives an ordinary run (`beta_dqn.driver.run`) inside its group.

This module makes a grid from the command line (`grid_from_args`): a new one, whose directory is checked
before anything is made, or with `--resume GRID_DIR` the one that directory's `grid.json` describes, which
runs only what has no `summary.json` yet (from its checkpoint where it has one); and it writes a finished
grid's table for a person (`describe_grid`). Beside it: the runs and packs a grid's flags expand into
(`beta_dqn.launcher.grid_plan`); the `Grid`, which keeps the grid's book (`GRID_DIR/grid.json`, what was asked; one run
directory per combination; `grid_summary.json`, each run's status, attempts, score, speed and where it ran;
one progress line for all runs) and runs its runs, a run that crashed started again from its checkpoint
(`--retries`) (`beta_dqn.launcher.grid_runs`); and the Ray task that drives a run or a pack on its node
(`beta_dqn.launcher.grid_task`).

Ray is imported where a grid runs, and the training side (torch) where a run is made, not at the top
(`beta_dqn.launcher.grid_runs`, `beta_dqn.launcher.grid_task`): a grid's report and a mistyped flag need not pay for
them.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from beta_dqn.configuration.cli import GRID_FILE, build_parser
from beta_dqn.configuration.compat import grid_args
from beta_dqn.configuration.config_file import Section
from beta_dqn.configuration.flags import (
    GRID_RESUME_MAY_CHANGE,
    Config,
    ConfigError,
    flag_text,
    no_update_error,
    parse_seeds,
    resolve,
    restore_password,
    settled_runtime,
)
from beta_dqn.driver.outputs import RUN_FILES
from beta_dqn.launcher.grid_plan import expand
from beta_dqn.launcher.grid_runs import Grid
from beta_dqn.reporting.results import column_label, metric


def _check_writable(grid_dir: Path) -> None:
    """A grid directory that could be made and written (nothing is made yet: a refused grid leaves nothing)."""
    try:
        if grid_dir.exists() and not grid_dir.is_dir():
            raise ConfigError("out", f"{grid_dir} exists and is not a directory")
        there = next(p for p in (grid_dir, *grid_dir.parents) if p.exists())
        if not there.is_dir():
            raise ConfigError("out", f"cannot make the grid directory {grid_dir}: {there} is not a directory")
        if not os.access(there, os.W_OK | os.X_OK):
            raise ConfigError("out", f"cannot make the grid directory {grid_dir}: {there} is not writable")
    except OSError as e:  # a directory on the way that cannot be searched
        raise ConfigError("out", f"cannot make the grid directory {grid_dir} ({e.strerror or e})") from None


def grid_from_args(args: dict, named: frozenset[str] | None = None, sections: tuple[Section, ...] = ()) -> Grid:
    """A new grid (`--out` is its directory, default runs/grid-<time>) or, with `--resume GRID_DIR`, the
    one written there (a flag given again may change only how it runs: GRID_RESUME_MAY_CHANGE). `named`: the
    flags the command line gave, so that β's thread, which a grid of serial runs turns off, stays on where
    `--beta-thread` was given (None: not known, and it stays as `args` has it); `sections`: `--config`'s
    (`beta_dqn.configuration.cli.parse_command`)."""
    parser = build_parser()
    # what the command line gives: values off their default, and (where known) any flag it names, a default's
    # value too (`--beta-thread true` on a resume of a grid that saved false is a change, never a no-op)
    given = {k: v for k, v in args.items() if k not in ("resume", "out")
             and (v != parser.get_default(k) or (named is not None and k in named))}
    resume = args.get("resume") or ""
    if resume:
        path = Path(resume) / GRID_FILE
        try:
            saved = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError("resume", f"no {GRID_FILE} in {resume!r} (a single run's directory is resumed "
                                        "without --seeds or lists)") from None
        except (OSError, ValueError) as e:
            raise ConfigError("resume", f"{path} is not a grid file this program can read ({e})") from None
        try:  # an earlier version's grid.json as this version's (a flag it lacks: what its runs ran with)
            saved["args"] = grid_args(saved, vars(parser.parse_args([])))
        except ValueError as e:
            raise ConfigError("resume", f"{path} {e}") from None
        for key, value in given.items():
            if key not in GRID_RESUME_MAY_CHANGE and saved["args"].get(key) != value:
                raise ConfigError(key, f"{value!r} differs from the grid being resumed "
                                       f"({saved['args'].get(key)!r}); a resumed grid keeps its configuration")
        merged = {**saved["args"], **{k: v for k, v in given.items() if k in GRID_RESUME_MAY_CHANGE}}
        try:
            parse_seeds(merged["seeds"]) if merged.get("seeds") else None
        except ConfigError:  # a grid.json (an older version's) that names a seed twice: it ran that seed once
            merged["seeds"] = ",".join(map(str, parse_seeds(merged["seeds"], repeats=True)))
        # grid.json keeps no passwords
        merged["replay"] = restore_password(merged["replay"], "grid", merged)
        return Grid(merged, Path(resume).resolve(), tuple(Section.from_json(d) for d in saved.get("sections", [])))
    grid_dir = Path(args["out"] or f"runs/grid-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    _check_writable(grid_dir)
    if (grid_dir / GRID_FILE).exists():
        raise ConfigError("out", f"{grid_dir} already holds a grid; continue it with --resume {grid_dir}")

    if any((grid_dir / name).exists() for name in RUN_FILES):
        raise ConfigError("out", f"{grid_dir} holds a run: give the grid a directory of its own")
    if isinstance(args["runtime"], list) and "auto" in args["runtime"]:
        raise ConfigError("runtime", f"{flag_text(args['runtime'])}: auto in a list would name a column for what "
                                     "it settles to; list ray and serial")
    if args["runtime"] == "auto":  # settled here, into grid.json: a resume runs what the grid ran
        runtime = settled_runtime("auto", in_grid=True,
                                  joins_cluster=bool(args["address"] or os.environ.get("RAY_ADDRESS")))
        if runtime == "serial" and named is not None and "beta_thread" not in named and args["learner_cpus"] < 2:
            # one serial run a core: β's second thread would have no core of its own (the same math)
            args = {**args, "beta_thread": False}
        args = {**args, "runtime": runtime}
    if named is not None and "learning_starts" not in named and not any("learning_starts" in s.values
                                                                         for s in sections):
        for run in expand(args, grid_dir, sections):  # a run of it that would make no update: refused, as one is
            error = no_update_error(resolve(Config.of(**run))[0])
            if error is not None:
                raise error
    grid = Grid(args, grid_dir, sections)
    taken = [Path(r["out"]) for r in grid.runs if any((Path(r["out"]) / n).exists() for n in RUN_FILES)]
    if taken:
        raise ConfigError("out", f"{taken[0]} already holds a run, and the new grid would write there: give the "
                                 "grid another --out")
    return grid


def describe_grid(summary: dict, grid_dir: Path) -> str:
    """A grid's table for a person: per environment and column, the seeds done and the final scores."""
    groups: dict[tuple, list[dict]] = {}
    for row in summary["runs"]:
        groups.setdefault((row["env"], row["algo"], row["variant"]), []).append(row)
    lines = [f"grid {summary['grid']}: {summary['done']} of {summary['total']} runs done, {summary['failed']} "
             f"failed, {summary['wall_seconds']:.0f} s", "",
             f"{'environment':<22} {'column':<44} {'done':>6} {'final score: mean [min, max]':>30} {'steps/s':>8}"]
    for (env, algo, variant), rows in groups.items():
        key = metric(env)
        scores = [r["final_eval"][key] for r in rows if r.get("final_eval", {}).get(key) is not None]
        rates = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
        score = f"{np.mean(scores):.2f} [{min(scores):.2f}, {max(scores):.2f}]" if scores else "—"
        lines.append(f"{env:<22} {column_label((algo, variant)):<44} {len(scores):>3}/{len(rows):<2} {score:>30} "
                     f"{np.mean(rates) if rates else 0:>8,.0f}")
    failed = [f"  {r['name']}: {r.get('error', r['status'])}" for r in summary["runs"] if r["status"] == "failed"]
    if failed:
        lines += ["", "failed:", *failed]
    lines += ["", f"outputs: {grid_dir}/ (grid_summary.json; a directory per run)",
              f"report:  python -m learner.report {grid_dir}"]
    return "\n".join(lines)
