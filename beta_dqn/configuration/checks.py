"""What a valid configuration is: the values each choice allows and the bounds of seeds (`ALGOS`, `DEVICES`,
`MAX_SEED`, ...), `validate`, which every `Config` runs as it is made, `parse_seeds` (--seeds) and the replay
backend a --replay names (`replay_backend`)."""

from __future__ import annotations

import math
import re

from beta_dqn.configuration.errors import ConfigError
from learner.methods import METHODS
from learner.methods.flags import FlagError
from learner.methods.reading import LAYOUTS, NETWORKS, PIXELS
from replay_service.backends import backend_for, choices, masked
from replay_service.contract import BackendError, ReplayBackend

MAX_SEED = 2**31 - 1  # every generator the run seeds (numpy, torch, Ray's) takes it, offsets included
MAX_GRID_SEEDS = 10_000  # seeds in one grid: more would only queue runs for years
MAX_GRID_RUNS = 10_000  # runs in one grid or search, every axis times the seeds: checked before any is planned
ALGOS = tuple(METHODS)
LOSSES = ("huber", "mse")
DEVICES = ("auto", "cpu", "cuda")
RUNTIMES = ("auto", "ray", "serial")
WANDB_MODES = ("offline", "online", "disabled")


def _positive(cfg, *names: str) -> None:
    for n in names:
        v = getattr(cfg, n)
        if not v > 0:
            raise ConfigError(n, f"must be > 0, got {v}")


def _open_unit(cfg, *names: str) -> None:
    for n in names:
        v = getattr(cfg, n)
        if not 0.0 < v < 1.0:
            raise ConfigError(n, f"must be in (0, 1), got {v}")


def _choice(cfg, name: str, allowed: tuple[str, ...]) -> None:
    v = getattr(cfg, name)
    if v not in allowed:
        raise ConfigError(name, f"{v!r} is not one of: {', '.join(allowed)}")


def replay_backend(value: str) -> ReplayBackend:
    """The backend `--replay value` names (`replay_service.backends`); ConfigError when none takes it."""
    backend = backend_for(value)
    if backend is None:
        raise ConfigError("replay", f"{masked(value)!r} is not a replay service; expected {choices()}")
    return backend


