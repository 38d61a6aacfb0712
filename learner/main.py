"""`python -m learner.main`: parse, validate, start or join Ray, run, report.

With no flag but `--actors`, it runs the paper's configuration: β-DQN on MinAtar/Breakout, 5M steps.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import sys
import threading
import typing
from pathlib import Path
from urllib.parse import quote

from learner.config import ALGOS, AXES, CHECKPOINT_FORMAT, Config, ConfigError, flag, flag_text, resolve
from replay_service.local_redis import RedisSetupError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # one line, status 2, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _axis(conv):
    """A converter that reads a comma list as a grid axis: the list of the converted values."""

    def convert(text: str):
        if "," not in text:
            return conv(text)
        if any(not v.strip() for v in text.split(",")):
            raise argparse.ArgumentTypeError(f"an empty item in the list {text!r}")
        values = [conv(v.strip()) for v in text.split(",")]
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise argparse.ArgumentTypeError(f"{flag_text(repeated[0])!r} appears twice in the list {text!r}")
        return values

    convert.__name__ = conv.__name__  # argparse names it in "invalid <type> value"
    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m learner.main", description=__doc__, epilog=_EPILOG,
                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    hints = typing.get_type_hints(Config)
    for f in dataclasses.fields(Config):
        kind = hints[f.name]
        if kind is bool:
            conv = _bool
        elif kind in (int, float, str):
            conv = kind
        else:  # float | None
            conv = float
        whose = f.metadata["algos"]
        parser.add_argument(flag(f.name), dest=f.name, type=_axis(conv) if f.name in AXES else conv,
                            default=f.default, metavar=f.name.upper() if conv is not _bool else "BOOL",
                            help=f.metadata["help"] + ("" if whose == ALGOS else f" [read by {', '.join(whose)}]"))
    return parser


_EPILOG = ("A grid: any flag that changes what a run computes, given as a comma list, is an axis, and --seeds "
           "lists seeds; every combination runs (e.g. --algo beta_dqn,dqn --bandit-returns minmax,raw --seeds "
           "0-9). A flag a method does not read keeps its default for that method's runs.")


def parse_config(argv: list[str] | None = None) -> Config:
    args = build_parser().parse_args(argv)
    return Config(**vars(args))


# what a resumed run may change: where and how it runs and reports, not what it computes
RESUME_MAY_CHANGE = ("resume", "address", "device", "progress", "log_every", "wandb", "replay", "json")


def resume_config(argv: list[str] | None = None) -> tuple[Config, dict]:
    """`--resume DIR`: the saved configuration (flags given again must agree with it) and the checkpoint."""
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    run_dir = Path(args["resume"])
    path = run_dir / "checkpoint.pt"
    if not path.is_file():
        raise ConfigError("resume", f"no checkpoint.pt in {args['resume']!r}")
    import torch

    try:
        # tensors and plain data only (nothing is unpickled), onto the CPU (a GPU run can resume on a CPU)
        ckpt = torch.load(path, weights_only=True, map_location="cpu")
        saved = dict(ckpt["config"])
    except Exception as e:
        raise ConfigError("resume", f"{path} is not a checkpoint this program can read ({type(e).__name__})") from None
    if ckpt.get("format", 1) != CHECKPOINT_FORMAT:
        raise ConfigError("resume", f"{path} has checkpoint format {ckpt.get('format', 1)}, written by another version "
                                    f"of this program; this one continues format {CHECKPOINT_FORMAT} only")
    given = {k: v for k, v in args.items() if v != parser.get_default(k)}
    for key, value in given.items():
        if key not in RESUME_MAY_CHANGE and key != "out" and saved.get(key) != value:
            raise ConfigError(key, f"{value!r} differs from the run being resumed ({saved.get(key)!r}); "
                                   "a resumed run keeps its configuration")
    if "replay" in given:  # a new address for the same Redis data, nothing else
        old, new = saved["replay"], given["replay"]
        if (old in ("memory", "redis-local") or new in ("memory", "redis-local")
                or len(old.split(",")) != len(new.split(","))):
            raise ConfigError("replay", f"a resumed run keeps its replay ({old!r}); only the URLs of the same "
                                        "number of Redis servers may be given again")
    if saved["replay"] == "redis-local" and not saved.get("replay_persist"):
        raise ConfigError("resume", "this run's redis-local replay was not persisted (--replay-persist): its "
                                    "data is gone, so the run cannot continue exactly")
    merged = {**saved, **{k: v for k, v in given.items() if k in RESUME_MAY_CHANGE}, "out": str(run_dir)}
    if "***" in merged["replay"]:  # config.json and checkpoints keep no passwords
        password = os.environ.get("REDIS_PASSWORD")
        if not password:
            raise ConfigError("replay", "the run's Redis URL has a password that was not saved: pass --replay "
                                        "with it, or set REDIS_PASSWORD")
        merged["replay"] = merged["replay"].replace("***", quote(password, safe=""))
    known = {f.name for f in dataclasses.fields(Config)}
    return Config(**{k: v for k, v in merged.items() if k in known}), ckpt


class _Quiet(io.TextIOBase):
    """Stdout while a run goes on: what Ray prints there goes to stderr, beside the progress bar, except the
    raylet's warnings that it started many worker processes at once (a dozen with --actors 32: expected, and
    harmless here), which go to `log` (RAY_WORKER_WARNINGS=1 shows them)."""

    NOISE = "worker processes have been started"

    def __init__(self, log: Path):
        self.log = log
        self.show = os.environ.get("RAY_WORKER_WARNINGS", "") == "1"
        # Ray prints from threads of its own, a line in two writes (text, then newline): a partial line per
        # thread, and one writer at a time
        self.partial: dict[int, str] = {}
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            me = threading.get_ident()
            *lines, self.partial[me] = (self.partial.get(me, "") + text).split("\n")
            for line in lines:
                if self.NOISE in line and not self.show:
                    self.log.parent.mkdir(parents=True, exist_ok=True)
                    with open(self.log, "a") as f:
                        f.write(line + "\n")
                else:
                    sys.stderr.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        sys.stderr.flush()

    # what code that asks stdout about itself during a run gets: stderr's answers
    @property
    def encoding(self) -> str:
        return sys.stderr.encoding

    def fileno(self) -> int:
        return sys.stderr.fileno()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


@contextlib.contextmanager
def _quiet_stdout(log: Path):
    quiet = _Quiet(log)
    try:
        with contextlib.redirect_stdout(quiet):
            yield
    finally:
        for partial in quiet.partial.values():  # last lines without their newline
            if partial:
                sys.stderr.write(partial + "\n")


def _grid(argv: list[str] | None) -> int | None:
    """Run a grid if the command line asks for one (lists, --seeds, or --resume of a grid directory)."""
    from learner.grid import grid_from_args, is_grid
    from learner.metrics import describe_grid

    args = vars(build_parser().parse_args(argv))
    if not is_grid(args):
        return None
    grid = grid_from_args(args)
    try:
        with _quiet_stdout(grid.dir / "ray_warnings.log"):
            summary = grid.run()
    except KeyboardInterrupt:
        print(f"python -m learner.main: grid interrupted; continue it with --resume {grid.dir}", file=sys.stderr)
        return 130
    print(json.dumps(summary, indent=2) if grid.args["json"] else describe_grid(summary, grid.dir))
    return 0 if summary["failed"] == 0 else 1


def main(argv: list[str] | None = None) -> int:
    try:
        status = _grid(argv)
        if status is not None:
            return status
        config, resume = parse_config(argv), None
        if config.resume:
            config, resume = resume_config(argv)
        cfg, spec = resolve(config)
        from learner.run import train  # torch and Ray load only for a valid config

        # stdout carries the summary alone: what Ray prints while the run goes on goes to stderr with the
        # progress bar (its warnings about starting many workers at once to a file)
        with _quiet_stdout(Path(cfg.out) / "ray_warnings.log"):
            summary = train(cfg, spec, resume)
    except ConfigError as e:
        print(f"python -m learner.main: error: {e}", file=sys.stderr)
        return 2
    except RedisSetupError as e:  # e.g. a redis-local server that did not start
        print(f"python -m learner.main: error: --replay: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        from learner.run import NonFiniteLoss, ReplayUnavailable

        if type(e).__name__ in ("ActorDiedError", "RayActorError"):  # restarted MAX_RESTARTS times already
            print(f"python -m learner.main: an actor process kept dying; the run stopped "
                  f"({str(e).strip().splitlines()[0]})", file=sys.stderr)
            return 1
        if not isinstance(e, (NonFiniteLoss, ReplayUnavailable)):
            raise
        print(f"python -m learner.main: {e}", file=sys.stderr)
        return 1
    from learner.metrics import describe_run

    print(json.dumps(summary, indent=2) if cfg.json else describe_run(cfg, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
