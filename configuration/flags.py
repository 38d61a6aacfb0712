"""One frozen config drives the serial and the Ray runner. Every field is a CLI flag (`--help`).

Defaults are the spec's (METHOD_SPEC.md §1–4) but `bandit_returns` (raw: the preregistered study in
results/bandit-returns/ decided); `None` means "the environment's default"
(γ and the learning rate, spec §4), resolved by `resolve`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
import secrets
import shlex
import typing
from dataclasses import dataclass, field
from pathlib import Path

from actors.envs import UnknownEnvError, canonical_kwargs, canonical_name, env_spec
from configuration.defaults import env_defaults
from filesystem.safe import write_error
from methods import METHODS
from methods.contracts import MethodSettings
from methods.dqn.acting import EpsilonGreedy
from methods.exploration import linear_epsilon
from methods.flags import FlagError
from methods.flags import values as flag_values
from replay_service.backends import backend_for, choices, masked
from replay_service.contract import BackendError

MAX_SEED = 2**31 - 1  # every generator the run seeds (numpy, torch, Ray's) takes it, offsets included
MAX_GRID_SEEDS = 10_000  # seeds in one grid: more would only queue runs for years
ALGOS = tuple(METHODS)
LOSSES = ("huber", "mse")
ARM_EXCHANGES = ("auto", "episode", "chunk")
# what runs made before a field existed did: read in place of its default where a saved run lacks it
# (and where a recorded command leaves a flag out: such commands name only the values that were not the default
# when they were written): one bandit call per episode; β-DQN's μ from min–max normalised returns, the default
# until 2026-11-29 (raw since). Commands written since name these flags whatever their value where the run's
# method reads them (run_command, grid_command), so that a record's command reads as it ran whatever the
# default becomes (an older record's: reporting.records.pinned_command)
# until 2026-12-01, ε decayed over 1M env steps whatever the run's length (now 20% of the run: spec §4).
# Until 2026-12-01 --runtime's default was ray, for a grid's runs too (now auto: a grid's runs are serial).
LEGACY = {"arm_exchange": "episode", "bandit_returns": "minmax", "eps_decay_steps": 1_000_000, "runtime": "ray"}
DEVICES = ("auto", "cpu", "cuda")
RUNTIMES = ("auto", "ray", "serial")
WANDB_MODES = ("offline", "online", "disabled")


class ConfigError(ValueError):
    """A user mistake in the configuration: one line naming the field and what is allowed."""

    def __init__(self, name: str, message: str):
        super().__init__(f"--{name.replace('_', '-')}: {message}")
        self.field, self.message = name, message

    def __reduce__(self):  # rebuilt from its two arguments where it crosses a process (a grid's run on Ray)
        return type(self), (self.field, self.message)


class OutputError(RuntimeError):
    """A run's output could not be written (a full disk, a directory made read-only): one line naming the file
    and the cause (`filesystem.safe.write_error`)."""

    @classmethod
    def of(cls, path: Path, e: BaseException) -> OutputError:
        return cls(write_error(path, e))


# Every field declares its role, and the rest of the program reads it from here:
#   "computes" (the default): changes what a run computes; a grid axis when given as a comma list;
#   "bookkeeping": names and directories of a run or a grid (never compared between runs);
#   "run": where and how a run or a grid executes and reports (cluster, device, resources, logging);
#   "secret": may hold a password (Redis URLs): masked wherever the configuration is written.
# `algos` names the methods that read a field (all of them when absent): a grid gives the others the
# default, and the report compares such a field only between runs of a method that reads it.
# `resume` names what may be given a new value when continued with --resume: a "run", a "grid", or both.
# the methods that act on DQN's ε-greedy schedule (spec §4): the ε-greedy family, and a method whose acting
# names the flag of its own that turns ε on (`epsilon_gate`: β-DQN's --beta-epsilon); such a method reads the
# schedule only while that flag is on (`reads` with a configuration)
EPSILON_ALGOS = tuple(name for name, method in METHODS.items()
                      if issubclass(method.acting, EpsilonGreedy) or getattr(method.acting, "epsilon_gate", None))
EPSILON_FIELDS = ("eps_start", "eps_end", "eps_decay_steps", "eps_decay_fraction")


def _opt(default, help: str, role: str = "computes", algos: tuple[str, ...] = ALGOS, resume: tuple[str, ...] = ()):
    return field(default=default, metadata={"help": help, "role": role, "algos": algos, "resume": resume})


def _run(default, help: str, resume: tuple[str, ...] = ()):
    return _opt(default, help, role="run", resume=resume)


def _book(default, help: str):
    return _opt(default, help, role="bookkeeping")


BOTH = ("run", "grid")  # may change when a run or a grid is resumed


def _beta(default, help: str):
    return _opt(default, help, algos=("beta_dqn",))


@dataclass(frozen=True)
class CoreConfig:
    """The flags every method shares; `Config` adds each method's own (`methods.flags`)."""

    # --- the run ---
    env: str = _opt("MinAtar/Breakout", "environment name (docs/running.md lists them), or module:Id for a Gymnasium "
                                        "id that your module registers when imported")
    env_kwargs: str = _opt("", "a JSON object of keyword arguments for the env's constructor (Gymnasium ids, "
                               "module:Id and the MiniGrid tasks), e.g. '{\"size\": 8}'")
    algo: str = _opt("beta_dqn", f"algorithm: {', '.join(ALGOS)}")
    seed: int = _opt(0, "seed of everything in the run (a grid: --seeds)")
    total_steps: int = _opt(5_000_000, "training env steps (all actors)")
    out: str = _book("", "run directory (default runs/<env>_<algo>_s<seed>); a grid's directory "
                        "(default runs/grid-<time>)")
    seeds: str = _book("", "a grid over seeds: 0-9, 0,3,7 or 0-2,5 (with comma lists of other flags: every "
                           "combination)")
    config: str = _book("", "a TOML (.toml) or YAML (.yaml, .yml) file of flags: its top level for every run, "
                            "[algos.METHOD], [envs.ENV] and [envs.ENV.algos.METHOD] sections for the runs they "
                            "name; the command line wins (docs/running.md#a-configuration-file)")
    grid: str = _book("", "the grid a run belongs to (set by the grid; a W&B tag)")
    variant: str = _book("", "the run's values of the grid's axes besides --env, --algo and the seed, e.g. "
                             "bandit-returns=raw (set by the grid; names the run's column in the report)")
    learner_cpus: float = _run(1.0, "grid: CPUs declared for each run's learner (a serial run: for the whole run)")
    learner_gpus: float = _run(-1.0, "grid: GPUs declared for each run's learner (-1: a quarter where the "
                                      "cluster has GPUs, else 0)")
    retries: int = _run(2, "grid: times a run that crashed is started again (from its checkpoint)",
                        resume=("grid",))
    pack_seeds: int = _run(1, "grid: seeds of one configuration trained together by one learner process, in "
                              "lockstep (their networks stacked, one vectorised update; each seed keeps its "
                              "actors, replay, bandit and run directory); 1: a learner per seed",
                           resume=("grid",))
    # --- runtime ---
    runtime: str = _opt("auto", "ray: actors as processes; serial: one process, deterministic for a seed "
                                "(--actors 1 --envs-per-actor 1: episodes in sequence, as the paper's Algorithm 1); "
                                "auto: ray for one run, serial for each run of a grid (one process a core, β's "
                                "update on the learner's thread: bench/grid.py)")
    actors: int = _opt(4, "actor processes")
    envs_per_actor: int = _opt(4, "environments stepped together per actor")
    actor_cpus: float = _run(0.0, "CPUs reserved per actor; 0 = share the cluster's CPUs among the actors")
    chunk_steps: int = _opt(64, "env steps an actor collects per call; transitions travel as one chunk")
    arm_exchange: str = _beta("auto", "how actors reach the bandit: episode (one call per finished episode: "
                                      "it reports the episode and brings its env's next arm), chunk (one call "
                                      "per chunk: its finished episodes, and the arms of the actor's next "
                                      "episodes, chosen ahead), auto (episode on --runtime serial, chunk on "
                                      "Ray)")
    replay_shards: int = _opt(1, "replay shards")
    replay: str = _opt("memory", "replay service: memory (shards as Ray actors), redis-local (the run starts "
                                 "--replay-shards redis-servers with a generated password, on 127.0.0.1, or on "
                                 "its node's cluster address when it joined a cluster), or "
                                 "redis://[:password@]host:port[/db] (several comma-separated: one shard each; "
                                 "password best from --replay-password-file or REDIS_PASSWORD: a command line is "
                                 "visible to every user of the machine)", role="secret", resume=BOTH)
    replay_password_file: str = _run("", "a file whose first line is the Redis password (for URLs that name "
                                         "none; instead of REDIS_PASSWORD)", resume=BOTH)
    replay_timeout: float = _run(60.0, "seconds a Redis shard may stay unreachable (the run pauses, retrying) "
                                       "before the run stops")
    replay_persist: bool = _run(False, "redis-local: keep an append-only file in the run directory")
    run_id: str = _book("", "namespace of the run's keys in a shared Redis (default: the run directory's name + "
                           "a random tag)")
    address: str = _run("", "Ray cluster to join (default: RAY_ADDRESS, else local)", resume=BOTH)
    device: str = _run("auto", f"learner device: {', '.join(DEVICES)}", resume=("run",))
    learner_threads: int = _run(1, "torch CPU threads of the learner")
    beta_thread: bool = _run(True, "β-DQN: update β on a second learner thread beside Q (same math, faster with "
                                   "2+ cores)")
    cuda_graphs: bool = _run(True, "GPU learner: capture the whole update as one CUDA graph and replay it per batch")
    publish_every: int = _opt(10, "learner updates between weight broadcasts")
    # --- training loop (spec §4) ---
    batch_size: int = _opt(32, "minibatch size")
    replay_capacity: int = _opt(100_000, "replay capacity (FIFO), all shards")
    replay_ratio: float = _opt(0.25, "learner updates per env step inserted")
    target_update: int = _opt(1000, "env steps between hard target copies")
    learning_starts: int = _opt(5000, "env steps of uniform random acting first")
    gamma: float | None = _opt(None, "discount (default: the env's, configuration/defaults.toml: 0.9 CliffWalk, "
                                     "else 0.99)")
    lr: float | None = _opt(None, "Adam learning rate (default: the env's, configuration/defaults.toml, spec §4)")
    loss: str = _opt("huber", f"TD loss: {', '.join(LOSSES)}")
    eps_start: float = _opt(1.0, "DQN-family ε-greedy start", algos=EPSILON_ALGOS)
    eps_end: float = _opt(0.01, "DQN-family ε-greedy end", algos=EPSILON_ALGOS)
    eps_decay_steps: int | None = _opt(None, "env steps of the linear ε decay (default: 20%% of the run, "
                                             "--eps-decay-fraction × --total-steps)", algos=EPSILON_ALGOS)
    eps_decay_fraction: float = _opt(0.2, "the share of --total-steps over which ε decays where --eps-decay-steps "
                                          "is not given (the paper's 1M of 5M, spec §4)", algos=EPSILON_ALGOS)
    # --- evaluation (spec §4) ---
    checkpoint_every: int = _run(100_000, "env steps between checkpoints (and one at the end); the run pauses "
                                          "its actors to write one")
    overwrite: bool = _run(False, "start a new run in an --out that holds one, removing that run's outputs "
                                  "(default: refuse, naming --resume)")
    take_run_id: bool = _run(False, "with --overwrite on a shared Redis: take a --run-id whose replay another run "
                                    "directory claimed (that run can then no longer resume)")
    resume: str = _book("", "continue the run in this directory from its checkpoint (other flags must match it)")
    eval_every: int = _opt(100_000, "env steps between evaluations")
    eval_episodes: int = _opt(30, "episodes per evaluation")
    eval_epsilon: float = _opt(0.01, "ε of the evaluation policy")
    # --- outputs ---
    wandb: str = _run("", f"W&B mode: {', '.join(WANDB_MODES)} (default: WANDB_MODE, else offline)", resume=BOTH)
    wandb_project: str = _run("beta-dqn", "W&B project")
    log_every: float = _run(10.0, "seconds between metric lines", resume=("run",))
    progress: bool = _run(True, "show a progress bar", resume=BOTH)
    json: bool = _run(False, "print the summary as JSON on stdout (for scripts); default: a few lines for people",
                      resume=BOTH)

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


