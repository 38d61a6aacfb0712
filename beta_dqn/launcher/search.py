"""A hyperparameter search with Ray Tune, a run as its trainable (the command `beta-dqn-search`, or
`python -m learner.search`).

From the shell, a grid's command line is the search: every combination of the lists (and every seed) is a
Tune trial, each trial one serial run of `python -m learner.main` in a directory of its own; then, for each
environment and method, the searched values whose mean final score over the seeds is best:

    python -m learner.search --env CartPole-v1 --algo dqn,beta_dqn --lr 3e-4,1e-4,3e-5 --seeds 0-2 \\
        --total-steps 50000 --out runs/lr-search

From Python, any of Tune's search spaces and schedulers over any flag; `trainable` runs one run from a trial's
configuration (the command line's flags as keys, `total_steps` for `--total-steps`) and reports its final
score; `best` reads the results:

    from ray import tune
    from beta_dqn.launcher.search import best, trainable
    tuner = tune.Tuner(tune.with_resources(trainable, {"cpu": 1}), param_space={
        "env": "CartPole-v1", "algo": tune.grid_search(["dqn", "beta_dqn"]), "lr": tune.loguniform(1e-5, 1e-3),
        "seed": tune.grid_search([0, 1]), "total_steps": 50_000}, tune_config=tune.TuneConfig(num_samples=4))
    print(best(tuner.fit()))

The score is a run's last evaluation (success rate on CliffWalk and MiniGrid, the return elsewhere: the
report's). Tune is the `tune` extra (`pip install -e ".[tune]"`). A trial reports each evaluation as its run
writes it, so a scheduler can stop a trial early (`--scheduler asha`, or any of Tune's from Python); a trial it
stops is counted and left out of the means.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from actors.envs import canonical_name
from beta_dqn.configuration.cli import PROG as MAIN_PROG
from beta_dqn.configuration.cli import is_grid, parse_command
from beta_dqn.configuration.errors import OneLineParser, user_error
from beta_dqn.configuration.flags import FIELDS, ConfigError, cli_name, flag_text, run_name
from beta_dqn.driver.cluster import ClusterStartError
from beta_dqn.driver.outputs import write_whole
from beta_dqn.driver.runtime import RayBackend
from beta_dqn.reporting.results import metric
from replay_service.backends import masked

PROG = "python -m learner.search"
NOT_SEARCHED = ("env", "algo", "seed", "out", "grid", "variant", "progress", "json", "wandb", "runtime")
SCHEDULERS = ("fifo", "asha")
ASHA_GRACE = 2  # evaluations every trial makes before ASHA may stop it


def _flags(config: dict) -> dict:
    """A trial's configuration as flags: `flags` (a run of a grid, as the shell's search gives) flattened; a
    dict of `env_kwargs` as its JSON."""
    flags = {**config.get("flags", {}), **{k: v for k, v in config.items() if k != "flags"}}
    unknown = sorted(set(flags) - set(FIELDS))
    if unknown:
        raise ConfigError(unknown[0], "is not a flag of python -m learner.main (a trial's keys are its flags "
                                      "without dashes, total_steps for --total-steps)")
    for name in ("seeds", "resume", "config"):
        if flags.get(name):
            raise ConfigError(name, f"{flags[name]!r}: a trial runs one run from its start, its flags as values")
    if isinstance(flags.get("env_kwargs"), dict):
        flags["env_kwargs"] = json.dumps(flags["env_kwargs"])
    if isinstance(flags.get("wrappers"), (list, dict)):  # (a list is its one value)
        flags["wrappers"] = json.dumps(flags["wrappers"])
    listed = next((k for k, v in flags.items() if isinstance(v, (list, tuple))), None)
    if listed:
        raise ConfigError(listed, f"{flags[listed]!r}: a trial's value is one value (Tune's grid_search lists them)")
    return flags


def trainable(config: dict) -> None:
    """Tune's trainable: one serial run of `python -m learner.main` with the trial's flags, in a folder of the
    trial's directory named as it (a report names a run by its folder). It reports each evaluation as the run
    writes it (`score`, `env_steps`, `final: False`: what a scheduler such as ASHA compares, and may stop the
    trial on), then the run's final score (`final: True`), the metric's name and the run's directory. A run that
    fails fails the trial, with the run's last line of error; a trial stopped (by a scheduler, or the search's end)
    stops its run."""
    from ray import tune

    flags = {"wandb": "disabled", **_flags(config), "progress": False, "json": True}
    flags["runtime"] = "serial"  # a trial is one process; Tune places the trials
    trial_dir = Path(_trial_dir())
    out = trial_dir / trial_dir.name
    flags["out"] = str(out)
    argv = [a for name, value in flags.items() if value is not None for a in (cli_name(name), flag_text(value))]
    # in the directory the search started from (Tune moves a trial into its own): a relative path, or a
    # module of `--env module:Id`, reads as the command line meant it (on one machine: on a cluster's other
    # nodes, Tune's directory for the trial there)
    cwd = os.environ.get("TUNE_ORIG_WORKING_DIR") or os.getcwd()
    name = metric(flags.get("env") or FIELDS["env"].default)
    total = int(flags.get("total_steps") or FIELDS["total_steps"].default)
    said = [trial_dir / "run.stdout", trial_dir / "run.stderr"]  # (files: a pipe left unread could fill and stall)
    with open(said[0], "w") as stdout, open(said[1], "w") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "learner.main", *argv], stdout=stdout, stderr=stderr,
                               text=True, cwd=cwd)
    seen = 0
    try:
        ended = False
        while not ended:
            try:
                run.wait(timeout=POLL_S)
                ended = True  # (its last evaluations are read once more, below: none is left unreported)
            except subprocess.TimeoutExpired:
                pass
            for row in _new_evaluations(out / "evals.csv", seen):
                seen += 1
                if row["env_steps"] < total:  # (the last is the run's final score, reported below)
                    tune.report({"score": row[name], "metric": name, "env_steps": row["env_steps"],
                                 "run_dir": str(out), "final": False})
    finally:
        if run.poll() is None:  # the trial stopped (a scheduler, the search's end): its run stops with it
            run.kill()
            run.wait()
    if run.returncode != 0:
        last = (said[1].read_text(errors="replace").strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"{MAIN_PROG} exited {run.returncode}: {last}")
    summary = json.loads(said[0].read_text())
    score = (summary.get("final_eval") or {}).get(name)
    tune.report({"score": float("nan") if score is None else float(score), "metric": name, "run_dir": str(out),
                 "env_steps": summary.get("env_steps"), "final": True})


POLL_S = 2.0  # how often a trial looks for its run's new evaluations


def _new_evaluations(path: Path, seen: int) -> list[dict]:
    """The rows of a run's evals.csv after its first `seen`, whole lines only (the run may be writing the next),
    each with its env steps as a number and its scores as floats (NaN where empty)."""
    try:
        text = path.read_text()
    except OSError:  # not written yet
        return []
    lines = text.splitlines(keepends=True)
    whole = [line for line in lines if line.endswith("\n")]
    rows = list(csv.DictReader(whole))[seen:]  # (the header, then each whole row)
    return [{k: (int(v) if k == "env_steps" else float(v) if v else float("nan")) for k, v in row.items()}
            for row in rows]


def _trial_dir() -> str:
    from ray import tune

    return tune.get_context().get_trial_dir()


def best(results) -> list[dict]:
    """For each environment and method, the searched values (the flags whose value differs between its
    trials, failed ones included, but the seed) with the best mean score over their trials' seeds; trials that
    failed or scored NaN are counted and left out (the best of those that survived is named by its values), and
    so are trials a scheduler stopped before their run's end (their last report is not final: `stopped`).
    `results`: Tune's ResultGrid, or (config, score) pairs."""
    pairs = []
    every: list[tuple[tuple, dict]] = []  # every trial's (env, method) and flags, failed ones too
    failed: defaultdict[tuple, int] = defaultdict(int)
    stopped: defaultdict[tuple, int] = defaultdict(int)
    for result in results:
        config, score = ((result.config, (result.metrics or {}).get("score")) if hasattr(result, "config")
                         else result)
        flags = _flags(config)
        key = (canonical_name(flags.get("env", FIELDS["env"].default)), flags.get("algo", FIELDS["algo"].default))
        every.append((key, flags))
        if getattr(result, "error", None) is None and (getattr(result, "metrics", None) or {}).get("final") is False:
            stopped[key] += 1
            continue
        if getattr(result, "error", None) is not None or score is None or not math.isfinite(score):
            failed[key] += 1
            continue
        pairs.append((key, flags, float(score)))
    groups: dict = defaultdict(lambda: defaultdict(list))
    searched: dict = {}
    # a flag a trial does not name is at its default: every trial's flags in full before they are compared
    names = {k for _, flags in every for k in flags}
    pairs = [(key, {k: flags.get(k, FIELDS[k].default) for k in names}, score) for key, flags, score in pairs]
    for key in {key for key, _, _ in pairs}:  # the flags whose value differs between the group's trials
        group = [{k: flags.get(k, FIELDS[k].default) for k in names} for k2, flags in every if k2 == key]
        searched[key] = {n for n in names if n not in NOT_SEARCHED
                         and len({json.dumps(flags[n], sort_keys=True) for flags in group}) > 1}
    for key, flags, score in pairs:
        values = tuple(sorted((k, json.dumps(flags[k], sort_keys=True)) for k in searched[key]))
        groups[key][values].append(score)
    rows = []
    for key in sorted(set(groups) | set(failed) | set(stopped)):
        # (fsum over the sorted scores: the same scores in another order give the same mean)
        candidates = sorted(((math.fsum(sorted(s)) / len(s), len(s), values) for values, s in
                             groups.get(key, {}).items()), key=lambda c: (-c[0], -c[1], c[2]))
        mean, n, values = candidates[0] if candidates else (float("nan"), 0, ())
        # the configurations whose mean equals the best's (to rounding): a tie, said as one, never broken by the
        # values' order (the first named: the most seeds)
        tied = [c for c in candidates if math.isclose(c[0], mean, rel_tol=1e-9, abs_tol=1e-12)]
        below = [c[0] for c in candidates if c not in tied]
        rows.append({"env": key[0], "algo": key[1], "best": {k: json.loads(v) for k, v in values},
                     "tied": [{k: json.loads(v) for k, v in c[2]} for c in tied[1:]],
                     "score": mean, "seeds": n, "candidates": len(candidates), "failed": failed.get(key, 0),
                     "stopped": stopped.get(key, 0), "runner_up": below[0] if below else None})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| env | method | best | mean score | seeds | runner-up | configurations | failed trials "
             "| stopped early |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        best_text = " ".join(f"{cli_name(k)} {flag_text(v)}" for k, v in r["best"].items()) or "(one configuration)"
        if r.get("tied"):
            best_text = f"tie of {1 + len(r['tied'])}: " + " / ".join(
                " ".join(f"{cli_name(k)} {flag_text(v)}" for k, v in values.items())
                for values in [r["best"], *r["tied"]])
        up = "" if r["runner_up"] is None else f"{r['runner_up']:.3f}"
        lines.append(f"| {r['env']} | {r['algo']} | {best_text} | {r['score']:.3f} | {r['seeds']} | {up} | "
                     f"{r['candidates']} | {r['failed']} | {r.get('stopped', 0)} |")
    return "\n".join(lines)


