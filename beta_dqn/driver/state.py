"""The run's own state: its directory (one writer, never a run overwritten by accident), its counters and
schedules (`RunState`), and the checkpoint file that keeps them with the learner's, the arm source's and the
replay's state, so that `--resume` continues where a run stopped."""

from __future__ import annotations

import errno
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from beta_dqn.configuration.compat import RUN_KEYS_BEFORE_RECORD, earlier_temp, entries_before_record
from beta_dqn.configuration.flags import Config, ConfigError, OutputError
from beta_dqn.driver.outputs import RUN_FILES, write_atomically
from beta_dqn.files import RECORD, Held, Written, lock_directory, remove_recorded
from replay_service.backends import REPLAY_BACKENDS, backend_for


def read_checkpoint(path: Path, fail, state: str = "learner") -> tuple[dict, dict]:
    """`path` (a run's checkpoint.pt, or its best.pt with `state="best"`) read as data and checked as every reader
    needs it (`load`, `learner.evaluate` and `--resume`): `torch.load(weights_only=True)` (nothing unpickled), this
    program's format, a configuration whose every field is of its type and valid, counters with the env steps, and
    `state` a table of finite tensors (the learner's; best.pt's networks, with its score a finite number). Returns
    (checkpoint, its configuration with the fields added since filled as it ran); `fail(message)` makes the
    exception raised, one line that names the file."""
    import torch

    from beta_dqn.configuration.checks import validate
    from beta_dqn.configuration.compat import checkpoint_problem, with_legacy
    from beta_dqn.configuration.flags import FIELDS, Config, fits, kinds

    try:
        ckpt = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - whatever the file holds, one line
        raise fail(f"{path} is not a checkpoint this program can read ({type(e).__name__})") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("config"), dict):
        raise fail(f"{path} is not a checkpoint this program can read (it holds no configuration)")
    problem = checkpoint_problem(ckpt)
    if problem:
        raise fail(f"{path} {problem}")
    for key in ("env", "algo"):  # what `with_legacy` and every check below read first
        if not isinstance(ckpt["config"].get(key), str):
            raise fail(f"{path} is damaged: its configuration's {key} is {ckpt['config'].get(key)!r}, not a name")
    saved = with_legacy(dict(ckpt["config"]))
    for key, value in saved.items():
        if key in FIELDS and not fits(key, value):
            allowed = " or ".join(getattr(k, "__name__", str(k)).replace("NoneType", "None") for k in kinds(key))
            raise fail(f"{path} is damaged: its configuration's {key} is {value!r}, not {allowed}")
    try:
        validate(Config.of(**{k: v for k, v in saved.items() if k in FIELDS}))
    except ConfigError as e:
        if e.field == "replay":  # sound, but written with a backend this process has not registered
            raise fail(f"{path} ran with a replay backend not registered here ({e.message}); a plugin's backend "
                       "is registered by naming its module in BETA_DQN_REPLAYS, as where the run was made") from None
        raise fail(f"{path} is damaged: its configuration is not valid ({e})") from None
    except TypeError as e:
        raise fail(f"{path} is damaged: its configuration is not valid ({e})") from None
    counters = ckpt.get("counters")
    steps = counters.get("env_steps") if isinstance(counters, dict) else None
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise fail(f"{path} is damaged: its env_steps counter is {steps!r}, not a whole number ≥ 0"
                   if isinstance(counters, dict) and "env_steps" in counters else
                   f"{path} is damaged: it has no env_steps counter")
    table = ckpt.get(state)
    if not isinstance(table, dict):
        raise fail(f"{path} is damaged: it has no {'networks' if state == BEST_STATE else 'learner state'}")
    best = ckpt.get(BEST_STATE)  # best.pt's; checkpoint.pt's copy of it (a resume writes best.pt from it)
    if best is not None and not (isinstance(best, dict) and isinstance(best.get("networks"), dict)
                                 and isinstance(best.get("env_steps"), int) and isinstance(best.get("score"), float)
                                 and math.isfinite(best["score"])):
        raise fail(f"{path} is damaged: its best evaluation's record is not networks, env steps and a finite score")
    bad = _first_nonfinite(table, state) or (None if best is None or state == BEST_STATE
                                             else _first_nonfinite(best, BEST_STATE))
    if bad is not None:
        raise fail(f"{path} holds non-finite values in {bad}: " + ("a run never keeps such networks as its best: the "
                                                                  "file is damaged" if state == BEST_STATE else
                                                                  "a run stopped at a non-finite loss keeps its last "
                                                                  "good checkpoint, not this one"))
    return ckpt, saved