def validate(cfg) -> None:
    """Raise ConfigError on the first invalid field of `cfg` (a `Config`). Environment names are checked in
    `resolve`."""
    for name, v in cfg.flat().items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(name, f"must be finite, got {v}")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:  # past it, JSON readers round
            raise ConfigError(name, f"must be within ±2^53 = {2**53:,}, got {v}")
    _choice(cfg, "algo", ALGOS)
    try:
        replay_backend(cfg.replay).check(cfg)
    except BackendError as e:
        raise ConfigError(e.name, e.message + (f"; expected {choices()}" if e.name == "replay" else "")) from None
    _choice(cfg, "runtime", RUNTIMES)
    _choice(cfg, "device", DEVICES)
    _choice(cfg, "loss", LOSSES)
    _choice(cfg, "obs_layout", LAYOUTS)
    _choice(cfg, "network", NETWORKS)
    _choice(cfg, "pixels", PIXELS)
    if cfg.wandb:
        _choice(cfg, "wandb", WANDB_MODES)
    if cfg.wandb_entity and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", cfg.wandb_entity):
        raise ConfigError("wandb_entity", f"{cfg.wandb_entity!r}: an entity's name is letters, digits, '_', '-' "
                                          "and '.'")
    _positive(cfg, "total_steps", "actors", "learner_cpus", "envs_per_actor", "chunk_steps", "replay_shards",
              "checkpoint_every",
              "learner_threads", "publish_every", "batch_size", "replay_capacity", "replay_ratio",
              "target_update", "eval_every", "eval_episodes", "log_every")
    if cfg.eps_decay_steps is not None:
        _positive(cfg, "eps_decay_steps")
    if not 0.0 < cfg.eps_decay_fraction <= 1.0:
        raise ConfigError("eps_decay_fraction", f"must be in (0, 1], got {cfg.eps_decay_fraction}")
    for flags in (*cfg.methods.values(), *cfg.replays.values()):  # each part checks its own flags
        try:
            flags.check()
        except FlagError as e:
            raise ConfigError(e.name, e.message) from None
    if cfg.value("two_q") and cfg.algo != "beta_dqn":
        raise ConfigError("two_q", f"is a β-DQN ablation; --algo is {cfg.algo}")
    if cfg.gamma is not None:
        _open_unit(cfg, "gamma")
    if cfg.lr is not None:
        _positive(cfg, "lr")
    for n in ("eps_start", "eps_end", "eval_epsilon"):
        if not 0.0 <= getattr(cfg, n) <= 1.0:
            raise ConfigError(n, f"must be in [0, 1], got {getattr(cfg, n)}")
    if not 0 <= cfg.seed <= MAX_SEED:
        raise ConfigError("seed", f"must be in [0, {MAX_SEED}], got {cfg.seed}")
    if cfg.learning_starts < 0:
        raise ConfigError("learning_starts", f"must be >= 0, got {cfg.learning_starts}")
    if cfg.pack_seeds < 1:
        raise ConfigError("pack_seeds", f"must be >= 1, got {cfg.pack_seeds}")
    if cfg.retries < 0:
        raise ConfigError("retries", f"must be >= 0, got {cfg.retries}")
    if cfg.value("take_run_id") and not cfg.overwrite and not cfg.resume:  # (a resumed run keeps what it saved)
        raise ConfigError("take_run_id", "true without --overwrite true: taking another run's --run-id replaces "
                                         "that run's replay, which only --overwrite does")
    if not (cfg.learner_gpus >= 0 or cfg.learner_gpus == -1):
        raise ConfigError("learner_gpus", f"must be >= 0, or -1 for automatic, got {cfg.learner_gpus}")
    if cfg.seeds:
        parse_seeds(cfg.seeds)
    if cfg.actor_cpus < 0:
        raise ConfigError("actor_cpus", f"must be >= 0, got {cfg.actor_cpus}")
    if cfg.replay_capacity < cfg.batch_size:
        raise ConfigError("replay_capacity",
                          f"must be >= --batch-size ({cfg.batch_size}), got {cfg.replay_capacity}")
    if cfg.replay_capacity // cfg.replay_shards < cfg.chunk_steps:
        raise ConfigError("replay_shards", f"{cfg.replay_shards} shards of a {cfg.replay_capacity} replay "
                          f"hold fewer than --chunk-steps ({cfg.chunk_steps}) each")


def parse_seeds(text: str, repeats: bool = False) -> list[int]:
    """"0-9" (inclusive), "0,3,7", "4", or a mix ("0-2,5") -> the seeds, in order; a seed named twice is refused
    (as a value twice in an axis is), or with `repeats` kept once (a resumed grid's saved seeds:
    `beta_dqn.launcher.grid`)."""
    seeds: dict[int, None] = {}  # ordered
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            first, last = int(lo), int(hi) if hi else int(lo)
            if last < first:
                raise ValueError
        except ValueError:
            raise ConfigError("seeds", f"{text!r}; expected seeds like 0-9, 0,3,7 or 0-2,5 (non-negative)") from None
        if last - first + 1 > MAX_GRID_SEEDS:
            raise ConfigError("seeds", f"{text!r} names more than {MAX_GRID_SEEDS:,} seeds")
        twice = next((s for s in range(first, last + 1) if s in seeds), None)
        if twice is not None and not repeats:
            raise ConfigError("seeds", f"{text!r} names seed {twice} twice; give each seed once")
        seeds.update(dict.fromkeys(range(first, last + 1)))
        if len(seeds) > MAX_GRID_SEEDS:
            raise ConfigError("seeds", f"{text!r} names more than {MAX_GRID_SEEDS:,} seeds")
    if any(not 0 <= s <= MAX_SEED for s in seeds):
        raise ConfigError("seeds", f"{text!r}; seeds must be in [0, {MAX_SEED}]")
    return list(seeds)
