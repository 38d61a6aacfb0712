"""Finished runs as data, for the report and its figures: what a run is (its method, variant and column),
which runs may be compared, and the numbers taken from them (final score, first evaluation at ≥ 0.9, the
meta-controller's window at the end, bootstrap intervals).

Runs are compared only when their configurations agree in everything but the seed, the method, the grid's
axes (and the flags `--column-by` makes axes) and bookkeeping such as directories and addresses
(`driver.config`'s field roles; a field a method does not read is not compared with that method's runs).
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from driver.config import (
    AXES,
    BOOKKEEPING,
    FIELDS,
    LEGACY,
    flag,
    flag_text,
    reads,
    run_name,
    settled_arm_exchange,
)
from learner.algorithms import METHODS

ALGO_LABELS = {name: method.label for name, method in METHODS.items()}
PAPER_ORDER = ("dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson", "beta_dqn")  # Table 1's columns; then others
BOOTSTRAP_SAMPLES = 10_000
SOLVED = 0.9  # a success rate at or above this counts as solved (seeds ≥ 0.9, first evaluation ≥ 0.9)

class ReportError(ValueError):
    """The runs cannot be reported as asked: one line for the user."""


@dataclass
class RunData:
    name: str
    config: dict
    summary: dict
    evals: list[dict]
    metrics: list[dict] = field(default_factory=list)
    path: str = ""  # the run's directory as found
    # a run read from a report's runs.csv and study.json (`load_recorded`), not from its directory: its training
    # score, first evaluation at ≥ 0.9 and command as the report recorded them; None for a run's directory
    recorded: dict | None = None

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


def column_fields(text: str) -> list[str]:
    """`--column-by`'s comma list of flags ("bandit-returns,count-mode", "--" and spaces allowed) as config
    fields, each once; ReportError for one that cannot split columns."""
    allowed = sorted(AXES - {"env", "algo"})
    names = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name = part.removeprefix("--").replace("-", "_")
        if name not in allowed:
            raise ReportError(f"--column-by {part!r} is not a flag that can split columns (the environment, the "
                              "method and the seed split the report already; bookkeeping flags never do); "
                              "allowed: " + ", ".join(flag(n)[2:] for n in allowed))
        names.append(name)
    return list(dict.fromkeys(names))


def column_by(runs: list[RunData], names: list[str]) -> None:
    """Make each named field an axis of the columns, as a grid's axis is: its value joins the variant of every
    run whose method reads it, the variant's parts in the order a grid writes them (runs of separate grids
    that differ in that flag then stand side by side). ReportError for a field no run reads."""
    for name in names:
        if not any(_reads(run.algo, name) for run in runs):
            raise ReportError(f"--column-by {flag(name)[2:]}: none of the runs' methods reads it "
                              f"({', '.join(sorted({ALGO_LABELS.get(r.algo, r.algo) for r in runs}))})")
    position = {flag(name)[2:]: i for i, name in enumerate(FIELDS)}  # a grid's order of a variant's parts
    for run in runs:
        parts = dict(p.partition("=")[::2] for p in run.variant.split(",") if p)
        for name in names:
            if _reads(run.algo, name):
                parts.setdefault(flag(name)[2:], flag_text(config_value(run, name)))
        named = sorted(parts, key=lambda k: position.get(k, len(position)))
        run.config = {**run.config, "variant": ",".join(f"{k}={parts[k]}" for k in named)}


def config_value(run: RunData, key: str):
    """A field of the run's configuration; one added after the run was made has its default there, or what
    such runs did (LEGACY); the bandit's exchange as the runtime settled it."""
    got = run.config.get(key, LEGACY.get(key, FIELDS[key].default if key in FIELDS else None))
    if key == "arm_exchange":
        got = settled_arm_exchange(run.algo, config_value(run, "runtime"), got)
    return got


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


def is_recorded(root: Path) -> bool:
    """A report's directory: runs.csv at its top (study.json beside it is then required), and no run under it
    (ReportError where one is: which of the two is meant?)."""
    if not (root / "runs.csv").is_file():
        return False
    run = next(root.rglob("config.json"), None)
    if run is not None:
        raise ReportError(f"{root} holds both a report's record (runs.csv, study.json) and a run ({run.parent}): "
                          "a report written into its runs' directory? Move its runs.csv and study.json away, "
                          "or the runs out of the record")
    return True