def _first_nonfinite(state, prefix: str = "learner") -> str | None:
    """The name of the first tensor of `state` (nested dicts and lists) with a NaN or an infinity, or None."""
    import torch

    if isinstance(state, torch.Tensor):
        return prefix if state.is_floating_point() and not bool(torch.isfinite(state).all()) else None
    items = state.items() if isinstance(state, dict) else enumerate(state) if isinstance(state, (list, tuple)) else ()
    for key, value in items:
        found = _first_nonfinite(value, f"{prefix}.{key}")
        if found is not None:
            return found
    return None


# the names a run writes at its directory's top: each must be a file or directory of its own, never a link
# what a run directory may hold: the run's files, and what every replay backend may make there (memory's snapshots
# in replay/, redis-local's servers' files in redis/)
BEST = "best.pt"  # the networks of the run's best evaluation so far (`beta_dqn.driver.checkpoints`)
BEST_STATE = "best"  # what best.pt (and checkpoint.pt, for a resume) hold them under
RUN_ENTRIES = (RUN_FILES + (BEST, "checkpoint-nonfinite.pt", "wandb", "ray_warnings.log", ".lock", RECORD)
               + tuple(entry for backend in REPLAY_BACKENDS.values() for entry in backend.entries))
# the run's files at its top, removed by name for a run with no record (an earlier version's, which wrote no best.pt:
# one there is a user's)
_OWN_FILES = RUN_FILES + ("checkpoint-nonfinite.pt", "ray_warnings.log")


class RunDirectory:
    """The run directory, held by one process (`claim`): checked, locked, its record of what the run writes there
    (`record`, `forget`: `beta_dqn.files.Written`) and let go (`release`).

    The lock is an exclusive lock on `OUT/.lock` for the run's life (the system releases it when the process ends,
    however it ends). The lock file stays: removing it would let a process that opened the old one and one that
    creates a new one both hold "the" lock."""

    def __init__(self, out: Path):
        """Lock `out` (made where it is absent); `claim` is how a run holds one."""
        self.out = out
        self.written: Written | None = None
        try:
            out.mkdir(parents=True, exist_ok=True)
            self.lock = lock_directory(out)
        except Held as e:
            raise ConfigError("out", f"{out} is in use by {e}: one process writes a run directory") from None
        except OSError as e:
            if e.errno == errno.EMLINK:  # a hard link would be written through, too
                links = " (it has other hard links)" if "hard" in (e.strerror or "") else ""
                raise ConfigError("out", f"{out / '.lock'} is not a regular file of its own{links}") from None
            raise ConfigError("out", f"cannot write the run directory {out} ({e.strerror or e})") from None

    @classmethod
    def claim(cls, out: Path, resuming: bool, overwrite: bool) -> RunDirectory:
        """Hold `out` for a run, checked (`check_run_dir`) under the lock; with `overwrite`, the run that was there
        is removed: what it recorded writing (`OUT/.written`), never anything else and never through a link. Its
        record is then open: a resumed run with none (an earlier version's) records that run's files by name.
        (`check_run_dir` refuses a bad `out` before anything is made: the caller runs it first.)"""
        directory = cls(out)
        try:
            held = check_run_dir(out, resuming, overwrite)
            if held and not resuming and overwrite:
                try:
                    remove_run(out)
                except OSError as e:
                    raise OutputError(f"--overwrite: cannot remove {e.filename or out} of the run being replaced "
                                      f"({e.strerror or e}); nothing was started, and that run is partly removed: "
                                      "--overwrite true again once it can be") from None
            directory.written = Written(out)  # what this run creates here: all it may prune or --overwrite remove
            if resuming and directory.written.new:  # a run with no record (an earlier version's): its files by name
                directory.written.add(*entries_before_record(out, _wandb_id(out)))
        except OSError as e:
            directory.discard()
            directory.release()
            raise OutputError.of(out, e) from None
        except BaseException:
            directory.discard()
            directory.release()
            raise
        return directory

    def record(self, *paths: str | Path) -> None:
        """Record that the run creates `paths` here (relative to OUT; a directory with a trailing "/"), before it
        does."""
        assert self.written is not None, "record before claim"
        self.written.add(*paths)

    def forget(self, *paths: str | Path) -> None:
        """Paths the run removed itself (pruned snapshots)."""
        assert self.written is not None, "forget before claim"
        self.written.forget(*paths)

    def discard(self) -> None:
        """A run that could not start takes back the record it began (what it recorded is gone with it)."""
        if self.written is not None:
            self.written.discard()

    def release(self) -> None:
        if not self.lock.closed:
            self.lock.close()  # closing the file releases the lock