def public(values: Config | dict) -> dict:
    """A configuration as written to config.json, checkpoints, grid.json and W&B: every field whose role is
    "secret" masked (Redis URLs: their passwords)."""
    out = dataclasses.asdict(values) if isinstance(values, Config) else dict(values)
    return {k: masked(v) if k in SECRETS and isinstance(v, str) else v for k, v in out.items()}


def restore_password(replay: str, what: str, password_file: str = "") -> str:
    """A saved --replay with what its backend masked (a Redis URL's password, ***) given back from off the
    command line (--replay-password-file, else REDIS_PASSWORD), for resuming `what` (a run or a grid); one line
    saying what to provide when none is given."""
    try:
        return replay_backend(replay).unmask(replay, password_file, what)
    except BackendError as e:
        raise ConfigError(e.name, e.message) from None


def replay_backend(value: str):
    """The backend `--replay value` names (`replay_service.backends`); ConfigError when none takes it."""
    backend = backend_for(value)
    if backend is None:
        raise ConfigError("replay", f"{masked(value)!r} is not a replay service; expected {choices()}")
    return backend


METHOD_CORE = ("algo", "loss")  # what every method reads of the core fields (besides the flags that name it)


def epsilon_decay_steps(cfg) -> int:
    """The env steps over which the run's ε decays (spec §4): --eps-decay-steps where given, else
    --eps-decay-fraction of --total-steps (at least 1)."""
    if cfg.eps_decay_steps is not None:
        return cfg.eps_decay_steps
    return max(1, round(cfg.eps_decay_fraction * cfg.total_steps))


