"""The run's own state: its directory (one writer, never a run overwritten by accident), its counters and
schedules (`RunState`), and the checkpoint file that keeps them with the learner's, the arm source's and the
replay's state, so that `--resume` continues where a run stopped."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from driver.config import ConfigError, OutputError
from driver.outputs import write_atomically

RUN_FILES = ("config.json", "checkpoint.pt", "metrics.jsonl", "evals.csv", "summary.json")  # a run is here
# what `--overwrite true` removes before a new run starts in a directory that held one
RUN_OUTPUTS = RUN_FILES + ("checkpoint-nonfinite.pt", "replay", "redis", "wandb", "ray_warnings.log")


class RunDirectory:
    """The run directory, held by one process: an exclusive lock on `OUT/.lock` for the run's life (the
    system releases it when the process ends, however it ends). The lock file stays: removing it would let
    a process that opened the old one and one that creates a new one both hold "the" lock."""

    def __init__(self, out: Path):
        self.out = out
        try:
            out.mkdir(parents=True, exist_ok=True)
            # never through a link: a planted `.lock -> somefile` must not be written to
            fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise ConfigError("out", f"cannot write the run directory {out} ({e.strerror or e})") from None
        self.lock = os.fdopen(fd, "r+")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            self.lock.close()
            raise ConfigError("out", f"{out / '.lock'} is not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                # a file system without locks (NFS without lockd): go on, unprotected, and say so
                print(f"warning: {out / '.lock'} cannot be locked ({e.strerror}); nothing stops a second "
                      "process from writing this run directory", file=sys.stderr)
            else:
                holder = self.lock.read().strip() or "another process"
                self.lock.close()
                raise ConfigError("out", f"{out} is in use by {holder}: one process writes a run directory") from None
        self.lock.seek(0)
        self.lock.truncate()
        self.lock.write(f"process {os.getpid()} on {socket.gethostname()}\n")
        self.lock.flush()

    def release(self) -> None:
        if not self.lock.closed:
            self.lock.close()  # closing the file releases the lock


def check_run_dir(out: Path, resuming: bool, overwrite: bool) -> list[str]:
    """Whether a run may start in `out` (nothing is written): a new run refuses a directory that already holds
    one unless `overwrite`; a resumed run continues the one there. Returns the run files found."""
    if out.exists() and not out.is_dir():
        raise ConfigError("out", f"{out} exists and is not a directory")
    held = [name for name in RUN_FILES if (out / name).exists()]
    if held and not resuming and not overwrite:
        if (out / "summary.json").exists():
            advice = "it is finished: give another --out, or replace it with --overwrite true"
        elif (out / "checkpoint.pt").exists():
            advice = f"continue it with --resume {out}, or replace it with --overwrite true"
        else:  # nothing to resume from: it stopped before its first checkpoint
            advice = "it has no checkpoint to continue from: replace it with --overwrite true"
        raise ConfigError("out", f"{out} already holds a run ({held[0]}): {advice}")
    return held


def claim_run_dir(out: Path, resuming: bool, overwrite: bool) -> RunDirectory:
    """Hold `out` for a run (`check_run_dir`, then the lock); with `overwrite`, the run that was there is
    removed: its files only (RUN_OUTPUTS), and only when there is a run (other files are never touched)."""
    check_run_dir(out, resuming, overwrite)
    directory = RunDirectory(out)
    try:
        held = check_run_dir(out, resuming, overwrite)  # again, under the lock
        if held and not resuming and overwrite:
            for name in reversed(RUN_OUTPUTS):  # the big directories first, config.json (the run's mark) last
                path = out / name
                try:
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path)
                    elif path.exists() or path.is_symlink():
                        path.unlink()
                except OSError as e:
                    raise OutputError(f"--overwrite: cannot remove {path} of the run being replaced "
                                      f"({e.strerror or e}); nothing was started, and that run is partly "
                                      "removed: --overwrite true again once it can be") from None
    except OSError as e:
        directory.release()
        raise OutputError.of(out, e) from None
    except BaseException:
        directory.release()
        raise
    return directory


@dataclass
class RunState:
    """What the run counts and schedules; a checkpoint saves it and a resume restores it."""

    generation: int = 0  # resumes so far: a resumed run's actors draw from new rng streams
    env_steps: int = 0  # transitions harvested (inserted and counted)
    episodes: int = 0  # finished training episodes
    arm_episodes: int = 0  # of those, played under an arm (reported to the arm source)
    dispatched: int = 0  # chunks handed out (round-robin position)
    visits: np.ndarray | None = None  # CliffWalk: training env steps per cell (the report's heatmaps)
    evals: dict[int, dict | None] = field(default_factory=dict)  # env step -> result (None while running)
    target_syncs: list[tuple[int, int]] = field(default_factory=list)  # (env step, updates) of each target copy
    next_target: int = 0  # env step of the next target copy
    next_eval: int = 0  # env step of the next evaluation
    wandb_id: str | None = None
    wall_before: float = 0.0  # seconds the run took in earlier sittings, up to the checkpoint it resumed from

    @classmethod
    def new(cls, cfg, spec) -> RunState:
        visits = np.zeros(spec.obs_shape[0], dtype=np.int64) if spec.name == "CliffWalk" else None
        return cls(visits=visits, next_target=cfg.target_update, next_eval=min(cfg.eval_every, cfg.total_steps))

    @classmethod
    def from_checkpoint(cls, ckpt: dict) -> RunState:
        """The state a checkpoint saved, as the next generation."""
        c = ckpt["counters"]
        visits = ckpt.get("visits")
        return cls(generation=int(c.get("generation", 0)) + 1, env_steps=int(c["env_steps"]),
                   episodes=int(c["episodes"]), arm_episodes=int(c["arm_episodes"]), dispatched=int(c["dispatched"]),
                   visits=None if visits is None else np.asarray(visits, dtype=np.int64),
                   evals={int(e["env_steps"]): e for e in ckpt["evals"]},
                   target_syncs=[tuple(t) for t in ckpt["target_syncs"]],
                   next_target=int(ckpt["next"]["target"]), next_eval=int(ckpt["next"]["eval"]),
                   wandb_id=ckpt.get("wandb_id"), wall_before=float(c.get("wall_seconds", 0.0)))

    def to_checkpoint(self, updates: int, wall: float) -> dict:
        """Plain data for checkpoint.pt (`wall`: the run's seconds so far, every sitting); an evaluation
        still running is started again after a resume."""
        running = [k for k, v in self.evals.items() if v is None]
        return {"counters": {"env_steps": self.env_steps, "updates": updates, "episodes": self.episodes,
                             "arm_episodes": self.arm_episodes, "dispatched": self.dispatched,
                             "generation": self.generation, "wall_seconds": wall},
                "visits": None if self.visits is None else self.visits.tolist(),
                "evals": self.finished_evals(),
                "target_syncs": [list(t) for t in self.target_syncs],
                "next": {"target": self.next_target, "eval": min(running + [self.next_eval])},
                "wandb_id": self.wandb_id}

    def finished_evals(self) -> list[dict]:
        return [self.evals[k] for k in sorted(self.evals) if self.evals[k] is not None]


def write_checkpoint(out: Path, checkpoint: dict, name: str = "checkpoint.pt") -> None:
    """`out/name`, written atomically (`outputs.write_atomically`): a crash leaves the last good one."""
    try:  # a full disk: OSError, or torch's RuntimeError ("unexpected pos …")
        write_atomically(out / name, lambda f: torch.save(checkpoint, f), "wb")
    except (OSError, RuntimeError) as e:
        error = OutputError.of(out / name, e)
        raise OutputError(f"{error}; the last checkpoint written is intact") from None
