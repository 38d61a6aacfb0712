"""Finished runs as data, for the report and its figures: what a run is (its method, variant and column),
which runs may be compared, and the numbers taken from them (final score, first evaluation at ≥ 0.9, the
meta-controller's window at the end, bootstrap intervals).

Runs are compared only when their configurations agree in everything but the seed, the method, the grid's
axes (and the flags `--column-by` makes axes) and bookkeeping such as directories and addresses
(`beta_dqn.configuration.fields`' field roles; a field a method does not read is not compared with that method's runs).
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

from actors.envs import scored_by_success
from beta_dqn.configuration.flags import (
    AXES,
    BOOKKEEPING,
    FIELDS,
    JSON_FIELDS,
    LEGACY,
    cli_name,
    epsilon_decay_steps,
    epsilon_schedule,
    flag_text,
    reads,
    settled_arm_exchange,
)
from learner.methods import METHODS

ALGO_LABELS = {name: method.label for name, method in METHODS.items()}
PAPER_ORDER = ("dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson", "beta_dqn")  # Table 1's columns; then others
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
    # a run read from a report's runs.csv and study.json (`beta_dqn.reporting.records`), not from its directory: its
    # training
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
                              "allowed: " + ", ".join(cli_name(n)[2:] for n in allowed))
        names.append(name)
    return list(dict.fromkeys(names))


def only_values(text: str) -> dict[str, str]:
    """`--only`'s comma list of FLAG=VALUE ("bandit-returns=raw,beta-epsilon=false") as {config field: value as
    the command line gives it}; ReportError for a part without "=", a flag --only cannot filter on (those
    --column-by takes, but --env-kwargs and --wrappers, whose JSON has commas) or a flag given twice."""
    allowed = sorted(AXES - {"env", "algo", *JSON_FIELDS})
    chosen: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        flag, eq, value = part.partition("=")
        name = flag.strip().removeprefix("--").replace("-", "_")
        if not eq or not value.strip():
            raise ReportError(f"--only {part!r}: give FLAG=VALUE, e.g. bandit-returns=raw")
        if name not in allowed:
            hint = " (seeds: --seeds)" if name in ("seed", "seeds") else ""
            raise ReportError(f"--only {part!r}: {flag.strip()!r} is not a flag --only filters on{hint}; allowed: "
                              + ", ".join(cli_name(n)[2:] for n in allowed))
        if name in chosen:
            raise ReportError(f"--only {text!r} names {cli_name(name)[2:]} twice")
        chosen[name] = value.strip()
    return chosen


def only_text(only: dict[str, str]) -> str:
    """`only_values`' result as --only's text (each flag without "--"), for the report's command."""
    return ",".join(f"{cli_name(name)[2:]}={value}" for name, value in only.items())


def _value_as_given(run: RunData, name: str) -> str:
    """The run's value of a field as the command line writes it; the ε decay's fraction as the run used it: its
    --eps-decay-fraction where the decay followed it, else its decay steps over its length (a run that named
    steps, or ran before fractions existed)."""
    if name == "eps_decay_fraction" and not _decays_by_fraction(run):
        return flag_text(config_value(run, "eps_decay_steps") / config_value(run, "total_steps"))
    return flag_text(config_value(run, name))


def _same(got: str, want: str) -> bool:
    """A value as a run has it against `--only`'s text: booleans in any case, numbers as numbers."""
    if got == (want.lower() if want.lower() in ("true", "false") else want):
        return True
    try:
        return float(got) == float(want)
    except ValueError:
        return False


def keep_only(runs: list[RunData], only: dict[str, str]) -> list[RunData]:
    """The runs with `only`'s values (`only_values`): a run is kept when, for every flag, its method does not read
    it (DQN beside `bandit-returns=raw`) or it has the value; each flag is checked against all the runs, so the
    order of the flags does not matter. ReportError for a flag no run reads, or a value no run that reads it has."""
    for name, want in only.items():
        readers = [run for run in runs if _reads(run.algo, name, run)]
        if not readers:
            raise ReportError(f"--only {cli_name(name)[2:]}={want}: none of the runs' methods reads it "
                              f"({', '.join(sorted({ALGO_LABELS.get(r.algo, r.algo) for r in runs}))})")
        if not any(_same(_value_as_given(run, name), want) for run in readers):
            found = sorted({_value_as_given(run, name) for run in readers})
            raise ReportError(f"--only {cli_name(name)[2:]}={want}: no run that reads it has that value (they have "
                              f"{', '.join(found)})")
    return [run for run in runs if all(not _reads(run.algo, name, run) or _same(_value_as_given(run, name), want)
                                       for name, want in only.items())]


