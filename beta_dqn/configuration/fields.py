"""Every field of the one frozen configuration that drives the serial and the Ray runner (`Config`: the flags
every run shares, typed here; in `Config.methods` each method's own and in `Config.replays` each replay backend's,
typed by its `Flags`), each a CLI flag (`--help`) with its type, default, help and role (`FIELDS`: every flag by
name, a `Flag`); the sets of fields the rest of the program reads by role (`FIELDS`, `AXES`, `BOOKKEEPING`,
`SECRETS`, ...), and which method reads which field (`reads`). (What a saved run's configuration lacks:
`beta_dqn.configuration.compat`.)

Defaults are the spec's (METHOD_SPEC.md §1–4) but `bandit_returns` (raw; docs/method.md says why); `None` means
"the environment's default" (γ and the learning rate, spec §4), resolved by `beta_dqn.configuration.resolution.resolve`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from actors.envs import canonical_kwargs, canonical_wrappers
from beta_dqn.configuration.checks import ALGOS, DEVICES, LOSSES, WANDB_MODES, validate
from learner.methods import METHODS
from learner.methods.reading import LAYOUTS, NATURE_FROM, NETWORKS, PIXELS
from replay_service.backends import REPLAY_BACKENDS
from replay_service.plugins import PluginError

# Every field declares its role, and the rest of the program reads it from here (a part's own flags declare theirs
# with `replay_service.flags.flag`):
#   "computes" (the default): changes what a run computes; a grid axis when given as a comma list;
#   "bookkeeping": names and directories of a run or a grid (never compared between runs);
#   "run": where and how a run or a grid executes and reports (cluster, device, resources, logging);
#   "secret": may hold a password (Redis URLs): masked wherever the configuration is written.
# `algos` names the methods that read a field (all of them when absent): a grid gives the others the
# default, and the report compares such a field only between runs of a method that reads it.
# `resume` names what may be given a new value when continued with --resume: a "run", a "grid", or both.
# the methods that act on DQN's ε-greedy schedule (spec §4), as their registry line says (`methods.Method.epsilon`):
# the ε-greedy family, and a method that names the flag of its own that turns ε on (β-DQN's --beta-epsilon); such
# a method reads the schedule only while that flag is on (`reads` with a configuration)
EPSILON_ALGOS = tuple(name for name, method in METHODS.items() if method.epsilon)
EPSILON_FIELDS = ("eps_start", "eps_end", "eps_decay_steps", "eps_decay_fraction")


def _opt(default, help: str, role: str = "computes", algos: tuple[str, ...] = ALGOS, resume: tuple[str, ...] = ()):
    return field(default=default, metadata={"help": help, "role": role, "algos": algos, "resume": resume})


def _run(default, help: str, resume: tuple[str, ...] = ()):
    return _opt(default, help, role="run", resume=resume)


def _book(default, help: str):
    return _opt(default, help, role="bookkeeping")


BOTH = ("run", "grid")  # may change when a run or a grid is resumed


F = TypeVar("F")  # a part's `Flags` class


def _flag_classes(registry: Mapping[str, Any]) -> dict[str, type]:
    """The `Flags` class of each part in a registry (`METHODS`, `REPLAY_BACKENDS`) that has one, by its name."""
    return {name: part.flags for name, part in registry.items() if part.flags is not None}


class OwnFlags(Mapping[str, Any]):
    """The own flags of every registered part of one kind (methods: `<method>/flags.py`; replay backends:
    `ReplayBackend.flags`), by the part's name: each an instance of that part's `Flags`, a frozen dataclass (a
    part without flags has no entry). Hashable and compared by value, as the frozen `Config` that holds it."""

    def __init__(self, by_part: Mapping[str, Any]):
        self._by_part = dict(by_part)

    @classmethod
    def of(cls, registry: Mapping[str, Any], values: dict[str, Any]) -> OwnFlags:
        """Every part's flags with the values named in `values` (flag name -> value; each name is taken out of
        it) and the defaults for the rest."""
        by_part = {}
        for name, flags in _flag_classes(registry).items():
            own = [f.name for f in dataclasses.fields(flags)]
            by_part[name] = flags(**{n: values.pop(n) for n in own if n in values})
        return cls(by_part)

    def __getitem__(self, part: str) -> Any:
        return self._by_part[part]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_part)

    def __len__(self) -> int:
        return len(self._by_part)

    def __hash__(self) -> int:
        return hash(frozenset(self._by_part.items()))  # (equal mappings, in any order, hash alike)

    def __repr__(self) -> str:
        return f"OwnFlags({self._by_part!r})"


@dataclass(frozen=True)
class Config:
    """A run's whole configuration: the flags every run shares, typed here; in `methods` every registered method's
    own flags and in `replays` every replay backend's, each typed by its part's `Flags` (`config.flags(Flags)`;
    `replay_service.flags`).

    The command line, a --config file, config.json, a grid's axes and resume name every flag flat, by its own
    name (`FIELDS`): `Config.of(**values)` makes one from such names, `value(name)` reads one, `replaced(**values)`
    gives a copy with some changed and `flat()` gives them all, in `FIELDS`' order. (`Config(...)` takes the
    shared flags, `methods` and `replays`; `dataclasses.replace` changes shared flags only.)"""

    # --- the run ---
    env: str = _opt("MinAtar/Breakout", "environment name (docs/running.md lists them), or module:Id for a Gymnasium "
                                        "id that your module registers when imported")
    env_kwargs: str = _opt("", "a JSON object of keyword arguments for the env's constructor (Gymnasium ids, "
                               "module:Id and the MiniGrid tasks), e.g. '{\"size\": 8}'")
    wrappers: str = _opt("", "wrap every env: an import path (minigrid.wrappers.ImgObsWrapper, mymodule:wrap) or a "
                             "JSON array of paths and {path: kwargs} objects, applied in order "
                             "(docs/running.md#observations)")
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
    replay_shards: int = _opt(1, "replay shards")
    replay: str = _opt("memory", "replay service: memory (shards as Ray actors), redis-local (the run starts "
                                 "--replay-shards redis-servers with a generated password, on 127.0.0.1, or on "
                                 "its node's cluster address when it joined a cluster), or "
                                 "redis://[:password@]host:port[/db] (several comma-separated: one shard each; "
                                 "password best from --replay-password-file or REDIS_PASSWORD: a command line is "
                                 "visible to every user of the machine)", role="secret", resume=BOTH)
    run_id: str = _book("", "the run's id: its checkpoints carry it, and it names the run's keys in a shared Redis "
                           "(default: the run directory's name + a random tag)")
    address: str = _run("", "Ray cluster to join (default: RAY_ADDRESS, else local)", resume=BOTH)
    device: str = _run("auto", f"learner device: {', '.join(DEVICES)}", resume=("run",))
    learner_threads: int = _run(1, "torch CPU threads of the learner")
    cuda_graphs: bool = _run(True, "GPU learner: capture the whole update as one CUDA graph and replay it per batch")
    publish_every: int = _opt(10, "learner updates between weight broadcasts")
    # --- training loop (spec §4) ---
    batch_size: int = _opt(32, "minibatch size")
    replay_capacity: int = _opt(100_000, "replay capacity (FIFO), all shards")
    replay_ratio: float = _opt(0.25, "learner updates per env step inserted")
    target_update: int = _opt(1000, "env steps between hard target copies")
    learning_starts: int = _opt(5000, "env steps of uniform random acting first")
    gamma: float | None = _opt(None, "discount (default: the env's, beta_dqn/configuration/defaults.toml: 0.9 "
                                     "CliffWalk, else 0.99)")
    lr: float | None = _opt(None, "Adam learning rate (default: the env's, "
                                  "beta_dqn/configuration/defaults.toml, spec §4)")
    loss: str = _opt("huber", f"TD loss: {', '.join(LOSSES)}")
    obs_layout: str = _opt("auto", f"{', '.join(LAYOUTS)}: the axes of rank-3 observations, height × width × "
                                   "channels or channels first (a frame stack's); auto: the smaller of the first "
                                   "and last axes holds the channels (docs/running.md#observations)")
    network: str = _opt("auto", f"{', '.join(NETWORKS)}: the conv torso of rank-3 observations, the paper's small "
                                f"one or Nature-DQN's; auto: Nature-DQN's for pixels at least {NATURE_FROM}×"
                                f"{NATURE_FROM} (flat observations: the MLP)")
    pixels: str = _opt("auto", f"{', '.join(PIXELS)}: whether rank-3 uint8 observations are pixels, scaled by 1/255 "
                               "to [0, 1] in the network; auto: where the space's bounds are 0 and 255")
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
    resume: str = _book("", "continue the run in this directory from its checkpoint (other flags must match it)")
    eval_every: int = _opt(100_000, "env steps between evaluations")
    eval_episodes: int = _opt(30, "episodes per evaluation")
    eval_epsilon: float = _opt(0.01, "ε of the evaluation policy")
    # --- outputs ---
    wandb: str = _run("", f"W&B mode: {', '.join(WANDB_MODES)} (default: WANDB_MODE, else offline)", resume=BOTH)
    wandb_entity: str = _run("", "W&B entity (a team or user) the runs go to (default: WANDB_ENTITY, else your "
                                 "default entity)")
    wandb_project: str = _run("beta-dqn", "W&B project")
    log_every: float = _run(10.0, "seconds between metric lines", resume=("run",))
    progress: bool = _run(True, "show a progress bar", resume=BOTH)
    json: bool = _run(False, "print the summary as JSON on stdout (for scripts); default: a few lines for people",
                      resume=BOTH)

    # --- every method's and every replay backend's own flags (not flags themselves) ---
    methods: OwnFlags = field(default_factory=lambda: OwnFlags.of(METHODS, {}))
    replays: OwnFlags = field(default_factory=lambda: OwnFlags.of(REPLAY_BACKENDS, {}))

    @classmethod
    def of(cls, **values: Any) -> Config:
        """A configuration from flag values by name, the shared flags and the parts' own alike (TypeError
        naming any that is none of them)."""
        rest = dict(values)
        shared = {name: rest.pop(name) for name in values if name in SHARED}
        methods, replays = OwnFlags.of(METHODS, rest), OwnFlags.of(REPLAY_BACKENDS, rest)
        if rest:
            raise TypeError(f"Config has no flag {', '.join(sorted(rest))}")
        return cls(**shared, methods=methods, replays=replays)

    def value(self, name: str) -> Any:
        """Flag `name`'s value (KeyError where no flag has that name)."""
        flag = FIELDS[name]
        if flag.method is not None:
            return getattr(self.methods[flag.method], name)
        if flag.replay is not None:
            return getattr(self.replays[flag.replay], name)
        return getattr(self, name)

    def replaced(self, **values: Any) -> Config:
        """A copy with the flags named in `values` set to those values (validated as a new `Config` is)."""
        return Config.of(**{**self.flat(), **values})

    def flat(self) -> dict[str, Any]:
        """Every flag's value by name, in `FIELDS`' order: config.json's form."""
        return {name: self.value(name) for name in FIELDS}

    def flags(self, cls: type[F]) -> F:
        """The flags of the method or replay backend whose `Flags` class is `cls`, typed as it:
        `config.flags(beta_dqn.flags.Flags)`."""
        for own in (self.methods, self.replays):
            found = next((flags for flags in own.values() if type(flags) is cls), None)
            if found is not None:
                return found
        raise KeyError(f"no registered method or replay backend has the flags class {cls.__qualname__}")

    def __post_init__(self):
        validate(self)