def epsilon_plan(cfg) -> dict | None:
    """The ε schedule the run acts by ({"start", "end", "decay_steps", "decay_share"}: the share of the run's
    env steps), or None where its method acts on none (β-DQN without --beta-epsilon): a run's summary."""
    if not (cfg.algo in EPSILON_ALGOS and reads(cfg.algo, "eps_decay_steps", cfg)):
        return None
    steps = epsilon_decay_steps(cfg)
    return {"start": cfg.eps_start, "end": cfg.eps_end, "decay_steps": steps, "decay_share": steps / cfg.total_steps}


def epsilon_schedule(cfg) -> str | None:
    """`epsilon_plan` in words: "ε 1 → 0.01 over 100,000 env steps (20% of the run), then held"."""
    plan = epsilon_plan(cfg)
    if plan is None:
        return None
    return (f"ε {plan['start']:g} → {plan['end']:g} over {plan['decay_steps']:,} env steps "
            f"({100 * plan['decay_share']:.3g}% of the run), then held")


def fit_warning(cfg) -> str | None:
    """One line naming what of the run's schedule does not fit inside its --total-steps (the warm-up, the ε
    decay, the evaluation period), or None where all fit."""
    problems = []
    if cfg.learning_starts >= cfg.total_steps:
        problems.append(f"--learning-starts {cfg.learning_starts:,} is not below --total-steps {cfg.total_steps:,}: "
                        "the run acts at random throughout and makes no update")
    plan = epsilon_plan(cfg)
    if plan is not None and plan["decay_steps"] > cfg.total_steps:
        ends = linear_epsilon(cfg.total_steps, plan["start"], plan["end"], plan["decay_steps"])
        problems.append(f"ε decays over {plan['decay_steps']:,} env steps, longer than the run: it ends at "
                        f"ε = {ends:.3g}, not --eps-end {plan['end']:g}")
    if cfg.eval_every > cfg.total_steps:
        problems.append(f"--eval-every {cfg.eval_every:,} is longer than the run: it is evaluated once, at its end")
    if reads(cfg.algo, "bandit_window") and cfg.bandit_window > cfg.total_steps:  # an episode is a step at least
        problems.append(f"--bandit-window {cfg.bandit_window:,} episodes is more than the run can have (at most "
                        f"{cfg.total_steps:,}, one a step): the meta-controller's window never fills")
    if cfg.actors * cfg.chunk_steps > cfg.total_steps:
        problems.append(f"--actors {cfg.actors:,} × --chunk-steps {cfg.chunk_steps:,} is more env steps than "
                        f"--total-steps {cfg.total_steps:,}: some actors never collect a chunk")
    return "warning: " + "; ".join(problems) if problems else None