def check_run_dir(out: Path, resuming: bool, overwrite: bool) -> list[str]:
    """Whether a run may start in `out` (nothing is written): a new run refuses a directory that already holds
    one unless `overwrite`; a resumed run continues the one there. Returns the run files found."""
    if out.exists() and not out.is_dir():
        raise ConfigError("out", f"{out} exists and is not a directory")
    if not resuming:
        _check_own_directory(out)
    linked = [name for name in RUN_ENTRIES if (out / name).is_symlink()]
    if linked:
        raise ConfigError("out", f"{out / linked[0]} is a symbolic link: a run writes its own files there, never "
                                 "through a link (remove the link, or give another --out)")
    shared = [name for name in RUN_ENTRIES if (out / name).is_file() and (out / name).stat().st_nlink > 1]
    if shared:
        raise ConfigError("out", f"{out / shared[0]} has other hard links: a run writes its own files there, never "
                                 "into another name's file (remove it, or give another --out)")
    held = [name for name in RUN_FILES if (out / name).exists()]
    if held and not resuming and not overwrite:
        if (out / "summary.json").exists():  # named: the file that says what the run is
            named, advice = "summary.json", "it is finished: give another --out, or replace it with --overwrite true"
        elif (out / "checkpoint.pt").exists():
            named, advice = "checkpoint.pt", f"continue it with --resume {out}, or replace it with --overwrite true"
        else:  # nothing to resume from: it stopped before its first checkpoint
            named, advice = held[0], "it has no checkpoint to continue from: replace it with --overwrite true"
        raise ConfigError("out", f"{out} already holds a run ({named}): {advice}")
    if held and not resuming and overwrite and not (out / RECORD).is_file() and not _a_run_of_ours(out):
        raise ConfigError("out", f"{out} holds a config.json that is not a run's of this program (no env, algo, seed "
                                 "and run_id in it): --overwrite removes this program's runs only; give another --out")
    return held