@dataclass(frozen=True)
class Flag:
    """One flag of learner.main: a field of `Config` (`method` and `replay` None), of a method's `Flags`
    (`method`: the method that declares it) or of a replay backend's (`replay`: the backend). `kind` is its Python
    type (e.g. `float | None`); `role`, `algos` and `resume` as `Config` documents them."""

    name: str
    kind: Any
    default: Any
    help: str
    role: str
    algos: tuple[str, ...]
    resume: tuple[str, ...]
    method: str | None = None
    replay: str | None = None


PARTS = ("methods", "replays")  # `Config`'s fields that hold the parts' own flags, not flags themselves


def _shared_flags() -> list[Flag]:
    hints = typing.get_type_hints(Config)
    return [Flag(f.name, hints[f.name], f.default, f.metadata["help"], f.metadata["role"], f.metadata["algos"],
                 f.metadata["resume"]) for f in dataclasses.fields(Config) if f.name not in PARTS]


def _own_flags(kind: str, registry: Mapping[str, Any], taken: dict[str, str]) -> list[tuple[str, Flag]]:
    """Every registered part's own flags (`replay_service.flags`), each with the shared flag it follows (its
    `after`; "" for the default place). A method's flag is read by that method and by those its `also` names;
    a backend's, by every method. A flag whose name is taken (`taken`: flag -> who has it) or that follows no
    shared flag is a `PluginError`, one line (only a part registered from outside can declare one)."""
    gathered = []
    for name, cls in _flag_classes(registry).items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name in taken:
                raise PluginError(f"{kind} {name!r} declares a flag {f.name!r} that {taken[f.name]} already has")
            taken[f.name] = f"{kind} {name!r}"
            after = f.metadata.get("after", "")
            if after and (after not in SHARED_NAMES or after in PARTS):
                raise PluginError(f"{kind} {name!r}: flag {f.name!r} follows {after!r}, which is no shared flag")
            algos = (name, *f.metadata.get("also", ())) if kind == "method" else ALGOS
            gathered.append((after, Flag(f.name, hints[f.name], f.default, f.metadata["help"],
                                         f.metadata.get("role", "computes"), algos, f.metadata.get("resume", ()),
                                         method=name if kind == "method" else None,
                                         replay=name if kind == "replay backend" else None)))
    return gathered