def no_update_error(cfg) -> ConfigError | None:
    """A run whose warm-up takes its whole budget makes no update: an error naming both, unless the user named
    --learning-starts (a run of random acting, on purpose); None where the run learns."""
    if cfg.learning_starts < cfg.total_steps:
        return None
    return ConfigError("learning_starts", f"{cfg.learning_starts:,} (the default for {cfg.env}) is not below "
                                          f"--total-steps {cfg.total_steps:,}: the run would act at random "
                                          "throughout and make no update; give a longer --total-steps or a shorter "
                                          "--learning-starts (naming --learning-starts runs it as asked)")


def method_settings(cfg) -> MethodSettings:
    """What the run's method reads (`methods.contracts.MethodSettings`): `METHOD_CORE`, and the flags whose
    roles name the method (its own, and the ε schedule of the ε-greedy family, its decay in env steps)."""
    values = {name: getattr(cfg, name) for name, f in FIELDS.items() if name in METHOD_CORE
              or (f.metadata["algos"] != ALGOS and reads(cfg.algo, name))}
    if "eps_decay_steps" in values:
        values["eps_decay_steps"] = epsilon_decay_steps(cfg)
    return MethodSettings(**values)


def settings(cls, cfg):
    """The settings a process reads (`cls`, a dataclass: `actors.actor.ActorSettings`, ...), from the run's
    configuration; a field named `method` holds `method_settings(cfg)`."""
    return cls(**{f.name: method_settings(cfg) if f.name == "method" else getattr(cfg, f.name)
                  for f in dataclasses.fields(cls)})