def _plan(rest: list[str]) -> tuple[Path, list[dict], dict]:
    """The search's directory, its trials (each a run's flags: every flag off its default, and the grid's axes
    whatever their value) and the command's values, checked as a grid's are (the same one-line mistakes)."""
    args, named, sections = parse_command(rest, prog=PROG)
    if args.get("resume"):
        raise ConfigError("resume", "a search starts anew; a finished trial's run directory is kept in --out")
    if not is_grid(args):
        raise ConfigError("seeds", "nothing to search: give a flag as a list (--lr 3e-4,1e-4) or --seeds")
    if args["runtime"] == "ray" or args["pack_seeds"] != 1:
        name = "runtime" if args["runtime"] == "ray" else "pack_seeds"
        raise ConfigError(name, f"{flag_text(args[name])}: a trial is one serial run (Tune places the trials)")
    if masked(args["replay"]) != args["replay"]:  # a trial's flags reach Tune's files and a command line
        raise ConfigError("replay", "a search takes the Redis password from --replay-password-file or "
                                    "REDIS_PASSWORD, not from the URL")
    out = Path(args["out"] or "runs/search").resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError("out", f"{out} is {'not a directory' if not out.is_dir() else 'not empty'}: give a "
                                 "search a directory of its own")
    # one serial run a core: β's second thread would have no core of its own (as a grid's serial runs)
    args = {**args, "runtime": "serial", "beta_thread": args["beta_thread"] if "beta_thread" in named else False}
    from beta_dqn.launcher.grid_runs import Grid

    grid = Grid(args, out, sections)  # every run checked, and resolved (environments, Redis): a mistake is one line
    axes = {name for name, value in args.items() if isinstance(value, list)}
    trials = []
    for run in grid.runs:
        # a trial's run names its search (--grid) and its values of the axes (--variant), as a grid's run does:
        # `learner.report` on the search's directory gives each configuration a column of its own
        trial = {k: v for k, v in run.items() if k not in ("out", "seeds", "run_id", "config")
                 and (v != FIELDS[k].default or k in ("env", "algo", "seed") or k in axes)}
        trial["replay"] = args["replay"]  # (the grid put the password in; the trial's run reads it again)
        trials.append(trial)
    return out, trials, args


