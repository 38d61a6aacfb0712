"""`--resume DIR`: the run's saved configuration (flags given again must agree with it) and its checkpoint,
both checked before anything starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from actors.envs import UnknownEnvError, env_spec
from beta_dqn.configuration.cli import build_parser
from beta_dqn.configuration.compat import read_as_it_ran
from beta_dqn.configuration.flags import (
    FIELDS,
    RESUME_MAY_CHANGE,
    Config,
    ConfigError,
    cli_name,
    replay_backend,
    restore_password,
)
from beta_dqn.driver.outputs import metrics_until
from beta_dqn.driver.state import read_checkpoint
from replay_service.backends import backend_for


def _check_directory(run_dir: Path, saved: dict) -> None:
    """The checkpoint belongs to the run of this directory, and config.json was not edited since: a resumed
    run keeps the checkpoint's configuration, so an edit would be ignored (and config.json rewritten)."""
    path = run_dir / "config.json"
    if not path.exists():
        return  # the checkpoint alone tells the run's configuration
    try:
        written = json.loads(path.read_text())
        if not isinstance(written, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise ConfigError("resume", f"{path} is damaged ({e}); the checkpoint holds the run's configuration: "
                                    "restore config.json or remove it") from None
    if written.get("run_id") != saved.get("run_id"):
        raise ConfigError("resume", f"{run_dir / 'checkpoint.pt'} belongs to run {saved.get('run_id')!r}, but "
                                    f"config.json here is run {written.get('run_id')!r}: a checkpoint copied from "
                                    "another run directory does not continue this one")
    edited = [k for k in saved if k in written and written[k] != saved[k]
              and k not in RESUME_MAY_CHANGE and k not in ("out", "resume")]
    if edited:
        k = edited[0]
        raise ConfigError("resume", f"config.json was edited after the checkpoint ({cli_name(k)} {written[k]!r}, the "
                                    f"checkpoint has {saved[k]!r}): a resumed run keeps its configuration; restore "
                                    "config.json, or start a new run with the new value")
    added = sorted(k for k in written if k not in saved and k not in FIELDS)
    if added:  # a hand edit the run never reads: said, then config.json is written again without it
        shown = ", ".join(repr(k[:40]) for k in added[:4]) + (f" and {len(added) - 4} more" if len(added) > 4 else "")
        print(f"warning: {path} has keys this program does not read, dropped as the run continues (config.json is "
              f"written again from the checkpoint): {shown}", file=sys.stderr)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_checkpoint(ckpt: dict, saved: dict, path: Path) -> None:
    """What a resume reads of a checkpoint besides the networks (which `Checkpointer.restore` checks by loading them),
    checked before anything starts: counters that are whole numbers ≥ 0 with the env steps within the run's
    budget, evaluations in order at steps it reached, the target and evaluation clocks, the method it trained.
    ConfigError in one line naming what is wrong."""
    def bad(what: str) -> ConfigError:
        return ConfigError("resume", f"{path} is damaged or not this run's: {what}")

    counters = ckpt.get("counters")
    if not isinstance(counters, dict):
        raise bad("it has no counters")
    for key in ("env_steps", "updates", "episodes", "arm_episodes", "dispatched", "generation"):
        if not _count(counters.get(key, 0 if key == "generation" else None)):
            raise bad(f"its {key} is {counters.get(key)!r}, not a whole number ≥ 0")
    wall = counters.get("wall_seconds", 0.0)
    if not isinstance(wall, (int, float)) or isinstance(wall, bool) or not 0 <= wall < float("inf"):
        raise bad(f"its wall_seconds is {wall!r}, not a number of seconds")
    visits = ckpt.get("visits")
    if visits is not None:
        cells = env_spec(saved["env"], saved.get("env_kwargs", ""), saved.get("wrappers", "")).obs_shape[0]
        if not (isinstance(visits, list) and len(visits) == cells and all(_count(v) for v in visits)):
            raise bad(f"its state visits are not a list of {cells} counts")
    steps, total = counters["env_steps"], saved.get("total_steps")
    if not _count(total) or steps > total:
        raise bad(f"its env_steps ({steps:,}) are beyond the run's total_steps ({total!r})")
    evals = ckpt.get("evals")
    if not isinstance(evals, list) or not all(isinstance(e, dict) and _count(e.get("env_steps")) for e in evals):
        raise bad("its evaluations are not a list of results with env_steps")
    at = [e["env_steps"] for e in evals]
    if at != sorted(set(at)) or (at and at[-1] > steps):
        raise bad(f"its evaluations' env steps {at[:5]}{' …' if len(at) > 5 else ''} are not increasing steps the "
                  f"run reached ({steps:,})")
    following = ckpt.get("next")
    if not isinstance(following, dict) or not all(_count(following.get(k)) for k in ("target", "eval")):
        raise bad("its target and evaluation clocks (next) are not whole numbers ≥ 0")
    syncs = ckpt.get("target_syncs")
    if not isinstance(syncs, list) or not all(isinstance(t, (list, tuple)) and len(t) == 2 and all(map(_count, t))
                                              for t in syncs):
        raise bad("its target copies (target_syncs) are not pairs of step counts")
    if not isinstance(ckpt.get("learner"), dict) or not isinstance(ckpt.get("arm_source"), dict):
        raise bad("it has no learner or arm source state")


def resume_config(argv: list[str] | None = None) -> tuple[Config, dict]:
    """`--resume DIR`: the saved configuration (flags given again must agree with it) and the checkpoint."""
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    run_dir = Path(args["resume"])
    path = run_dir / "checkpoint.pt"
    if not path.is_file():
        raise ConfigError("resume", f"no checkpoint.pt in {args['resume']!r}")
    # tensors and plain data only (nothing is unpickled), onto the CPU (a GPU run can resume on a CPU); the checks
    # every reader of a checkpoint makes (`read_checkpoint`), then the resume's own (`_check_checkpoint`)
    ckpt, saved = read_checkpoint(path, lambda message: ConfigError("resume", message))
    try:
        saved = read_as_it_ran(saved)
    except UnknownEnvError as e:
        raise ConfigError("env", str(e)) from None
    named = vars(build_parser(defaults=False).parse_args(argv))  # a flag named at its default's value is given too
    given = {k: v for k, v in args.items() if v != parser.get_default(k) or k in named}
    given.pop("resume", None)
    if given.get("overwrite"):
        raise ConfigError("overwrite", f"--resume continues the run in {args['resume']!r}; --overwrite true starts "
                                       "a new one there: give one of them")
    if "out" in given and Path(given["out"]).resolve() != run_dir.resolve():
        raise ConfigError("out", f"{given['out']!r}: --resume continues the run in {args['resume']!r} and writes "
                                 "there; give one of them")
    _check_directory(run_dir, saved)

    _check_checkpoint(ckpt, saved, path)
    metrics_until(run_dir / "metrics.jsonl", int(ckpt["counters"]["env_steps"]), warn=False)  # damaged: one line
    for key, value in given.items():
        was = saved.get(key, FIELDS[key].default if key in FIELDS else None)  # a field the checkpoint predates
        if key not in RESUME_MAY_CHANGE and key not in ("out", "resume") and was != value:
            raise ConfigError(key, f"{value!r} differs from the run being resumed ({was!r}); "
                                   "a resumed run keeps its configuration")
    backend = replay_backend(saved["replay"])  # (ConfigError where none takes it)
    if "replay" in given:  # a new address for the same data, nothing else
        old, new = saved["replay"], given["replay"]
        if backend_for(new) is not backend or not backend.moves(old, new):
            raise ConfigError("replay", f"a resumed run keeps its replay ({old!r}); only the URLs of the same "
                                        "number of Redis servers may be given again")
    why = backend.cannot_resume(saved)
    if why:
        raise ConfigError("resume", f"this run cannot continue exactly: {why}, so its data is gone")
    merged = {**saved, **{k: v for k, v in given.items() if k in RESUME_MAY_CHANGE}, "out": str(run_dir),
              "resume": args["resume"]}
    # config.json and checkpoints keep no passwords
    merged["replay"] = restore_password(merged["replay"], "run", merged)
    return Config.of(**{k: v for k, v in merged.items() if k in FIELDS}), ckpt