def run_name(env: str, algo: str, seed: int, variant: str = "") -> str:
    """A run directory's name: `<env>_<algo>[_<variant>]_s<seed>`, e.g. CliffWalk_beta_dqn_bandit-returns=raw_s3."""
    # a directory name has 255 bytes at most
    middle = shorten(f"_{variant.replace(',', '_').replace('/', '-')}", 160) if variant else ""
    return f"{canonical_name(env).replace('/', '-').replace(':', '-')}_{algo}{middle}_s{seed}"


def run_seed(name: str) -> int | None:
    """The seed `run_name` wrote into a run directory's name; None where the name does not say."""
    match = re.search(r"_s(\d+)$", name)
    return int(match.group(1)) if match else None


def validate(cfg: Config) -> None:
    """Raise ConfigError on the first invalid field. Environment names are checked in `resolve`."""
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f.name, f"must be finite, got {v}")
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**53:  # past it, JSON readers round
            raise ConfigError(f.name, f"must be within ±2^53 = {2**53:,}, got {v}")
    _choice(cfg, "algo", ALGOS)
    try:
        replay_backend(cfg.replay).check(cfg)
    except BackendError as e:
        raise ConfigError(e.name, e.message + (f"; expected {choices()}" if e.name == "replay" else "")) from None
    _choice(cfg, "runtime", RUNTIMES)
    _choice(cfg, "device", DEVICES)
    _choice(cfg, "loss", LOSSES)
    _choice(cfg, "arm_exchange", ARM_EXCHANGES)
    if cfg.wandb:
        _choice(cfg, "wandb", WANDB_MODES)
    _positive(cfg, "total_steps", "actors", "learner_cpus", "envs_per_actor", "chunk_steps", "replay_shards",
              "checkpoint_every", "replay_timeout",
              "learner_threads", "publish_every", "batch_size", "replay_capacity", "replay_ratio",
              "target_update", "eval_every", "eval_episodes", "log_every")
    if cfg.eps_decay_steps is not None:
        _positive(cfg, "eps_decay_steps")
    if not 0.0 < cfg.eps_decay_fraction <= 1.0:
        raise ConfigError("eps_decay_fraction", f"must be in (0, 1], got {cfg.eps_decay_fraction}")
    for method in METHODS.values():  # each method checks its own flags
        try:
            if method.flags is not None:
                flag_values(method.flags, cfg).check()
        except FlagError as e:
            raise ConfigError(e.name, e.message) from None
    if cfg.two_q and cfg.algo != "beta_dqn":
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
    if cfg.take_run_id and not cfg.overwrite and not cfg.resume:  # (a run saved before this rule resumes)
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
    (as a value twice in an axis is), or with `repeats` kept once (a grid written before that rule)."""
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


def settled_runtime(runtime: str, in_grid: bool, joins_cluster: bool = False) -> str:
    """`--runtime auto`: Ray for one run (its actors in processes of their own), and for a grid that joins a cluster
    (--address or RAY_ADDRESS: its runs' actors spread over the nodes); serial for a run of a grid on this machine
    (the grid places one such process a core: on 2 cores, 2.3× the env steps per second of Ray runs placed one at
    a time for DQN; `bench/grid.py`, docs/benchmarks.md)."""
    if runtime != "auto":
        return runtime
    return "serial" if in_grid and not joins_cluster else "ray"


def settled_arm_exchange(algo: str, runtime: str, value: str) -> str:
    """`--arm-exchange auto` for β-DQN: a call per episode on the serial runtime (it costs nothing in one
    process), per chunk on Ray."""
    if value == "auto" and algo == "beta_dqn":
        return "episode" if runtime == "serial" else "chunk"
    return value


def with_legacy(config: dict) -> dict:
    """A saved run's configuration with the fields it predates as such runs had them (`LEGACY`, for the
    methods that read them)."""
    return {**{k: v for k, v in LEGACY.items() if reads(config["algo"], k, config)}, **config}


def resolve(cfg: Config) -> tuple[Config, object]:
    """Fill environment defaults (γ, lr, out) and return (config, EnvSpec); unknown env -> ConfigError."""
    try:
        kwargs = canonical_kwargs(cfg.env_kwargs)
    except UnknownEnvError as e:
        raise ConfigError("env_kwargs", str(e)) from None
    try:
        spec = env_spec(cfg.env, kwargs)
    except UnknownEnvError as e:
        raise ConfigError("env", str(e)) from None
    out = cfg.out or f"runs/{run_name(cfg.env, cfg.algo, cfg.seed)}"
    run_id = cfg.run_id or f"{Path(out).name}-{secrets.token_hex(4)}"
    # a password file's absolute path: a resume from another working directory finds it
    password_file = str(Path(cfg.replay_password_file).expanduser().resolve()) if cfg.replay_password_file else ""
    runtime = settled_runtime(cfg.runtime, bool(cfg.grid), bool(cfg.address or os.environ.get("RAY_ADDRESS")))
    gamma, lr = env_defaults(spec.name)
    cfg = dataclasses.replace(
        cfg, env=spec.name, env_kwargs=kwargs, out=out, runtime=runtime, run_id=run_id,
        replay_password_file=password_file,
        arm_exchange=settled_arm_exchange(cfg.algo, runtime, cfg.arm_exchange),
        gamma=gamma if cfg.gamma is None else cfg.gamma, lr=lr if cfg.lr is None else cfg.lr,
        eps_decay_steps=epsilon_decay_steps(cfg), **replay_backend(cfg.replay).settle(cfg))
    return cfg, spec


def _method_fields() -> list[tuple[str, type, dataclasses.Field]]:
    """Every registered method's own flags (`<method>/flags.py`) as fields of Config, each read by the method
    that declares it and by those its `also` names."""
    taken = {f.name for f in dataclasses.fields(CoreConfig)}
    gathered = []
    for name, method in METHODS.items():
        if method.flags is None:
            continue
        hints = typing.get_type_hints(method.flags)
        for f in dataclasses.fields(method.flags):
            if f.name in taken:
                raise ValueError(f"method {name!r} declares a flag {f.name!r} that another already has")
            taken.add(f.name)
            gathered.append((f.name, hints[f.name], _opt(f.default, f.metadata["help"],
                                                         algos=(name, *f.metadata["also"]))))
    return gathered


def _gathered() -> list[tuple[str, type, dataclasses.Field]]:
    """CoreConfig's fields with the methods' own before its evaluation block, where they always stood: a grid's
    variants and run names follow this order, so a grid made before keeps its runs' names."""
    hints = typing.get_type_hints(CoreConfig)
    core = [(f.name, hints[f.name], field(default=f.default, metadata=f.metadata))
            for f in dataclasses.fields(CoreConfig)]
    at = next(i for i, (name, _, _) in enumerate(core) if name == METHOD_FLAGS_BEFORE)
    return core[:at] + _method_fields() + core[at:]


