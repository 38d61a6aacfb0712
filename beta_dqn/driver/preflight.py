"""What a run needs of the world, asked before it starts, each failure one line (`ConfigError`): a CUDA device
where `--device cuda` asks for one, what its replay backend needs (`replay_service.backends`: a redis-server
binary, servers that answer), the room for its actors on the cluster it would start (on the cluster it joined,
once its backend has it: `check_backend_room`, from `beta_dqn.driver.runtime.build`), the memory it could never fit in.
The
configuration only describes and checks a run (`beta_dqn.configuration.fields`, `beta_dqn.configuration.checks`); this
module looks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from beta_dqn.configuration.flags import Config, ConfigError, method_settings, replay_backend
from beta_dqn.driver.cluster import cluster_to_start
from learner.methods import algorithm, extras
from replay_service.buffer import make_packer
from replay_service.contract import BackendError
from replay_service.schema import Schema


def preflight(cfg: Config) -> None:
    """A CUDA device where one is asked for, and what the replay backend needs."""
    if cfg.device == "cuda":
        import torch  # here only: a run on the CPU need not wait for torch's CUDA check

        if not torch.cuda.is_available():
            raise ConfigError("device", "cuda: no CUDA device is available here; use auto or cpu")
    try:
        replay_backend(cfg.replay).preflight(cfg)
    except BackendError as e:
        raise ConfigError(e.name, e.message) from None


def check_room(cfg: Config) -> None:
    """A Ray run that will start a cluster of this machine (`cluster_to_start`) and whose actors that cluster
    could never place is refused before it starts (the slow part of a run's start); a cluster joined or already
    there is asked by `check_backend_room` once the backend has it."""
    cpus = None if cfg.runtime == "serial" else cluster_to_start(cfg.address)
    problem = "" if cpus is None else room_problem(cfg, float(cpus))
    if problem:
        raise ConfigError("actors", problem)


def actor_cpus(cfg: Config, total_cpus: float) -> float:
    """What each actor declares: `--actor-cpus`, or by default a share of what the learner leaves of the cluster."""
    return cfg.actor_cpus or min(1.0, max(0.01, (total_cpus - 1) / cfg.actors))


def room_problem(cfg: Config, total_cpus: float) -> str:
    """"" when the run's actors fit the cluster's CPUs, else what is short."""
    cpus = actor_cpus(cfg, total_cpus)
    if cfg.actors * cpus <= total_cpus + 1e-9:
        return ""
    return (f"{cfg.actors} actors × {cpus:g} CPUs need {cfg.actors * cpus:g} CPUs, but the cluster has "
            f"{total_cpus:g} (--actors, --actor-cpus)")


def check_backend_room(cfg: Config, backend) -> None:
    """Actors that the cluster cannot place would wait forever: refuse them on a cluster this run started
    (a joined cluster may grow: a warning)."""
    total = getattr(backend, "total_cpus", None)
    problem = "" if total is None else room_problem(cfg, total)
    if not problem:
        return
    if backend.local:
        raise ConfigError("actors", problem)
    print(f"warning: {problem}; actors wait until the cluster grows", file=sys.stderr)


def _gib(n: float) -> str:
    return f"{n / 2**40:,.1f} TiB" if n >= 2**40 else f"{n / 2**30:,.1f} GiB"


def machine_memory() -> int:
    """This machine's memory in bytes, or its container's limit (cgroup v2 `memory.max`) where smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    except OSError:
        pass
    return total


def check_memory(cfg: Config, spec) -> None:
    """A run on this machine (serial, or a Ray cluster it starts) that could never fit in its memory is refused
    at once, naming what is too big: the in-memory replay (what `--total-steps` can fill of `--replay-capacity`,
    or one shard's array, which the system must grant whole), the learner's networks (weights, gradients,
    target copies, Adam's two moments; counted without allocating them), or their copies in `--actors` actors
    and the evaluator. A joined cluster's memory is elsewhere: not checked."""
    if cfg.runtime != "serial" and (cfg.address or os.environ.get("RAY_ADDRESS")):
        return
    machine = machine_memory()
    packer = make_packer(spec)
    row = Schema(extras(cfg.algo)).row_bytes(packer.packed_shape, packer.packed_dtype)
    needed = replay_backend(cfg.replay).memory_bytes(cfg, row)
    if needed > machine:
        raise ConfigError("replay_capacity", f"{cfg.replay_capacity:,} transitions of {spec.name} ({row} B each) "
                                             f"need {_gib(needed)} of memory, more than this machine's "
                                             f"{_gib(machine)}")
    # not at the top: every actor unpickles its ports (`_RemotePort`) from `beta_dqn.driver.runtime`, which imports this
    # module, and torch would cost each actor process about 180 MB (measured: 55 MB → 238 MB to import it)
    import torch

    with torch.device("meta"):  # shapes only: nothing is allocated
        params = sum(p.numel() for net in algorithm(cfg.algo).networks(spec, method_settings(cfg)).values()
                     for p in net.parameters())
    learner, copies = params * 4 * 5, params * 4 * (cfg.actors + 1)
    if learner > machine:
        raise ConfigError("algo", f"{cfg.algo}'s networks for {spec.name} have {params:,} parameters: "
                                  f"{_gib(learner)} with the learner's targets, gradients and Adam moments, more "
                                  f"than this machine's {_gib(machine)} of memory")
    if learner + copies > machine:
        raise ConfigError("actors", f"{cfg.actors} actors each hold a copy of {cfg.algo}'s networks "
                                    f"({_gib(params * 4)}): {_gib(learner + copies)} with the learner's, more than "
                                    f"this machine's {_gib(machine)} of memory")