def load_runs(*roots: Path) -> tuple[list[RunData], list[str]]:
    """Every finished run under the `roots` (once, where they overlap), and the directories left out:
    unfinished ones (no summary.json), and damaged ones (a file that does not parse: a warning naming it, and
    the report goes on without the run). A root that is a report's directory gives the runs it recorded and
    those it left out (`load_recorded`)."""
    runs, left_out, seen, records = [], [], set(), []
    for root in roots:
        if is_recorded(root):
            recorded, left = load_recorded(root)
            runs += recorded
            records.append((str(root / "runs.csv"), left))
    for config_path in (path for root in roots for path in sorted(root.rglob("config.json"))):
        run_dir = config_path.parent
        if run_dir.resolve() in seen:
            continue
        seen.add(run_dir.resolve())
        if not (run_dir / "summary.json").is_file():
            left_out.append(str(run_dir))
            continue
        try:
            runs.append(_load_run(run_dir))
        except _Damaged as e:
            print(f"warning: {e}; the report leaves this run out", file=sys.stderr)
            left_out.append(str(run_dir))
    # what a record's report left out, unless it is here from elsewhere: finished since (a run of that name
    # outside the record) or left out again (an unfinished directory found now, or another record's entry)
    counted = {Path(u).name for u in left_out}
    for own, left in records:
        elsewhere = counted | {Path(r.name).name for r in runs if r.path != own}
        kept = [u for u in left if Path(u).name not in elsewhere]
        left_out += kept
        counted |= {Path(u).name for u in kept}
    return runs, left_out


class _Damaged(Exception):
    pass