METHOD_FLAGS_BEFORE = "checkpoint_every"  # the first field of CoreConfig's evaluation block
# The one configuration: the shared flags and every method's own. Every field is a flag of learner.main.
# (made anew rather than derived from CoreConfig, whose fields would come first: its one method goes along)
Config = dataclasses.make_dataclass("Config", _gathered(), frozen=True,
                                    namespace={"__post_init__": CoreConfig.__post_init__})
Config.__module__ = __name__  # (pickled by reference: a run's config crosses to Ray's processes)
Config.__doc__ = """A run's whole configuration: `CoreConfig`'s flags and every registered method's (a frozen
dataclass: one flag of learner.main per field)."""

FIELDS = {f.name: f for f in dataclasses.fields(Config)}
# fields in which the seeds of a pack (`driver.pack`) may differ: their numbers and their names (everything else
# is computed by one learner, so must be one configuration)
PER_SEED = frozenset({"seed", "out", "run_id", "overwrite", "resume", "progress"})
# fields that say where and how a run or a grid executes and reports, not what a run computes
BOOKKEEPING = frozenset(name for name, f in FIELDS.items() if f.metadata["role"] != "computes")
SECRETS = frozenset(name for name, f in FIELDS.items() if f.metadata["role"] == "secret")
# what a resumed run / grid may be given again with a new value (the rest must agree with what was saved)
RESUME_MAY_CHANGE = frozenset(name for name, f in FIELDS.items() if "run" in f.metadata["resume"])
GRID_RESUME_MAY_CHANGE = frozenset(name for name, f in FIELDS.items() if "grid" in f.metadata["resume"])
# the flags a grid takes as axes when given as comma lists (--seeds is the seed's axis)
AXES = frozenset(name for name, f in FIELDS.items() if f.metadata["role"] == "computes" and name != "seed")


