"""One frozen config drives the serial and the Ray runner. Every field is a CLI flag (`--help`).

Defaults are the spec's (METHOD_SPEC.md §1–4); `None` means "the environment's default"
(γ and the learning rate, spec §4), resolved by `resolve`.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from dataclasses import dataclass, field
from pathlib import Path

CHECKPOINT_FORMAT = 2  # 2: the learner's target copies and fixed modules as one "frozen" dict; options in replay
ALGOS = ("beta_dqn", "dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson")
LOSSES = ("huber", "mse")
COUNT_MODES = ("augment", "simple", "off")
DEVICES = ("auto", "cpu", "cuda")
RUNTIMES = ("ray", "serial")
WANDB_MODES = ("offline", "online", "disabled")


class ConfigError(ValueError):
    """A user mistake in the configuration: one line naming the field and what is allowed."""

    def __init__(self, name: str, message: str):
        super().__init__(f"--{name.replace('_', '-')}: {message}")
        self.field = name


@dataclass(frozen=True)
class Config:
    # --- the run ---
    env: str = field(default="MinAtar/Breakout", metadata={"help": "environment name (see README)"})
    algo: str = field(default="beta_dqn", metadata={"help": f"algorithm: {', '.join(ALGOS)}"})
    seed: int = field(default=0, metadata={"help": "seed of everything in the run"})
    total_steps: int = field(default=5_000_000, metadata={"help": "training env steps (all actors)"})
    out: str = field(default="", metadata={
        "help": "run directory (default runs/<env>_<algo>_s<seed>); a grid's directory (default runs/grid-<time>)"})
    seeds: str = field(default="", metadata={
        "help": "a grid over seeds: 0-9, 0,3,7 or 0-2,5 (with comma-separated --algo/--env: every combination)"})
    grid: str = field(default="", metadata={"help": "the grid a run belongs to (set by the grid; a W&B tag)"})
    learner_cpus: float = field(default=1.0, metadata={"help": "grid: CPUs declared for each run's learner"})
    learner_gpus: float = field(default=-1.0, metadata={
        "help": "grid: GPUs declared for each run's learner (-1: a quarter where the cluster has GPUs, else 0)"})
    retries: int = field(default=2, metadata={
        "help": "grid: times a run that crashed is started again (from its checkpoint)"})
    # --- runtime ---
    runtime: str = field(default="ray", metadata={"help": "ray: actors as processes; serial: one process"})
    actors: int = field(default=4, metadata={"help": "actor processes"})
    envs_per_actor: int = field(default=4, metadata={"help": "environments stepped together per actor"})
    actor_cpus: float = field(default=0.0, metadata={
        "help": "CPUs reserved per actor; 0 = share the cluster's CPUs among the actors"})
    chunk_steps: int = field(default=64, metadata={
        "help": "env steps an actor collects per call; transitions travel as one chunk"})
    replay_shards: int = field(default=1, metadata={"help": "replay shards"})
    replay: str = field(default="memory", metadata={
        "help": "replay service: memory (shards as Ray actors), redis-local (the run starts --replay-shards "
                "redis-servers on 127.0.0.1 with a generated password), or redis://[:password@]host:port[/db] "
                "(several comma-separated: one shard each; password also from REDIS_PASSWORD)"})
    replay_timeout: float = field(default=60.0, metadata={
        "help": "seconds a Redis shard may stay unreachable (the run pauses, retrying) before the run stops"})
    replay_persist: bool = field(default=False, metadata={
        "help": "redis-local: keep an append-only file in the run directory"})
    run_id: str = field(default="", metadata={
        "help": "namespace of the run's keys in a shared Redis (default: the run directory's name + a random tag)"})
    address: str = field(default="", metadata={"help": "Ray cluster to join (default: RAY_ADDRESS, else local)"})
    device: str = field(default="auto", metadata={"help": f"learner device: {', '.join(DEVICES)}"})
    learner_threads: int = field(default=1, metadata={"help": "torch CPU threads of the learner"})
    beta_thread: bool = field(default=True, metadata={
        "help": "β-DQN: update β on a second learner thread beside Q (same math, faster with 2+ cores)"})
    cuda_graphs: bool = field(default=True, metadata={
        "help": "GPU learner: capture the whole update as one CUDA graph and replay it per batch"})
    publish_every: int = field(default=10, metadata={"help": "learner updates between weight broadcasts"})
    # --- training loop (spec §4) ---
    batch_size: int = field(default=32, metadata={"help": "minibatch size"})
    replay_capacity: int = field(default=100_000, metadata={"help": "replay capacity (FIFO), all shards"})
    replay_ratio: float = field(default=0.25, metadata={"help": "learner updates per env step inserted"})
    target_update: int = field(default=1000, metadata={"help": "env steps between hard target copies"})
    learning_starts: int = field(default=5000, metadata={"help": "env steps of uniform random acting first"})
    gamma: float | None = field(default=None, metadata={"help": "discount (default: 0.9 CliffWalk, else 0.99)"})
    lr: float | None = field(default=None, metadata={"help": "Adam learning rate (default: per env, spec §4)"})
    loss: str = field(default="huber", metadata={"help": f"TD loss: {', '.join(LOSSES)}"})
    eps_start: float = field(default=1.0, metadata={"help": "DQN ε-greedy start"})
    eps_end: float = field(default=0.01, metadata={"help": "DQN ε-greedy end"})
    eps_decay_steps: int = field(default=1_000_000, metadata={"help": "env steps of linear ε decay"})
    # --- β-DQN (spec §1–3) ---
    beta_eps: float = field(default=0.05, metadata={"help": "ε of the in-sample mask β(a|s) > ε"})
    policy_set: str = field(default="13", metadata={"help": "policy set: 13, 8, 23, cov, cor0, cor1"})
    count_mode: str = field(default="augment", metadata={
        "help": f"episodic counts in π_cov: {', '.join(COUNT_MODES)}"})
    bandit_window: int = field(default=1000, metadata={"help": "meta-controller window L (episodes)"})
    two_q: bool = field(default=False, metadata={
        "help": "β-DQN ablation: learn a second Q with the unconstrained target for π_cor's optimistic term"})
    eval_basic: bool = field(default=True, metadata={
        "help": "β-DQN: at every evaluation also evaluate the basic policies argmin β and argmax Q"})
    # --- baselines (spec §7) ---
    boot_heads: int = field(default=10, metadata={"help": "Bootstrapped DQN: heads K"})
    boot_epsilon: bool = field(default=True, metadata={
        "help": "Bootstrapped DQN: ε-greedy (DQN's schedule) on the episode's head; false: greedy on it"})
    ez_mu: float = field(default=2.0, metadata={"help": "εz-greedy: exponent μ of the Zeta duration (> 1)"})
    rnd_scale: float = field(default=10.0, metadata={
        "help": "RND: intrinsic reward scale in Q's target; LESSON: in the intrinsic Q's"})
    lesson_tau: float = field(default=0.02, metadata={"help": "LESSON: softmax temperature of the option choice"})
    lesson_alpha: float = field(default=0.0, metadata={
        "help": "LESSON: weight of the intrinsic reward in the option values' reward"})
    # --- evaluation (spec §4) ---
    checkpoint_every: int = field(default=100_000, metadata={
        "help": "env steps between checkpoints (and one at the end); the run pauses its actors to write one"})
    resume: str = field(default="", metadata={
        "help": "continue the run in this directory from its checkpoint (other flags must match it)"})
    eval_every: int = field(default=100_000, metadata={"help": "env steps between evaluations"})
    eval_episodes: int = field(default=30, metadata={"help": "episodes per evaluation"})
    eval_epsilon: float = field(default=0.01, metadata={"help": "ε of the evaluation policy"})
    # --- outputs ---
    wandb: str = field(default="", metadata={
        "help": f"W&B mode: {', '.join(WANDB_MODES)} (default: WANDB_MODE, else offline)"})
    wandb_project: str = field(default="beta-dqn", metadata={"help": "W&B project"})
    log_every: float = field(default=10.0, metadata={"help": "seconds between metric lines"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def __post_init__(self):
        validate(self)


def _positive(cfg: Config, *names: str) -> None:
    for n in names:
        v = getattr(cfg, n)
        if not v > 0:
            raise ConfigError(n, f"must be > 0, got {v}")


def _open_unit(cfg: Config, *names: str) -> None:
    for n in names:
        v = getattr(cfg, n)
        if not 0.0 < v < 1.0:
            raise ConfigError(n, f"must be in (0, 1), got {v}")


def _choice(cfg: Config, name: str, allowed: tuple[str, ...]) -> None:
    v = getattr(cfg, name)
    if v not in allowed:
        raise ConfigError(name, f"{v!r} is not one of: {', '.join(allowed)}")


def public(cfg: Config) -> dict:
    """The configuration as written to config.json, checkpoints and W&B: Redis passwords left out."""
    from replay_service.local_redis import redact

    out = dataclasses.asdict(cfg)
    if cfg.replay not in ("memory", "redis-local"):
        out["replay"] = ",".join(redact(u.strip()) for u in cfg.replay.split(","))
    return out


def validate(cfg: Config) -> None:
    """Raise ConfigError on the first invalid field. Environment names are checked in `resolve`."""
    from actors.policies import POLICY_SETS

    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f.name, f"must be finite, got {v}")
    _choice(cfg, "algo", ALGOS)
    if cfg.replay not in ("memory", "redis-local"):
        from replay_service.local_redis import RedisSetupError, parse_urls

        try:
            urls = parse_urls(cfg.replay)
        except RedisSetupError as e:
            raise ConfigError("replay", f"{e}; expected memory, redis-local or redis:// URLs") from None
        if cfg.replay_shards not in (1, len(urls)):
            raise ConfigError("replay_shards", f"{cfg.replay_shards}, but --replay names {len(urls)} servers "
                                               "(one shard per URL)")
    _choice(cfg, "runtime", RUNTIMES)
    _choice(cfg, "device", DEVICES)
    _choice(cfg, "loss", LOSSES)
    _choice(cfg, "count_mode", COUNT_MODES)
    _choice(cfg, "policy_set", tuple(POLICY_SETS))
    if cfg.wandb:
        _choice(cfg, "wandb", WANDB_MODES)
    _positive(cfg, "total_steps", "actors", "learner_cpus", "envs_per_actor", "chunk_steps", "replay_shards",
              "checkpoint_every", "replay_timeout",
              "learner_threads", "publish_every", "batch_size", "replay_capacity", "replay_ratio",
              "target_update", "eps_decay_steps", "bandit_window", "eval_every", "eval_episodes",
              "log_every")
    _open_unit(cfg, "beta_eps")
    _positive(cfg, "boot_heads", "lesson_tau")
    if not cfg.ez_mu > 1.0:
        raise ConfigError("ez_mu", f"must be > 1 (a Zeta distribution), got {cfg.ez_mu}")
    for n in ("rnd_scale", "lesson_alpha"):
        if getattr(cfg, n) < 0:
            raise ConfigError(n, f"must be >= 0, got {getattr(cfg, n)}")
    if cfg.two_q and cfg.algo != "beta_dqn":
        raise ConfigError("two_q", f"is a β-DQN ablation; --algo is {cfg.algo}")
    if cfg.gamma is not None:
        _open_unit(cfg, "gamma")
    if cfg.lr is not None:
        _positive(cfg, "lr")
    for n in ("eps_start", "eps_end", "eval_epsilon"):
        if not 0.0 <= getattr(cfg, n) <= 1.0:
            raise ConfigError(n, f"must be in [0, 1], got {getattr(cfg, n)}")
    if cfg.seed < 0:
        raise ConfigError("seed", f"must be >= 0, got {cfg.seed}")
    if cfg.learning_starts < 0:
        raise ConfigError("learning_starts", f"must be >= 0, got {cfg.learning_starts}")
    if cfg.retries < 0:
        raise ConfigError("retries", f"must be >= 0, got {cfg.retries}")
    if not (cfg.learner_gpus >= 0 or cfg.learner_gpus == -1):
        raise ConfigError("learner_gpus", f"must be >= 0, or -1 for automatic, got {cfg.learner_gpus}")
    if cfg.seeds:
        from learner.grid import parse_seeds

        parse_seeds(cfg.seeds)
    if cfg.actor_cpus < 0:
        raise ConfigError("actor_cpus", f"must be >= 0, got {cfg.actor_cpus}")
    if cfg.replay_capacity < cfg.batch_size:
        raise ConfigError("replay_capacity",
                          f"must be >= --batch-size ({cfg.batch_size}), got {cfg.replay_capacity}")
    if cfg.replay_capacity // cfg.replay_shards < cfg.chunk_steps:
        raise ConfigError("replay_shards", f"{cfg.replay_shards} shards of a {cfg.replay_capacity} replay "
                          f"hold fewer than --chunk-steps ({cfg.chunk_steps}) each")


def resolve(cfg: Config) -> tuple[Config, object]:
    """Fill environment defaults (γ, lr, out) and return (config, EnvSpec); unknown env -> ConfigError."""
    from actors.envs import UnknownEnvError, canonical_name, env_spec

    if cfg.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("device", "cuda: no CUDA device is available here; use auto or cpu")
    try:
        spec = env_spec(cfg.env)
    except UnknownEnvError as e:
        raise ConfigError("env", str(e)) from None
    out = cfg.out or f"runs/{canonical_name(cfg.env).replace('/', '-')}_{cfg.algo}_s{cfg.seed}"
    shards = cfg.replay_shards
    if cfg.replay != "memory":
        from replay_service.local_redis import RedisSetupError, parse_urls, ping, redis_server_binary, with_password

        try:
            if cfg.replay == "redis-local":
                redis_server_binary()
            else:
                urls = [with_password(u) for u in parse_urls(cfg.replay)]
                for url in urls:
                    ping(url)
                shards = len(urls)
        except RedisSetupError as e:
            raise ConfigError("replay", str(e)) from None
    run_id = cfg.run_id or f"{Path(out).name}-{secrets.token_hex(4)}"
    cfg = dataclasses.replace(
        cfg, env=spec.name, out=out, replay_shards=shards, run_id=run_id,
        gamma=spec.gamma if cfg.gamma is None else cfg.gamma,
        lr=spec.learning_rate if cfg.lr is None else cfg.lr)
    return cfg, spec