def load_recorded(root: Path) -> tuple[list[RunData], list[str]]:
    """The runs a report recorded in `root` (runs.csv, a row per run; study.json, each run's command, exact final
    score and first evaluation at ≥ 0.9), e.g. a committed `results/<grid>/`, for Table 1 beside other runs
    when the runs' directories are gone; and the runs that report left out as unfinished (its report.json).
    Each run has what the tables need, as recorded: final score, speed, training score, first evaluation at
    ≥ 0.9; and a configuration read from its command, so that comparing runs still holds. The command names
    only the flags that were not at their default when the report was made: the others take today's
    defaults, so a default changed since the record would move its runs unseen; a LEGACY flag left out takes
    LEGACY's value (the behaviour of runs made before the flag), which is right because `run_command` names
    such a flag wherever a method reads it (β-DQN's --arm-exchange is written settled, never as auto). The
    training score is study.json's where it has one (exact), else runs.csv's (6 digits). No curves, no
    meta-controller: those need the run's directory. ReportError, in one line, when the files do not parse
    or do not agree."""
    from actors.envs import UnknownEnvError, env_spec

    def fail(reason: str) -> ReportError:
        return ReportError(f"{root} is a report's directory whose {reason}")

    def name(key: tuple) -> str:
        return f"{key[0]} {key[1]} {key[2] + ' ' if key[2] else ''}seed {key[3]}"

    if not (root / "study.json").is_file():
        raise fail("study.json is missing (it holds each run's command)")
    try:
        rows = list(csv.DictReader(io.StringIO((root / "runs.csv").read_text())))
        described = json.loads((root / "study.json").read_text())
        report = root / "report.json"
        unfinished = json.loads(report.read_text()).get("unfinished", []) if report.is_file() else []
    except (OSError, UnicodeDecodeError, ValueError, csv.Error, AttributeError) as e:
        reason = str(e).splitlines()[0] if str(e) else ""
        raise fail(f"runs.csv, study.json or report.json cannot be read ({type(e).__name__}: {reason})") from None
    listed = described.get("runs") if isinstance(described, dict) else None
    commands = described.get("commands", [described.get("command")] if "command" in described else []) \
        if isinstance(described, dict) else None
    if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
        raise fail("study.json has no list of runs")
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        raise fail("study.json's commands are not a list of command lines")
    if not isinstance(unfinished, list) or not all(isinstance(u, str) for u in unfinished):
        raise fail("report.json's unfinished runs are not a list of directories")
    columns = ("env", "algo", "variant", "seed", "env_steps", "score", "metric", "train_score", "env_steps_per_s")
    missing = [c for c in columns if c not in (rows[0] if rows else {})]
    if missing:
        raise fail("runs.csv has no run" if not rows else f"runs.csv lacks the column {missing[0]}")

    def keyed(items, where: str) -> dict:
        out = {}
        for item in items:
            seed = item.get("seed")
            if isinstance(seed, str) and seed.isdigit():  # runs.csv's text
                seed = int(seed)
            if not all(isinstance(item.get(k), str) for k in ("env", "algo", "variant")) or \
                    not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
                raise fail(f"{where} has a run without env, algo, variant (text) and seed (a whole number): {item}")
            key = (item["env"], item["algo"], item["variant"], seed)
            if key[1] not in METHODS:
                raise fail(f"{where} names a method this code does not have: {key[1]!r}")
            if key in out:
                raise fail(f"{where} lists {name(key)} twice")
            out[key] = item
        return out

    in_csv, in_study = keyed(rows, "runs.csv"), keyed(listed, "study.json")
    for key in in_csv.keys() ^ in_study.keys():
        raise fail(f"{'study.json' if key in in_csv else 'runs.csv'} lacks {name(key)}, which the other lists")
    runs = []
    for key, row in in_csv.items():
        study = in_study[key]
        text = ",".join(map(str, row.values()))
        try:
            score, rate = study["final_score"], float(row["env_steps_per_s"])
            if not _finite(score):
                raise ValueError
            steps = None if row["env_steps"] == "" else int(row["env_steps"])
            if steps is not None and steps < 0:
                raise ValueError
            wall = None if row.get("wall_seconds", "") == "" else float(row["wall_seconds"])
            train = study.get("train_score", None if row["train_score"] == "" else float(row["train_score"]))
            if train is not None and not _finite(train):
                raise ValueError
            shown = float(row["score"])
        except (KeyError, TypeError, ValueError):
            raise fail(f"runs.csv or study.json has a value of {name(key)} that does not parse: {text}") from None
        if not all(math.isfinite(x) for x in (rate, shown, *(v for v in (wall,) if v is not None))) or rate <= 0:
            raise fail(f"runs.csv or study.json has a score, speed or time of {name(key)} that is not a finite "
                       f"number (or a speed not above 0): {text}")
        if not math.isclose(score, shown, rel_tol=1e-5, abs_tol=1e-9):
            raise fail(f"study.json's final score of {name(key)} ({score!r}) is not runs.csv's ({row['score']})")
        first = study.get("first_success_step")
        if first is not None and (not isinstance(first, int) or isinstance(first, bool) or first < 0):
            raise fail(f"study.json's first_success_step of {name(key)} is not a step count: {first!r}")
        try:
            spec = env_spec(key[0])
        except UnknownEnvError as e:
            raise fail(f"runs.csv names an environment this code does not know: {e}") from None
        if row["metric"] != metric(key[0]):
            raise fail(f"runs.csv scores {key[0]} by {row['metric']!r}, where the report's score is "
                       f"{metric(key[0])!r}")
        cmd = study.get("cmd")
        if not isinstance(cmd, str):
            raise fail(f"study.json gives {name(key)} no command (cmd)")
        config = _command_config(cmd, fail)
        if (config.get("env"), config.get("algo"), config.get("seed")) != (key[0], key[1], key[3]):
            raise fail(f"study.json's command for {name(key)} runs something else: {cmd}")
        config.setdefault("gamma", spec.gamma)  # run_command leaves out the env's own γ and learning rate
        config.setdefault("lr", spec.learning_rate)
        config.setdefault("total_steps", FIELDS["total_steps"].default)
        for part in filter(None, key[2].split(",")):  # the variant names values its command must have
            field_name, _, value = part.partition("=")
            field_name = field_name.replace("-", "_")
            held = config.get(field_name, LEGACY.get(field_name, getattr(FIELDS.get(field_name), "default", None)))
            if field_name == "arm_exchange":  # a grid's axis names the value asked; the command, the one settled
                value = settled_arm_exchange(key[1], config.get("runtime", FIELDS["runtime"].default), value)
            if field_name not in FIELDS or flag_text(held) != value:
                raise fail(f"variant of {name(key)} says {part}, its command does not: {cmd}")
        config["variant"] = key[2]
        summary = {"env_steps_per_s": rate, "final_eval": {row["metric"]: score},
                   "device": config.pop("device", "cpu"), "commit": row.get("commit", "")}
        summary.update({k: v for k, v in (("env_steps", steps), ("wall_seconds", wall)) if v is not None})
        runs.append(RunData(f"{root.name}/{run_name(key[0], key[1], key[3], key[2])}", config, summary, [],
                            path=str(root / "runs.csv"),
                            recorded={"train_score": train, "first_success_step": first, "cmd": cmd,
                                      "commands": commands}))
    return runs, unfinished


