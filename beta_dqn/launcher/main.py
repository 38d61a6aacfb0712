"""`python -m learner.main`: parse, validate, start or join Ray, run, report.

With no flag but `--actors`, it runs the paper's configuration: β-DQN on MinAtar/Breakout, 5M steps.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from pathlib import Path

from actors.envs import EnvFailed
from beta_dqn.configuration.cli import PROG, is_grid, parse_command
from beta_dqn.configuration.config_file import for_run
from beta_dqn.configuration.errors import user_error
from beta_dqn.configuration.flags import Config, ConfigError, OutputError, fit_warning, no_update_error, resolve
from beta_dqn.driver.cluster import ClusterStartError
from beta_dqn.driver.outputs import NonFiniteLoss, describe_run
from beta_dqn.driver.signals import Interrupted, error_chain, interrupt_behind, local_cluster_gone, say_beside
from beta_dqn.files import open_append
from learner.methods.reading import ReadingMismatch, size_warning
from replay_service.redis_shard import ReplayUnavailable
from replay_service.redis_urls import RedisSetupError

# The training side (torch, the grid's book) is imported once the command line has been read: `--help` and a
# mistyped flag answer in a second, not after torch's import (3-9 s on 2 cores, measured with `python -X
# importtime`).


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
                    try:
                        with open_append(self.log) as f:
                            f.write(line + "\n")
                    except OSError:  # never through a link planted there; a full disk: the line is Ray's noise
                        pass
                else:
                    sys.stderr.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        sys.stderr.flush()

    # what code that asks stdout about itself during a run gets: stderr's answers
    @property
    def encoding(self) -> str:  # type: ignore[override]  # (typeshed: an attribute; read-only on io's streams)
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
    args, named, sections = parse_command(argv)
    if not is_grid(args):
        return None
    if args.get("seeds") and "seed" in named:
        raise ConfigError("seed", f"{args['seed']} with --seeds {args['seeds']}: a grid's seeds are --seeds; give "
                                  "one of them")
    from beta_dqn.launcher.grid import describe_grid, grid_from_args
    from beta_dqn.launcher.grid_runs import grid_interrupted_line

    grid = grid_from_args(args, named, sections)
    try:
        with _quiet_stdout(grid.dir / "ray_warnings.log"):
            summary = grid.run()
    except KeyboardInterrupt as e:
        if not _said(e):
            print(grid_interrupted_line(grid.dir), file=sys.stderr)
        _exit_if_cluster_gone(130)
        return 130
    print(json.dumps(summary, indent=2) if grid.args["json"] else describe_grid(summary, grid.dir))
    return 0 if summary["failed"] == 0 else 1


def _said(e: BaseException) -> bool:
    """Whether the interrupt's line was said already: an Interrupted stands for it, in `e` or behind it (a
    second Ctrl-C on the way out)."""
    return any(isinstance(x, Interrupted) for x in error_chain(e))


def _exit_if_cluster_gone(status: int) -> None:
    """After an interrupt whose signal also ended the local Ray cluster (sent to the process group): leave now.
    Ray's exit handlers would wait a minute for the GCS that is gone, then abort with a page of its own."""
    if local_cluster_gone():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def main(argv: list[str] | None = None) -> int:
    try:
        status = _grid(argv)
        if status is not None:
            return status
        args, named, sections = parse_command(argv)
        config, resume = Config.of(**for_run(args, sections)), None
        if config.pack_seeds > 1:
            raise ConfigError("pack_seeds", f"{config.pack_seeds}: packs the seeds of a grid; give them with "
                                            "--seeds (e.g. --seeds 0-3 --pack-seeds 4)")
        if config.resume:
            from beta_dqn.driver.resume import resume_config

            config, resume = resume_config(argv)
        cfg, spec = resolve(config)
        from beta_dqn.driver.state import check_run_dir, interrupted_line

        check_run_dir(Path(cfg.out), resume is not None, cfg.overwrite)  # (as the run will: before torch's import)
        chose_warm_up = "learning_starts" in named or any("learning_starts" in s.values for s in sections)
        no_update = no_update_error(cfg)
        if resume is None and not chose_warm_up and no_update is not None:
            raise no_update
        for warning in (fit_warning(cfg), size_warning(spec.obs_shape, spec.reading, spec.n_actions)):
            if warning:  # (after the checks: a mistake is one line)
                print(warning, file=sys.stderr)
        from beta_dqn.driver.run import train

        # stdout carries the summary alone: what Ray prints while the run goes on goes to stderr with the
        # progress bar (its warnings about starting many workers at once to a file)
        try:
            with _quiet_stdout(Path(cfg.out) / "ray_warnings.log"):
                summary = train(cfg, spec, resume)
        except KeyboardInterrupt as e:
            if not _said(e):
                print(interrupted_line(Path(cfg.out)), file=sys.stderr)
            _exit_if_cluster_gone(130)
            return 130
    except KeyboardInterrupt:  # before the run started: nothing to continue
        print("python -m learner.main: interrupted before the run started", file=sys.stderr)
        return 130
    except ConfigError as e:
        return user_error(PROG, str(e))
    except RedisSetupError as e:  # e.g. a redis-local server that did not start
        return user_error(PROG, f"--replay: {e}")
    except Exception as e:
        if interrupt_behind(e) is not None:  # an error the interrupt raised where it landed, or on its way out,
            # outside the run's own handling (whose line, if it was said, an Interrupted stands for)
            if not _said(e):
                print("python -m learner.main: interrupted before the run started", file=sys.stderr)
            say_beside(e)
            _exit_if_cluster_gone(130)
            return 130
        if type(e).__name__ in ("ActorDiedError", "RayActorError"):  # restarted MAX_RESTARTS times already
            print(f"python -m learner.main: an actor process kept dying; the run stopped "
                  f"({str(e).strip().splitlines()[0]})", file=sys.stderr)
            return 1
        if isinstance(e, EnvFailed):  # (from a Ray actor: its RayTaskError, whose own text is the traceback)
            print(f"python -m learner.main: {getattr(e, 'cause', None) or e}; the run stopped (its last checkpoint, "
                  "if it wrote one, is kept)", file=sys.stderr)
            return 1
        if not isinstance(e, (NonFiniteLoss, ReplayUnavailable, OutputError, ClusterStartError, ReadingMismatch)):
            raise
        print(f"python -m learner.main: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2) if cfg.json else describe_run(cfg, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