def _a_run_of_ours(out: Path) -> bool:
    """A run directory with no record (`.written`, an earlier version's): its config.json is this program's."""
    try:
        config = json.loads((out / "config.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(config, dict) and all(k in config for k in RUN_KEYS_BEFORE_RECORD)


PROJECT = Path(__file__).resolve().parents[2]  # this checkout: never a run's --out


def _temp_of_an_entry(name: str) -> bool:
    """A temp name a run's whole-file write leaves when killed mid-write: `.<entry>.<random>.tmp` (this version's) or
    an earlier version's (`compat.earlier_temp`)."""
    if not name.endswith(".tmp"):
        return False
    stem = name.removesuffix(".tmp")
    return earlier_temp(name, RUN_ENTRIES) or (stem.startswith(".") and stem[1:].rsplit(".", 1)[0] in RUN_ENTRIES)


def _check_own_directory(out: Path) -> None:
    """A new run's --out is a directory of its own: absent, empty, or holding a run's entries only (a run, or what
    is left of one); never the file system's root or this project's checkout."""
    where = out.resolve()
    if where == Path(where.anchor):
        raise ConfigError("out", f"{out} is the file system's root: give a directory of the run's own")
    if where == PROJECT or PROJECT.is_relative_to(where):
        raise ConfigError("out", f"{out} is this project's checkout{' or above it' if where != PROJECT else ''}: give "
                                 "a directory of the run's own (default runs/<env>_<algo>_s<seed>)")
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in RUN_ENTRIES and not _temp_of_an_entry(p.name))
        if (out / BEST).exists() and BEST not in Written.read(out):  # a best.pt no run of ours recorded: a user's
            other = sorted([*other, BEST])
        if other:
            raise ConfigError("out", f"{out} holds other files ({other[0]!r}{' …' if len(other) > 1 else ''}): a run "
                                     "writes into a directory of its own; give a new or empty one")


def _wandb_id(out: Path) -> str | None:
    """The W&B run id a run's checkpoint names (its W&B directories end in it), or None."""
    import torch  # (lazy: a mistaken --out answers before torch's import, seconds on 2 cores)

    try:
        checkpoint = torch.load(out / "checkpoint.pt", weights_only=True, map_location="cpu")
        found = checkpoint.get("wandb_id") if isinstance(checkpoint, dict) else None
    except Exception:  # noqa: BLE001 - no checkpoint, or one that does not load: no W&B run is removed
        return None
    return found if isinstance(found, str) and found.replace("-", "").isalnum() else None


def remove_run(out: Path) -> None:
    """The files of the run in `out`: those its record names (`beta_dqn.files.Written`), or for a run with
    none (an earlier version's; `check_run_dir` made sure it is this program's), its own names: its top-level files,
    replay snapshots, Redis directories and the W&B runs of the id its checkpoint names; then the record, and
    the subdirectories left empty. A user's other files stay, wherever they are."""
    recorded = Written.read(out)
    # (a run with no record, an earlier version's: `check_run_dir` made sure it is this program's)
    remove_recorded(out, recorded if recorded else entries_before_record(out, _wandb_id(out)))
    remove_recorded(out, list(_OWN_FILES) + [RECORD])  # the run's own names at the top, the record last
    for name in ("replay", "redis", "wandb"):
        path = out / name
        if path.is_dir() and not path.is_symlink() and not any(path.iterdir()):
            path.rmdir()


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
    def new(cls, cfg: Config, spec) -> RunState:
        visits = np.zeros(spec.obs_shape[0], dtype=np.int64) if spec.state_grid else None
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
        return [result for _, result in sorted(self.evals.items()) if result is not None]


def write_checkpoint(out: Path, checkpoint: dict, name: str = "checkpoint.pt") -> None:
    """`out/name`, written atomically (`outputs.write_atomically`): a crash leaves the last good one."""
    import torch  # (lazy: see `_wandb_id`)

    earlier = (out / "checkpoint.pt").is_file()  # what the message may say is left (best.pt's failure too)
    try:  # a full disk: OSError, or torch's RuntimeError ("unexpected pos …")
        write_atomically(out / name, lambda f: torch.save(checkpoint, f), "wb")
    except (OSError, RuntimeError) as e:
        error = OutputError.of(out / name, e)
        raise OutputError(f"{error}; the last checkpoint written is intact" if earlier else
                          f"{error}; no checkpoint was written yet, so there is none to continue from") from None


def interrupted_line(out: Path) -> str:
    """What an interrupted run says on stderr."""
    return f"python -m learner.main: interrupted; {where_to_continue(out)}"


def where_to_continue(out: Path) -> str:
    """What a stopped run leaves: its last checkpoint to continue from, or none (or it had finished)."""
    if (out / "summary.json").is_file():
        return f"it had finished: its outputs are in {out}"
    try:
        config = json.loads((out / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    backend = backend_for(config.get("replay", "")) if isinstance(config, dict) else None
    why = backend.cannot_resume(config) if backend is not None else ""
    if why:
        return f"{why}, so it cannot be continued: start it again with --out {out} --overwrite true"
    if (out / "checkpoint.pt").is_file():
        return f"continue with --resume {out} (from its last checkpoint)"
    return f"it had written no checkpoint yet: start it again with --out {out} --overwrite true"