def kinds(name: str) -> tuple[type, ...]:
    """The Python types field `name` takes (`type(None)` where it may be None)."""
    hint = typing.get_type_hints(Config)[name]
    return typing.get_args(hint) or (hint,)


def fits(name: str, value) -> bool:
    """Whether a Python value (not text: the command line's converters read text) is of field `name`'s type: a
    bool is not a number (Python's bool is an int, never a count or a rate here), an int is a float, None only
    where the field allows it; a list never (a grid's axis is the caller's to allow)."""
    allowed = kinds(name)
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed
    if int in allowed:
        return isinstance(value, int)
    if float in allowed:
        return isinstance(value, (int, float))
    return str in allowed and isinstance(value, str)


def reads(algo: str, name: str, config=None) -> bool:
    """Whether method `algo` reads field `name` (fields of other methods it ignores). With `config` (a Config,
    or a dict of fields such as config.json's), also whether it reads it in that configuration: a method whose
    acting has an `epsilon_gate` reads the ε schedule only while that flag of its own is on."""
    if algo not in FIELDS[name].metadata["algos"]:
        return False
    gate = epsilon_gate(algo) if name in EPSILON_FIELDS else None
    if gate is None or config is None:
        return True
    value = config.get(gate, FIELDS[gate].default) if isinstance(config, dict) else getattr(config, gate)
    return bool(value) if not isinstance(value, list) else any(value)  # a grid's axis: on in some of its runs