def column_by(runs: list[RunData], names: list[str]) -> None:
    """Make each named field an axis of the columns, as a grid's axis is: its value joins the variant of every
    run whose method reads it, the variant's parts in the order a grid writes them (runs of separate grids
    that differ in that flag then stand side by side). ReportError for a field no run reads."""
    for name in names:
        if not any(_reads(run.algo, name, run) for run in runs):
            raise ReportError(f"--column-by {cli_name(name)[2:]}: none of the runs' methods reads it "
                              f"({', '.join(sorted({ALGO_LABELS.get(r.algo, r.algo) for r in runs}))})")
    position = {cli_name(name)[2:]: i for i, name in enumerate(FIELDS)}  # a grid's order of a variant's parts
    for run in runs:
        parts = dict(p.partition("=")[::2] for p in run.variant.split(",") if p)
        for name in names:
            if _reads(run.algo, name, run):
                parts.setdefault(cli_name(name)[2:], flag_text(config_value(run, name)))
        named = sorted(parts, key=lambda k: position.get(k, len(position)))
        run.config = {**run.config, "variant": ",".join(f"{k}={parts[k]}" for k in named)}


def config_value(run: RunData, key: str):
    """A field of the run's configuration; one added after the run was made has its default there, or what
    such runs did (LEGACY); the bandit's exchange as the runtime settled it."""
    got = run.config.get(key, LEGACY.get(key, FIELDS[key].default if key in FIELDS else None))
    if key == "arm_exchange":
        got = settled_arm_exchange(run.algo, config_value(run, "runtime"), got)
    return got


def exploration(run: RunData) -> str:
    """The ε schedule the run acted by, in words ("ε 1 → 0.01 over 100,000 env steps (20% of the run), then
    held"), or "no ε" where its method acts on none (β-DQN without --beta-epsilon: the policy set explores)."""
    from types import SimpleNamespace

    values = SimpleNamespace(**{key: config_value(run, key) for key in FIELDS if key != "algo"}, algo=run.algo)
    if values.eps_decay_steps is None:  # a configuration read from a command that left the decay to the run
        values.eps_decay_steps = epsilon_decay_steps(values)
    return epsilon_schedule(values) or "no ε"


def _decays_by_fraction(run: RunData) -> bool:
    """Whether the run's ε decays over --eps-decay-fraction of its length (the default), not a step count of
    its own: runs of different lengths then decay over different step counts by one rule."""
    steps = config_value(run, "eps_decay_steps")
    return steps is None or steps == max(1, round(config_value(run, "eps_decay_fraction")
                                                  * config_value(run, "total_steps")))


def _reads(algo: str, key: str, run: RunData | None = None) -> bool:
    """Whether `algo` reads `key` (in `run`'s configuration where given: β-DQN reads the ε schedule only with
    --beta-epsilon true)."""
    return key not in FIELDS or reads(algo, key, None if run is None else run.config)


def metric(env: str) -> str:
    """The score the paper reports: success rate on CliffWalk and MiniGrid, return otherwise."""
    return "success_rate" if scored_by_success(env) else "return_mean"


def _number(text: str) -> float:
    return float("nan") if text in ("", "None", "nan") else float(text)


# a report's copies of the run directories it read: <report>/runs/<run>/ (`beta_dqn.reporting.records`)
RECORDS = "runs"


def is_copy(run_dir: Path) -> bool:
    """A report's copy of a run (read through its report's record, never as a run of its own)."""
    return run_dir.parent.name == RECORDS and (run_dir.parent.parent / "runs.csv").is_file()


def load_runs(*roots: Path) -> tuple[list[RunData], list[str]]:
    """Every finished run under the `roots` (once, where they overlap), and the directories left out:
    unfinished ones (no summary.json), and damaged ones (a file that does not parse: a warning naming it, and
    the report goes on without the run). A report's record of runs: `beta_dqn.reporting.records`."""
    runs, left_out, seen = [], [], set()
    for config_path in (path for root in roots for path in sorted(root.rglob("config.json"))):
        run_dir = config_path.parent
        if run_dir.resolve() in seen or is_copy(run_dir):
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
    return runs, left_out


class _Damaged(Exception):
    pass


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
        keep = ("env_steps", "train_episodes", "train_return_mean", "train_success_rate")
        metrics = read("metrics.jsonl", lambda text: [
            {k: v for k, v in row.items() if k in keep or k.startswith("arms_")}  # arms_<group>: the groups' shares
            for row in (json.loads(line) for line in text.splitlines() if line.strip())])
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
    score = summary["final_eval"].get(metric(config["env"]))
    if not _finite(score):
        raise _Damaged(f"{run_dir / 'summary.json'}: the final {metric(config['env'])} is {score!r}, not a finite "
                       "number")
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
        if "total_steps" in free and all(_decays_by_fraction(r) for r in (a, b)):  # ε's decay follows the length
            free = free | {"eps_decay_steps"}
        for key in sorted((set(a.config) | set(b.config)) - BOOKKEEPING - {"algo", "seed"} - free):
            if _reads(a.algo, key, a) and _reads(b.algo, key, b) and config_value(a, key) != config_value(b, key):
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