def trial_name(flags: dict) -> str:
    """A trial's directory, named as a grid names its run: `DoorKey_beta_dqn_lr=0.0003_s0`."""
    return run_name(flags["env"], flags["algo"], flags["seed"], flags.get("variant", ""))


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog=PROG, description="A grid's command line as a Ray Tune search: every combination of "
                      "the lists and every seed a trial (a serial run); then the best per environment and method. "
                      f"Every flag of {MAIN_PROG} is taken (python -m learner.main --help).", add_help=True)
    p.add_argument("--cpus", type=int, default=0, help="trials at once (default: this machine's cores; on a "
                                                      "cluster, --address or RAY_ADDRESS, as its CPUs allow)")
    p.add_argument("--scheduler", choices=SCHEDULERS, default="fifo",
                   help="fifo: every trial runs to its end (default); asha: Tune's ASHA stops the trials whose "
                        "evaluations fall behind the others' (one --env and one --algo a search: it compares every "
                        "trial with every other), their runs left unfinished and out of the means")
    p.add_argument("--asha-grace", type=int, default=ASHA_GRACE, metavar="N",
                   help="with --scheduler asha: evaluations every trial makes before it may be stopped (default 2)")
    own, rest = p.parse_known_args(argv)
    if own.cpus < 0:
        return user_error(PROG, f"--cpus {own.cpus}: give 0 (this machine's cores) or more")
    if own.asha_grace < 1:
        return user_error(PROG, f"--asha-grace {own.asha_grace}: give 1 evaluation or more")
    if own.asha_grace != ASHA_GRACE and own.scheduler != "asha":
        return user_error(PROG, f"--asha-grace {own.asha_grace}: it is ASHA's; give --scheduler asha with it")
    try:
        with _quiet_tune():
            return _search(own.cpus, rest, own.scheduler, own.asha_grace)
    except KeyboardInterrupt:  # while planning, starting the cluster or writing the result (`fit`'s is its own)
        print(f"{PROG}: interrupted while no trial was running", file=sys.stderr)
        return 130