def _command_config(cmd: str, fail) -> dict:
    """`python -m learner.main --flag value ...` (a run's command, `run_command`'s) as the fields it names."""
    import contextlib
    import shlex

    from driver.cli import build_parser

    try:
        words = shlex.split(cmd)
    except ValueError as e:
        raise fail(f"study.json has a command that does not split into words ({e}): {cmd}") from None
    if words[:3] != ["python", "-m", "learner.main"]:
        raise fail(f"study.json has a command that is not python -m learner.main: {cmd}")
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            config = vars(build_parser(defaults=False).parse_args(words[3:]))
    except SystemExit:
        reason = said.getvalue().strip().splitlines()[-1:] or ["it asks for the help"]
        raise fail(f"study.json has a command that does not parse ({reason[0]}): {cmd}") from None
    if any(isinstance(v, list) for v in config.values()):
        raise fail(f"study.json has a command of a grid, not of one run: {cmd}")
    return config


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _load_run(run_dir: Path) -> RunData:
    def read(name: str, parse):
        try:
            return parse((run_dir / name).read_text())
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, csv.Error) as e:
            reason = str(e).splitlines()[0] if str(e) else ""
            raise _Damaged(f"{run_dir / name} cannot be read ({type(e).__name__}: {reason})") from None

    evals = read("evals.csv", lambda text: [{k: _number(v) for k, v in row.items()}
                                              for row in csv.DictReader(io.StringIO(text))])
    metrics = []
    if (run_dir / "metrics.jsonl").is_file():
        keep = ("env_steps", "arms_cov", "arms_cor", "arms_cor0", "train_episodes", "train_return_mean",
                "train_success_rate")
        metrics = read("metrics.jsonl", lambda text: [{k: row[k] for k in keep if k in row} for row in
                                                      (json.loads(line) for line in text.splitlines() if line.strip())])
    if any("env_steps" not in row or not all(_finite(v) for v in row.values()) or row.get("train_episodes", 0) < 0
           for row in metrics):
        raise _Damaged(f"{run_dir / 'metrics.jsonl'} has a line without env_steps, a value that is not a finite "
                       "number, or a negative episode count")
    config, summary = read("config.json", json.loads), read("summary.json", json.loads)
    for name, document, keys in (("config.json", config, ("env", "algo", "seed", "total_steps")),
                                 ("summary.json", summary, ("env_steps_per_s", "final_eval"))):
        missing = [k for k in keys if k not in document] if isinstance(document, dict) else ["any key"]
        if missing:
            raise _Damaged(f"{run_dir / name} lacks {', '.join(missing)}")
    if not isinstance(summary["final_eval"], dict) or not _finite(summary["env_steps_per_s"]) or \
            not _finite(summary.get("env_steps", 0)):
        raise _Damaged(f"{run_dir / 'summary.json'}: final_eval is not an object, or env_steps_per_s or env_steps "
                       "not a number")
    if not evals or any(not isinstance(row.get("env_steps"), float) for row in evals):
        raise _Damaged(f"{run_dir / 'evals.csv'} has no evaluation, or a row without env_steps")
    return RunData(run_dir.name, config, summary, evals, metrics, str(run_dir))