def _gathered() -> list[Flag]:
    """The flags in their order, which a grid's variants and run names, --help and config.json follow: the shared
    ones, each part's own after the shared flag its `after` names, else a method's before the evaluation block
    (`METHOD_FLAGS_BEFORE`) and a backend's after --replay, in the order the parts are registered."""
    taken = dict.fromkeys(SHARED_NAMES, "Config (the shared flags)")
    own = _own_flags("method", METHODS, taken) + _own_flags("replay backend", REPLAY_BACKENDS, taken)
    placed: list[Flag] = []
    for shared in _shared_flags():
        if shared.name == METHOD_FLAGS_BEFORE:
            placed += [flag for after, flag in own if not after and flag.method is not None]
        placed.append(shared)
        placed += [flag for after, flag in own if after == shared.name]
        if shared.name == "replay":
            placed += [flag for after, flag in own if not after and flag.replay is not None]
    return placed


SHARED_NAMES = frozenset(f.name for f in dataclasses.fields(Config))
METHOD_FLAGS_BEFORE = "checkpoint_every"  # the first field of Config's evaluation block
# every flag of learner.main by name, in order: the shared ones, every registered method's own and every replay
# backend's
FIELDS: dict[str, Flag] = {flag.name: flag for flag in _gathered()}
SHARED = SHARED_NAMES - set(PARTS)  # `Config`'s own fields: the flags every run shares
# fields in which the seeds of a pack (`beta_dqn.driver.pack`) may differ: their numbers and their names (everything
# else
# is computed by one learner, so must be one configuration)
PER_SEED = frozenset({"seed", "out", "run_id", "overwrite", "resume", "progress"})
# fields that say where and how a run or a grid executes and reports, not what a run computes
BOOKKEEPING = frozenset(name for name, f in FIELDS.items() if f.role != "computes")
SECRETS = frozenset(name for name, f in FIELDS.items() if f.role == "secret")
# what a resumed run / grid may be given again with a new value (the rest must agree with what was saved)
RESUME_MAY_CHANGE = frozenset(name for name, f in FIELDS.items() if "run" in f.resume)
GRID_RESUME_MAY_CHANGE = frozenset(name for name, f in FIELDS.items() if "grid" in f.resume)
# the flags a grid takes as axes when given as comma lists (--seeds is the seed's axis)
# the fields whose value is JSON (a grid cannot list them: JSON has commas of its own), each with the function that
# gives its one spelling; a file, the Python API and a search may give them as objects and lists
JSON_FIELDS = {"env_kwargs": canonical_kwargs, "wrappers": canonical_wrappers}
AXES = frozenset(name for name, f in FIELDS.items() if f.role == "computes" and name != "seed")


def kinds(name: str) -> tuple[type, ...]:
    """The Python types field `name` takes (`type(None)` where it may be None)."""
    hint = FIELDS[name].kind
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
    registry line names a flag of its own as its `epsilon` reads the ε schedule only while that flag is on."""
    if algo not in FIELDS[name].algos:
        return False
    gate = epsilon_gate(algo) if name in EPSILON_FIELDS else None
    if gate is None or config is None:
        return True
    if isinstance(config, dict):
        value = config.get(gate, FIELDS[gate].default)
    else:  # a Config, or an object with the flags as attributes (a report's run: `beta_dqn.reporting.results`)
        value = config.value(gate) if isinstance(config, Config) else getattr(config, gate)
    return bool(value) if not isinstance(value, list) else any(value)  # a grid's axis: on in some of its runs


def epsilon_gate(algo: str) -> str | None:
    """The flag of method `algo`'s own without which it reads no ε schedule (its registry line's `epsilon`, where
    that names a flag), or None."""
    method = METHODS.get(algo)
    return method.epsilon if method is not None and isinstance(method.epsilon, str) else None