@contextlib.contextmanager
def _quiet_tune():
    """While a search runs: Tune's old console output, which verbose=0 silences (the new one prints its tables and
    a line per failed trial whatever the verbosity), and no SIGINT handler of Tune's (Ctrl-C stops the search at
    once, a KeyboardInterrupt in `fit`: Tune's handler would stop the trials and return their results as if the
    search had finished). The environment and Ray's loggers are as they were afterwards (a Python caller's)."""
    names = ("RAY_AIR_NEW_OUTPUT", "TUNE_DISABLE_SIGINT_HANDLER")
    saved = {name: os.environ.get(name) for name in names}
    levels = {name: logging.getLogger(name).level for name in ("ray", "ray.tune")}
    os.environ.update({"RAY_AIR_NEW_OUTPUT": "0", "TUNE_DISABLE_SIGINT_HANDLER": "1"})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _search(cpus_asked: int, rest: list[str], scheduler: str = "fifo", grace: int = ASHA_GRACE) -> int:
    try:
        out, trials, args = _plan(rest)
        from ray import tune
        chosen = _scheduler(scheduler, grace, trials)
    except ConfigError as e:
        return user_error(PROG, str(e))
    except ImportError:
        return user_error(PROG, 'Ray Tune is not installed: pip install -e ".[tune]"')
    logging.getLogger("ray").setLevel(logging.ERROR)  # Tune's notes on its own bookkeeping's speed, per trial
    address = args["address"] or os.environ.get("RAY_ADDRESS", "")
    cpus = cpus_asked or (None if address else os.cpu_count() or 1)
    try:  # a local cluster, or the one to join: as a run's (the same one-line failures)
        backend = RayBackend(address, envs=sorted({t["env"] for t in trials}),
                             wrappers=sorted({t.get("wrappers", "") for t in trials}))
    except (ConfigError, ClusterStartError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    # a failed trial's traceback, and Tune's list of them: one line each below instead
    logging.getLogger("ray.tune").setLevel(logging.CRITICAL)
    try:
        tuner = tune.Tuner(tune.with_resources(trainable, {"cpu": 1}),
                           param_space={"flags": tune.grid_search(trials)},
                           tune_config=tune.TuneConfig(max_concurrent_trials=cpus, scheduler=chosen,
                                                       trial_dirname_creator=lambda t: trial_name(t.config["flags"])),
                           run_config=tune.RunConfig(storage_path=str(out.parent), name=out.name, verbose=0))
        results = tuner.fit()
    except KeyboardInterrupt:  # (Tune's own handler is off: it would end the search as if it had finished)
        finished = len(list(out.glob("*/*/summary.json")))
        print(f"{PROG}: interrupted: {finished} of {len(trials)} trials finished, their runs in {out}; no best.json "
              "is written, and a search cannot continue: run it again with another --out", file=sys.stderr)
        return 130
    finally:
        backend.shutdown()
    axes = sorted({"env", "algo", "seed"} | {k for k, v in args.items() if isinstance(v, list)}, key=list(FIELDS).index)
    for i in range(len(results)):  # a failed trial: one line, naming its values and its run's last line of error
        result = results[i]
        if result.error is not None:
            flags = _flags(result.config or {})
            values = " ".join(f"{cli_name(k)} {flag_text(flags[k])}" for k in axes if k in flags)
            print(f"{PROG}: trial {Path(result.path).name} ({values}) failed: {_last_line(result.error)}",
                  file=sys.stderr)
    rows = best(results)
    write_whole(out / "best.json", json.dumps(_json_safe(rows), indent=2, allow_nan=False) + "\n")
    print(json.dumps(_json_safe(rows), indent=2) if args["json"] else table(rows))
    if not args["json"]:
        print(f"\n{len(trials)} trials in {out} (best.json; each trial's run in its folder, named as it; "
              f"python -m learner.report {out} compares them)")
    return 0 if all(r["failed"] == 0 for r in rows) else 1



def _scheduler(name: str, grace: int, trials: list[dict]):
    """Tune's scheduler for `--scheduler` (None: Tune's FIFO, every trial to its end). ASHA over the trials'
    reports (`trainable`'s: an evaluation each, then the final score) by env steps, its first rung after `grace`
    evaluations, up to the run's length; refused where the trials span environments or methods (whose scores it
    would compare) or differ in their length or evaluation interval (whose rungs would not line up)."""
    if name == "fifo":
        return None
    from ray.tune.schedulers import ASHAScheduler

    kinds = sorted({(canonical_name(t["env"]), t["algo"]) for t in trials})
    if len(kinds) > 1:
        named = ", ".join(f"{e} {a}" for e, a in kinds[:3]) + (" …" if len(kinds) > 3 else "")
        raise ConfigError("scheduler", f"asha: the trials span {len(kinds)} (environment, method) pairs ({named}); "
                                       "ASHA compares every trial with every other: search one --env and one "
                                       "--algo at a time")
    spans = {(int(t.get("total_steps", FIELDS["total_steps"].default)),
              int(t.get("eval_every", FIELDS["eval_every"].default))) for t in trials}
    if len(spans) > 1:
        raise ConfigError("scheduler", "asha: the trials differ in --total-steps or --eval-every; ASHA compares "
                                       "them at the same env steps: search those in a search of their own")
    ((total, every),) = spans
    if grace * every >= total:
        raise ConfigError("scheduler", f"asha: a trial evaluates every {every:,} of its {total:,} env steps, none "
                                       f"after --asha-grace {grace}; nothing would be compared before the end (more "
                                       "evaluations: a smaller --eval-every)")
    return ASHAScheduler(time_attr="env_steps", metric="score", mode="max", max_t=total,
                         grace_period=grace * every, reduction_factor=3)


def _last_line(error: BaseException) -> str:
    """What a failed trial's run said last (`trainable`'s "learner.main exited N: ..."), out of Tune's wrapping of
    it (a traceback, a Ray task error); a trial Tune lost (its process killed) in Tune's own first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    said = [line for line in lines if f"{MAIN_PROG} exited" in line]
    line = said[-1] if said else (lines[0] if lines else type(error).__name__)
    return line[line.index(MAIN_PROG):] if MAIN_PROG in line else line


def _json_safe(rows: list[dict]) -> list[dict]:
    """NaN (a group whose every trial failed) as null: best.json stays JSON."""
    return [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()} for r in rows]
