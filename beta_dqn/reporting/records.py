"""A report's record read back as runs: a directory holding the runs.csv and study.json that `learner.report`
wrote (a committed `results/<grid>/`) stands for its runs in a later report when their directories are gone.
Table 1 and the per-column tables take them as recorded. Beside them the report keeps a small copy of each
run's directory it read (`runs/<run>/`: config.json, summary.json, evals.csv and the metrics.jsonl lines the
report reads, thinned; no checkpoint, no replay): a record's run that has one is read back whole, curves and
the meta-controller's window over time included, so every number of a report can be computed again from it.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import shlex
from pathlib import Path

from actors.envs import UnknownEnvError, domain, env_spec
from actors.envs.gymnasium_ids import registered
from beta_dqn.configuration.cli import build_parser
from beta_dqn.configuration.compat import command_pins
from beta_dqn.configuration.defaults import env_defaults
from beta_dqn.configuration.flags import (
    BOOKKEEPING,
    FIELDS,
    cli_name,
    flag_text,
    run_name,
    settled_arm_exchange,
)
from beta_dqn.files import write_atomically
from beta_dqn.reporting.results import (
    RECORDS,
    ReportError,
    RunData,
    _Damaged,
    _finite,
    _load_run,
    config_value,
    has_directory,
    load_runs,
    metric,
    train_window,
)
from learner.methods import METHODS

# (and after the first six, every group's share, `arms_<group>`)
METRICS_KEPT = ("env_steps", "updates", "episodes", "train_episodes", "train_return_mean", "train_success_rate",
                "arm_proportions", "arm_mu", "arm_bonus",
                # the learner's diagnostics, means over the line's updates (a merged line keeps its last line's)
                "q_mean", "beta_entropy", "mask_drops_argmax")
METRICS_LINES = 500  # a copy's metrics.jsonl keeps at most about this many lines (~600 bytes each for β-DQN)


def is_recorded(root: Path) -> bool:
    """A report's directory: runs.csv at its top (study.json beside it is then required), and no run under it
    but its own copies in runs/ (ReportError where one is: which of the two is meant?)."""
    if not (root / "runs.csv").is_file():
        return False
    run = next((p for p in root.rglob("config.json") if not p.is_relative_to(root / RECORDS)), None)
    if run is not None:
        raise ReportError(f"{root} holds both a report's record (runs.csv, study.json) and a run ({run.parent}): "
                          "a report written into its runs' directory? Move its runs.csv and study.json away, "
                          "or the runs out of the record")
    return True


def load_all(*roots: Path) -> tuple[list[RunData], list[str]]:
    """`beta_dqn.reporting.results.load_runs` over the roots that hold runs, and `load_recorded` over those that are a
    report's record; the directories left out, each once: a record's unfinished run only where it is not here
    from elsewhere (finished since, as a run of that name outside the record, or left out again)."""
    runs, records = [], []
    for root in roots:
        if is_recorded(root):
            recorded, left = load_recorded(root)
            runs += recorded
            records.append((str(root / "runs.csv"), left))
    found, left_out = load_runs(*(root for root in roots if not (root / "runs.csv").is_file()))
    runs += found
    counted = {Path(u).name for u in left_out}
    for own, left in records:
        elsewhere = counted | {Path(r.name).name for r in runs if r.path != own}
        kept = [u for u in left if Path(u).name not in elsewhere]
        left_out += kept
        counted |= {Path(u).name for u in kept}
    return runs, left_out


def load_recorded(root: Path) -> tuple[list[RunData], list[str]]:
    """The runs a report recorded in `root` (runs.csv, a row per run; study.json, each run's command, exact final
    score and first evaluation at ≥ 0.9), e.g. a committed `results/<grid>/`, for Table 1 beside other runs
    when the runs' directories are gone; and the runs that report left out as unfinished (its report.json).
    Each run has what the tables need, as recorded: final score, speed, training score, first evaluation at
    ≥ 0.9; and a configuration read from its command, so that comparing runs still holds. The command names
    only the flags that were not at their default when the report was made: the others take this program's
    defaults, so a default other than the one the record ran with would move its runs unseen; a LEGACY flag
    left out takes LEGACY's value (the behaviour of runs made before the flag), which is right because
    `run_command` names such a flag wherever a method reads it (β-DQN's --arm-exchange is written settled,
    never as auto). The training score is study.json's where it has one (exact), else runs.csv's (6 digits).
    No curves, no meta-controller: those need the run's directory. ReportError, in one line, when the files do
    not parse or do not agree."""
    def fail(reason: str) -> ReportError:
        return ReportError(f"{root} is a report's directory whose {reason}")

    rows, listed, commands, unfinished = _recorded_files(root, fail)
    in_csv, in_study = _keyed(rows, "runs.csv", fail), _keyed(listed, "study.json", fail)
    for key in sorted(in_csv.keys() ^ in_study.keys(), key=str):  # the first in order: the same line every time
        raise fail(f"{'study.json' if key in in_csv else 'runs.csv'} lacks {_name(key)}, which the other lists")
    return [_recorded_run(root, key, row, in_study[key], commands, fail) for key, row in in_csv.items()], unfinished


def _name(key: tuple) -> str:
    """A recorded run in words: `DoorKey beta_dqn seed 0`, its variant before the seed where it has one."""
    return f"{key[0]} {key[1]} {key[2] + ' ' if key[2] else ''}seed {key[3]}"


def _recorded_files(root: Path, fail) -> tuple[list[dict], list[dict], list[str], list[str]]:
    """A record's runs.csv rows, study.json's runs and grid commands, and report.json's unfinished runs, each
    checked for its shape (`fail(reason)` makes the error)."""
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
    for c in commands:
        try:
            _parsed(c)
        except ValueError as e:
            raise fail(f"study.json has a grid command that {e}: {c}") from None
    if not isinstance(unfinished, list) or not all(isinstance(u, str) for u in unfinished):
        raise fail("report.json's unfinished runs are not a list of directories")
    columns = ("env", "algo", "variant", "seed", "env_steps", "score", "metric", "train_score", "env_steps_per_s")
    missing = [c for c in columns if c not in (rows[0] if rows else {})]
    if missing:
        raise fail("runs.csv has no run" if not rows else f"runs.csv lacks the column {missing[0]}")
    return rows, listed, commands, unfinished


def _keyed(items, where: str, fail) -> dict:
    """runs.csv's rows or study.json's runs by (env, algo, variant, seed), each checked and listed once."""
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
            raise fail(f"{where} lists {_name(key)} twice")
        out[key] = item
    return out


def _recorded_numbers(key: tuple, row: dict, study: dict, fail) -> tuple:
    """One recorded run's numbers, checked: (final score, env steps/s, env steps, wall seconds, training score,
    first evaluation at ≥ 0.9)."""
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
        raise fail(f"runs.csv or study.json has a value of {_name(key)} that does not parse: {text}") from None
    if not all(math.isfinite(x) for x in (rate, shown, *(v for v in (wall,) if v is not None))) or rate <= 0:
        raise fail(f"runs.csv or study.json has a score, speed or time of {_name(key)} that is not a finite "
                   f"number (or a speed not above 0): {text}")
    if not math.isclose(score, shown, rel_tol=1e-5, abs_tol=1e-9):
        raise fail(f"study.json's final score of {_name(key)} ({score!r}) is not runs.csv's ({row['score']})")
    first = study.get("first_success_step")
    if first is not None and (not isinstance(first, int) or isinstance(first, bool) or first < 0):
        raise fail(f"study.json's first_success_step of {_name(key)} is not a step count: {first!r}")
    return score, rate, steps, wall, train, first


def _recorded_run(root: Path, key: tuple, row: dict, study: dict, commands: list[str], fail) -> RunData:
    """One run of a record, as `load_recorded` says: its numbers, and its configuration from its command."""
    score, rate, steps, wall, train, first = _recorded_numbers(key, row, study, fail)
    if ":" not in key[0]:  # (a module:Id env is the user's: its module need not be importable here)
        try:  # a Gymnasium id by its registration (a record's run may have wrapped it, which is not applied here)
            registered(key[0]) if domain(key[0]) == "Other" else env_spec(key[0])
        except UnknownEnvError as e:
            raise fail(f"runs.csv names an environment this code does not know: {e}") from None
    if row["metric"] != metric(key[0]):
        raise fail(f"runs.csv scores {key[0]} by {row['metric']!r}, where the report's score is "
                   f"{metric(key[0])!r}")
    cmd = study.get("cmd")
    if not isinstance(cmd, str):
        raise fail(f"study.json gives {_name(key)} no command (cmd)")
    config = _command_config(cmd, fail)
    if (config.get("env"), config.get("algo"), config.get("seed")) != (key[0], key[1], key[3]):
        raise fail(f"study.json's command for {_name(key)} runs something else: {cmd}")
    gamma, lr = env_defaults(key[0])  # run_command leaves out the env's own γ and learning rate
    config.setdefault("gamma", gamma)
    config.setdefault("lr", lr)
    config.setdefault("total_steps", FIELDS["total_steps"].default)
    config["variant"] = key[2]
    summary = {"env_steps_per_s": rate, "final_eval": {row["metric"]: score},
               "device": config.pop("device", "cpu"), "commit": row.get("commit", ""),
               "cpu": row.get("cpu", "")}
    summary.update({k: v for k, v in (("env_steps", steps), ("wall_seconds", wall)) if v is not None})
    run = RunData(f"{root.name}/{run_name(key[0], key[1], key[3], key[2])}", config, summary, [],
                  path=str(root / "runs.csv"),
                  recorded={"train_score": train, "first_success_step": first, "cmd": cmd, "commands": commands})
    copy = root / RECORDS / run_name(key[0], key[1], key[3], key[2])
    if copy.is_dir():
        run = _read_copy(copy, run, fail)
    for part in filter(None, key[2].split(",")):  # the variant names values its command must have
        field_name, _, value = part.partition("=")
        field_name = field_name.replace("-", "_")
        if field_name == "arm_exchange":  # a grid's axis names the value asked; config_value, the one settled
            value = settled_arm_exchange(key[1], config_value(run, "runtime"), value)
        if field_name not in FIELDS or flag_text(config_value(run, field_name)) != value:
            raise fail(f"variant of {_name(key)} says {part}, its command does not: {cmd}")
    return run


def _parsed(cmd: str) -> dict:
    """The fields a `python -m learner.main` command line names (a run's or a grid's: a grid's axes as lists), or
    ValueError saying what is wrong with it ("does not split into words (...)", ...)."""
    try:
        words = shlex.split(cmd)
    except ValueError as e:
        raise ValueError(f"does not split into words ({e})") from None
    if words[:3] != ["python", "-m", "learner.main"]:
        raise ValueError("is not python -m learner.main")
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            named = vars(build_parser(defaults=False).parse_args(words[3:]))
    except SystemExit:
        reason = said.getvalue().strip().splitlines()[-1:] or ["it asks for the help"]
        raise ValueError(f"does not parse ({reason[0]})") from None
    return named  # (only the flags it names: the parser's defaults=False leaves the others out)


def command_fields(cmd: str) -> dict | None:
    """`_parsed`, or None where the command is not one learner.main parses."""
    try:
        return _parsed(cmd)
    except ValueError:
        return None


def pinned_command(cmd: str, grid: bool = False) -> str:
    """A recorded command (a run's `cmd`, or with `grid` a grid's, from a report's study.json) with each LEGACY
    flag that its methods read and that it leaves out added at LEGACY's value (`compat.command_pins`): a command
    that leaves such a flag out was written by code whose default that value was, so it ran with it, and the
    report reads it so, not at this program's default. A --resume command, or one that does not parse, is left as
    it is."""
    named = command_fields(cmd)
    if named is None or named.get("resume"):
        return cmd
    algo = named.get("algo", FIELDS["algo"].default)
    algos = [a.strip() for a in (algo if isinstance(algo, list) else str(algo).split(","))]
    return cmd + "".join(f" {cli_name(k)} {shlex.quote(flag_text(v))}"
                         for k, v in command_pins(named, [a for a in algos if a in METHODS], grid).items())


def _command_config(cmd: str, fail) -> dict:
    """`python -m learner.main --flag value ...` (a run's command, `run_command`'s) as the fields it names."""
    try:
        config = _parsed(cmd)
    except ValueError as e:
        raise fail(f"study.json has a command that {e}: {cmd}") from None
    if any(isinstance(v, list) for v in config.values()):
        raise fail(f"study.json has a command of a grid, not of one run: {cmd}")
    return config


def _read_copy(copy: Path, recorded: RunData, fail) -> RunData:
    """A record's copy of a run's directory, read as that run (with the record's variant, and what the record
    says of it: its exact training score, command and grid commands), after checking that it is the run the
    record lists: the same environment, method, seed and final score."""
    try:
        run = _load_run(copy)
    except _Damaged as e:
        raise fail(f"copy of a run is damaged: {e}") from None
    run.config["variant"] = recorded.variant
    same = (run.env, run.algo, run.config.get("seed")) == (recorded.env, recorded.algo, recorded.config["seed"])
    score = run.summary["final_eval"].get(metric(run.env))
    if not same or not _finite(score) or not math.isclose(score, recorded.summary["final_eval"][metric(run.env)],
                                                          rel_tol=1e-9, abs_tol=1e-12):
        raise fail(f"copy {copy} is not the run runs.csv lists there (environment, method, seed or final score)")
    for key in sorted(set(recorded.config) - BOOKKEEPING - {"variant"}):
        if config_value(recorded, key) != config_value(run, key):
            raise fail(f"copy {copy} ran with {key} = {config_value(run, key)!r}, where study.json's command says "
                       f"{config_value(recorded, key)!r}")
    assert recorded.recorded is not None  # a record's run (`_recorded_run`)
    return RunData(recorded.name, run.config, run.summary, run.evals, run.metrics, str(copy),
                   recorded={**recorded.recorded, "copy": str(copy)})


def thin_metrics(rows: list[dict], cut: float, limit: int = METRICS_LINES) -> list[dict]:
    """metrics.jsonl's lines, the kept keys only, with the lines that end at or before env step `cut` (the start of
    the window `train_score` reads) merged in runs of consecutive lines until about `limit` lines remain: a merged
    line is the last of its run (the window's shares, μ and b then; its env steps), with the training episodes
    summed and their score weighted by episodes. The lines after `cut` stay as they are, so `train_score` reads
    the same numbers from the copy as from the run."""
    rows = [{k: row[k] for k in (*METRICS_KEPT[:6], *(k for k in row if k.startswith("arms_")), *METRICS_KEPT[6:])
             if k in row} for row in rows]
    head = [row for row in rows if row["env_steps"] <= cut]
    tail = rows[len(head):]
    k = -(-len(head) // max(limit - len(tail), 1))
    if k <= 1:
        return rows
    merged = []
    for i in range(0, len(head), k):
        span = head[i:i + k]
        line = dict(span[-1])
        line["train_episodes"] = sum(row.get("train_episodes", 0) for row in span)
        for key in ("train_return_mean", "train_success_rate"):
            scored = [(row["train_episodes"], row[key]) for row in span if row.get("train_episodes") and key in row]
            if scored:
                line[key] = sum(n * v for n, v in scored) / sum(n for n, _ in scored)
            else:
                line.pop(key, None)
        merged.append(line)
    return merged + tail


def check_copies_dir(report: Path) -> None:
    """`report/runs/` may take a report's copies: absent, or an earlier report's copies there (runs.csv beside
    it, no link, no run of its own inside); ReportError otherwise, before anything is written."""
    copies = report / RECORDS
    if not copies.exists() and not copies.is_symlink():
        return
    if copies.is_symlink() or not copies.is_dir():
        raise ReportError(f"{copies} is a link or not a directory: a report writes its copies of the runs only into "
                          "a directory of its own; give --out another directory")
    if not (report / "runs.csv").is_file():
        raise ReportError(f"{copies} exists and is not an earlier report's copies of its runs (no runs.csv beside it): "
                          "give --out another directory")
    for child in copies.iterdir():
        if child.is_symlink() or any((child / name).exists() for name in (".lock", ".written", "checkpoint.pt")):
            raise ReportError(f"{child} is a link or a run's own directory, not a report's copy: give --out another "
                              "directory")


def write_copies(runs: list[RunData], out: Path) -> None:
    """`out/<run>/` for each run read from a directory (a run's, or a record's copy): its config.json,
    summary.json and evals.csv as they are, and its metrics.jsonl thinned (`thin_metrics`). Named by
    environment, column and seed, as runs.csv lists them."""
    for run in runs:
        if not has_directory(run):
            continue
        source = Path(run.path)
        target = out / run_name(run.env, run.algo, int(run.config["seed"]), run.variant)
        target.mkdir(parents=True, exist_ok=True)
        # the fields a run has, nothing else: a key added by hand (a note, a token) stays in the run's directory
        config = {k: v for k, v in json.loads((source / "config.json").read_text()).items() if k in FIELDS}
        for key in ("out", "resume", "replay_password_file"):  # where it lay on its machine: the name only
            if isinstance(config.get(key), str) and config[key]:
                config[key] = Path(config[key]).name
        config["out"] = target.name
        text = json.dumps(config, indent=2) + "\n"
        write_atomically(target / "config.json", lambda f, text=text: f.write(text))
        for name in ("summary.json", "evals.csv"):
            data = (source / name).read_bytes()
            write_atomically(target / name, lambda f, data=data: f.write(data), "wb")
        lines = []
        if (source / "metrics.jsonl").is_file():
            lines = [json.loads(line) for line in (source / "metrics.jsonl").read_text().splitlines() if line.strip()]
        end = run.summary.get("env_steps") or (lines[-1]["env_steps"] if lines else 0)
        kept = "".join(json.dumps(row) + "\n" for row in thin_metrics(lines, end - train_window(run)))
        write_atomically(target / "metrics.jsonl", lambda f, kept=kept: f.write(kept))
