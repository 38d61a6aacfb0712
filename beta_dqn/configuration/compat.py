"""What this version reads of what earlier versions wrote, in one place, by what it was written in: a checkpoint
by its format, a grid's grid.json by its format, a run's configuration (config.json, a checkpoint's) and a
report's recorded commands by the flags they name, and a run directory by whether it holds a record of its files.
The readers ask here (`beta_dqn.driver.state`, `beta_dqn.launcher.grid`, `beta_dqn.reporting`,
`beta_dqn.configuration.commands`); when each rule came is in docs/changelog.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from beta_dqn.configuration.fields import reads

# --- checkpoints (checkpoint.pt): `format` -------------------------------------------------------------------
# 2: the learner's target copies and fixed modules as one "frozen" dict, the replay's options in its state.
# Format 1 (no `format` key) is not read: its learner state has another layout, and no run of it is kept.
CHECKPOINT_FORMAT = 2


def checkpoint_problem(checkpoint: dict) -> str:
    """Why this version cannot read a checkpoint (a dict holding a configuration) by its format, or ""."""
    found = checkpoint.get("format", 1)
    if found != CHECKPOINT_FORMAT:
        return (f"has checkpoint format {found!r}, written by another version of this program; this one reads "
                f"format {CHECKPOINT_FORMAT} only")
    return ""


# --- a grid's grid.json: `format` -----------------------------------------------------------------------------
# 2: an axis is a JSON list; 1: --algo and --env lists as comma-separated text. A key grid.json lacks (a flag
# added since) takes LEGACY's value where LEGACY has one, else its default.
GRID_FORMAT = 2


def _grid_1_to_2(args: dict) -> dict:
    return {**args, **{key: [v.strip() for v in args[key].split(",") if v.strip()]
                       for key in ("algo", "env") if isinstance(args.get(key), str) and "," in args[key]}}


GRID_UPGRADES: dict[int, Callable[[dict], dict]] = {1: _grid_1_to_2}  # format N's arguments -> format N + 1's


def grid_args(saved: dict, defaults: dict[str, Any]) -> dict:
    """A grid.json's arguments as this version's (`defaults`: every flag's, by name): upgraded format by format,
    a flag it lacks given LEGACY's value or its default, a name this version has no flag for left out.
    ValueError naming the format where it is none this version reads."""
    found, args = saved.get("format"), dict(saved["args"])
    if found != GRID_FORMAT and found not in GRID_UPGRADES:
        raise ValueError(f"has grid format {found}; this program reads {GRID_FORMAT} and "
                         f"{', '.join(map(str, sorted(GRID_UPGRADES)))}")
    while found != GRID_FORMAT:
        args, found = GRID_UPGRADES[found](args), found + 1
    return {**defaults, **LEGACY, **{k: v for k, v in args.items() if k in defaults}}


# --- a run's configuration and a recorded command: the flags they name --------------------------------------------
# the value of each flag that a saved run's configuration may lack and that a recorded command may leave out
# (such commands name only the values that were not the default when they were written): one bandit call per
# episode, β-DQN's μ from min–max normalised returns, ε decaying over 1M env steps whatever the run's length, and
# Ray for a grid's runs too. run_command and grid_command name these flags whatever their value where the run's
# method reads them, so that a record's command reads as it ran whatever the default becomes.
LEGACY = {"arm_exchange": "episode", "bandit_returns": "minmax", "eps_decay_steps": 1_000_000, "runtime": "ray"}


def read_as_it_ran(saved: dict) -> dict:
    """A saved run's configuration made before --obs-layout, --network and --pixels existed, with the values that
    read its observations as it did: a rank-3 observation channels last, unscaled, by the paper's small conv net
    (the defaults now may read an image otherwise; a flat one is read as it was). A configuration that has them
    is returned as it is."""
    if "network" in saved or not isinstance(saved.get("env"), str):
        return saved
    from actors.envs import env_spec

    if len(env_spec(saved["env"], saved.get("env_kwargs", "")).obs_shape) != 3:
        return saved
    return {**saved, "obs_layout": "hwc", "network": "small", "pixels": "false"}


def with_legacy(config: dict) -> dict:
    """A saved run's configuration with `LEGACY`'s value for each field it lacks that its method reads."""
    return {**{k: v for k, v in LEGACY.items() if reads(config["algo"], k, config)}, **config}


def command_pins(named: dict, algos: list[str], grid: bool) -> dict:
    """The LEGACY flags a recorded command (`named`: the flags it names; `algos`: its methods) leaves out and ran
    with, at LEGACY's values. A grid's command: --bandit-returns and --runtime only, and --eps-decay-steps where it
    names no --eps-decay-fraction (a grid command from before the fraction); its --arm-exchange is not pinned, as a
    grid command that leaves it out may have run at `auto`."""
    pins = {k: v for k, v in LEGACY.items() if not grid or k in ("bandit_returns", "runtime")}
    if grid and "eps_decay_fraction" not in named:
        pins["eps_decay_steps"] = LEGACY["eps_decay_steps"]
    return {k: v for k, v in pins.items() if k not in named and any(reads(a, k, named) for a in algos)}


# --- a run directory: with a record of its files (OUT/.written) or without -----------------------------------------
# what a run directory with no record (an earlier version's) holds of the run, by name: `--overwrite` removes these,
# and a resume that adopts such a run records them
FILES_BEFORE_RECORD = ("config.json", "checkpoint.pt", "metrics.jsonl", "evals.csv", "summary.json",
                       "checkpoint-nonfinite.pt", "ray_warnings.log")
PATTERNS_BEFORE_RECORD = ("replay/shard*-*.npz", "redis/shard*")
RUN_KEYS_BEFORE_RECORD = ("env", "algo", "seed", "run_id")  # what its config.json holds, as this version's does


def entries_before_record(out: Path, wandb_id: str | None) -> list[str]:
    """What a run with no record wrote in `out`, by name: its top-level files, replay snapshots, Redis directories
    and the W&B runs of `wandb_id` (its checkpoint's; relative paths, a directory with a trailing "/"; the names
    that exist)."""
    patterns = PATTERNS_BEFORE_RECORD + ((f"wandb/run-*-{wandb_id}", f"wandb/offline-run-*-{wandb_id}")
                                         if wandb_id else ())
    found = sorted({str(p.relative_to(out)) + ("/" if p.is_dir() and not p.is_symlink() else "")
                    for pattern in patterns for p in out.glob(pattern)})
    return [name for name in FILES_BEFORE_RECORD if os.path.lexists(out / name)] + found


def earlier_temp(name: str, entries: tuple[str, ...]) -> bool:
    """Whether `name` is the temp name an earlier version's whole-file write left when killed mid-write:
    `<entry>.tmp` (this version's are `.<entry>.<random>.tmp`)."""
    return name.endswith(".tmp") and name.removesuffix(".tmp") in entries