def epsilon_gate(algo: str) -> str | None:
    """The flag of method `algo`'s own without which it reads no ε schedule (`epsilon_gate` of its acting), or
    None."""
    method = METHODS.get(algo)
    return None if method is None else getattr(method.acting, "epsilon_gate", None)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def flag_text(value) -> str:
    """A value as the command line gives it (booleans as true/false; a list as a grid axis)."""
    if isinstance(value, list):
        return ",".join(flag_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def shorten(text: str, limit: int) -> str:
    """`text` within `limit` characters: a longer one cut, ending in a hash of the whole (names stay unique)."""
    if len(text) <= limit:
        return text

    return f"{text[:limit - 9]}~{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def command_line(values: dict, always: tuple[str, ...] = ("env", "algo")) -> str:
    """`python -m learner.main` with the flags among `values` whose value is not the default (and `always`)."""
    parts = ["python -m learner.main"]
    for name, f in FIELDS.items():
        if name in values and (values[name] != f.default or (name in always and values[name] is not None)):
            parts += [flag(name), shlex.quote(flag_text(values[name]))]
    return " ".join(parts)


def grid_command(args: dict) -> str:
    """The command of a grid (its grid.json's `args`): the flags that one of its methods reads and that are not
    the default, and a field whose default is under study (LEGACY) whatever its value where a method of the grid
    reads it, as in run_command; a grid.json from before such a field gets LEGACY's value, as its resume does."""
    algos = args["algo"] if isinstance(args["algo"], list) else [a.strip() for a in str(args["algo"]).split(",")]
    legacy = {k: v for k, v in LEGACY.items() if any(reads(algo, k, args) for algo in algos)}
    values = {k: v for k, v in {**legacy, **args}.items()
              if k in FIELDS and k not in ("resume", "variant") and any(reads(algo, k, args) for algo in algos)}
    # the ε decay's fraction, named where read: a grid command without it (nor --eps-decay-steps) is from before
    # the fraction, when ε decayed over 1M steps (reporting.records.pinned_command)
    fraction = ("eps_decay_fraction",) if "eps_decay_fraction" in values else ()
    return command_line(values, always=("env", "algo", *legacy, *fraction))


def run_command(config: dict, device: str = "cpu") -> str:
    """The command line that computes the run of `config` (config.json) again on `device` (its summary's):
    every field that changes what it computes (and its seed), where it differs from the default (γ and the
    learning rate: the env's); the device and the learner's threads, which change its floating point."""
    gamma, lr = env_defaults(config["env"])
    config = with_legacy(config)
    values = {k: v for k, v in config.items()
              if k in FIELDS and (k in AXES or k == "seed") and reads(config["algo"], k, config)}
    for name, default in (("gamma", gamma), ("lr", lr)):
        if values.get(name) == default:
            del values[name]
    values["device"] = device.split(":")[0]
    values["learner_threads"] = config.get("learner_threads", 1)
    # a field whose default is under study is named whatever its value: the command reads the same after a change
    named = tuple(k for k in LEGACY if reads(config["algo"], k, config))
    return command_line(values, always=("env", "algo", "seed", "device", *named))