def has_directory(run: RunData) -> bool:
    """A run read from a directory (its own, or a record's copy of it): one whose curves can be drawn."""
    return run.recorded is None or "copy" in run.recorded


def copies_once(runs: list[RunData]) -> tuple[list[RunData], int]:
    """(the runs with each copy of a run left out, how many were): a run that two of a report's sources both
    hold (a probe's record repeats the runs of the grid it departs from; a run's directory beside a record of
    it) counts once, as its own directory where one is given, else a record's copy of it (its curves). A copy
    is the same environment, column and seed, the same configuration, and the same wall clock to the last
    digit, speed, commit and final score; two runs that differ in any of these both stay (and
    `check_comparable` refuses them), as do runs that recorded no wall clock."""
    def same(a: RunData, b: RunData) -> bool:
        fields = (set(a.config) | set(b.config)) - BOOKKEEPING
        return a.summary.get("wall_seconds") is not None and final_score(a) == final_score(b) and \
            all(a.summary.get(k) == b.summary.get(k) for k in ("wall_seconds", "env_steps_per_s")) and \
            (a.summary.get("commit") or "") == (b.summary.get("commit") or "") and \
            all(config_value(a, k) == config_value(b, k) for k in fields if _reads(a.algo, k, a))

    def rank(run: RunData) -> int:  # its own directory, a record's copy of it (metrics thinned), a record's row
        return 2 if run.recorded is None else int(has_directory(run))

    kept: dict[int, RunData] = {}  # by position of the first of its copies
    first: dict[tuple, int] = {}
    for i, run in enumerate(runs):
        key = (run.env, run.column, run.config.get("seed"))
        if key in first and same(kept[first[key]], run):
            if rank(run) > rank(kept[first[key]]):
                kept[first[key]] = run
            continue
        first.setdefault(key, i)
        kept[i] = run
    return list(kept.values()), len(runs) - len(kept)


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


def group_labels(algo: str) -> dict[str, str]:
    """The groups of arms whose shares method `algo`'s runs log (`arms_<group>`), with their labels ({}: none)."""
    method = METHODS.get(algo)
    return method.acting.group_labels if method is not None else {}


def other_evaluations(algo: str) -> dict[str, str]:
    """Method `algo`'s evaluation policies besides its main one, with their labels (β-DQN's basic policies)."""
    method = METHODS.get(algo)
    return {} if method is None else {p: l for p, l in method.acting.eval_labels.items() if p != "main"}


def _arms(run: RunData) -> list[tuple[str, str]]:
    """Each arm's (label, group) in the run (its method says, from the run's config)."""
    method = METHODS.get(run.algo)
    return method.acting.arms_of(run.config) if method is not None else []


def window_shares(run: RunData) -> dict[str, float] | None:
    """The share of each group of arms in the meta-controller's window at the end of the run (β-DQN's policy
    groups), or None."""
    bandit = run.summary.get("bandit")
    if not bandit or not group_labels(run.algo):
        return None
    plays = np.asarray(bandit["plays"], dtype=np.float64)
    groups = [group for _, group in _arms(run)]
    return {g: float(plays[[x == g for x in groups]].sum() / max(plays.sum(), 1)) for g in group_labels(run.algo)}


def bandit_arms(run: RunData) -> tuple[tuple, tuple | None] | None:
    """β-DQN at the end of the run: the arm holding most of the window and, of the others, the one with the
    largest μ + b, each as (label, share, μ, b)."""
    bandit = run.summary.get("bandit")
    if not bandit:
        return None
    plays, mu, bonus = (np.asarray(bandit[k], dtype=np.float64) for k in ("plays", "mu", "bonus"))
    labels = [label for label, _ in _arms(run)]
    if len(labels) != len(plays):  # a method this program does not know (an old record's, a plugin's not loaded)
        labels = [f"arm {i}" for i in range(len(plays))]
    top = int(np.argmax(plays))
    score = np.where((plays > 0) & (np.arange(len(plays)) != top), mu + bonus, -np.inf)
    other = int(np.argmax(score))
    share = plays / max(plays.sum(), 1)
    if not np.isfinite(score[other]):  # no other arm in the window
        return (labels[top], share[top], mu[top], bonus[top]), None
    return ((labels[top], share[top], mu[top], bonus[top]), (labels[other], share[other], mu[other], bonus[other]))