def check_comparable(runs: list[RunData]) -> None:
    """Within an environment, runs of one column agree in everything but the seed and bookkeeping, and
    columns differ only in their method and their variant's axes; ReportError names the first field that
    differs and two runs."""
    by_env: dict[str, list[RunData]] = defaultdict(list)
    for run in runs:
        by_env[run.env].append(run)

    def compare(a: RunData, b: RunData, free: set[str]) -> None:
        if "runtime" in free:  # the bandit's exchange follows the runtime (--arm-exchange auto)
            free = free | {"arm_exchange"}
        for key in sorted((set(a.config) | set(b.config)) - BOOKKEEPING - {"algo", "seed"} - free):
            if _reads(a.algo, key) and _reads(b.algo, key) and config_value(a, key) != config_value(b, key):
                raise ReportError(
                    f"{a.env}: runs differ in {key} ({a.name}: {config_value(a, key)!r}, {b.name}: "
                    f"{config_value(b, key)!r}); only the seed, the algorithm and a grid's axes (or a flag --column-by "
                    "names) may differ between runs that are compared")

    for env, group in by_env.items():
        seen: dict[tuple, RunData] = {}
        first: dict[tuple[str, str], RunData] = {}
        for run in group:
            key = (run.column, run.config.get("seed"))
            if key in seen:
                compare(seen[key], run, set())  # two different runs: name the field they differ in
                raise ReportError(f"{env}: {run.label} seed {key[1]} appears twice ({seen[key].path}, {run.path}); "
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


def train_window(run: RunData) -> int:
    """The env steps whose training episodes `train_score` reads: the run's last evaluation interval (the
    paper's 100k by default), or the whole run when it is shorter."""
    return min(int(run.config.get("eval_every") or FIELDS["eval_every"].default), int(run.config["total_steps"]))


def train_score(run: RunData) -> float | None:
    """What the behaviour did while the final greedy policy was learned: the training episodes of the run's
    last `train_window` env steps, their success rate (MiniGrid, CliffWalk: every episode there reports
    success or failure) or mean return (elsewhere). Each logged interval (a metrics.jsonl line, written every
    `log_every` seconds) counts with its episodes times the share of its env steps inside the window: exact
    when a line starts at the window's start, otherwise close (where the log lines fall depends on the
    machine's speed). None when no training episode was logged there."""
    if run.recorded is not None:
        return run.recorded["train_score"]
    key = "train_success_rate" if metric(run.env) == "success_rate" else "train_return_mean"
    end = run.summary.get("env_steps") or (run.metrics[-1]["env_steps"] if run.metrics else 0)
    cut, start, weights, values = end - train_window(run), 0, [], []
    for row in run.metrics:
        stop = row["env_steps"]
        inside = stop - max(start, cut)
        if inside > 0 and row.get("train_episodes") and key in row:
            weights.append(row["train_episodes"] * inside / (stop - start))
            values.append(row[key])
        start = max(start, stop)
    return float(np.dot(weights, values) / np.sum(weights)) if weights else None


def columns_of(runs: list[RunData]) -> list[tuple[str, str]]:
    """The table's columns in the paper's order of methods, each method's variants in sorted order."""
    order = {a: i for i, a in enumerate(PAPER_ORDER)}

    def typed(variant: str) -> tuple:
        return tuple((name, value_order(v)) for name, _, v in (p.partition("=") for p in variant.split(",") if p))

    return sorted({r.column for r in runs}, key=lambda c: (order.get(c[0], len(order)), c[0], typed(c[1])))


def value_order(text: str) -> tuple:
    """A flag's value as a sort key: numbers as numbers (50 before 100), before text."""
    try:
        return 0, float(text), ""
    except ValueError:
        return 1, 0.0, text


def steps_text(n: float) -> str:
    """Env steps as people write them: 20k, 1.5M."""
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k" if n >= 1e3 else f"{n:g}"


def first_solved(run: RunData) -> int | None:
    """The first evaluation's env steps with a success rate ≥ SOLVED (None: never, or no notion of success)."""
    if run.recorded is not None:
        return run.recorded["first_success_step"]
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
