"""Where the plain classes run: in this process (`SerialBackend`) or as Ray actors (`RayBackend`).

The training loop (`beta_dqn.driver.run`) is written once against this small interface:
`make(cls, *args)` builds a component, `call(handle, method, *args)` returns a future,
`ready(futures, block)` says which are done, `get(future)` reads one, `put(value)` shares a value.
This module, with `beta_dqn.driver.cluster` (how `RayBackend` joins a running cluster or starts one), is the only place
that
calls Ray's API for the run (`beta_dqn.driver.signals.local_cluster_gone` reads, without importing Ray, whether the
processes of a local cluster this process started are still alive). It imports Ray where a Ray run needs it, not at
the top: Ray costs 1.3 s and 70 MB to import (measured with `python -X importtime`), which a serial run need not
pay. `build` wires the run's parts; `beta_dqn.driver.preflight` checks that its actors fit the cluster,
`beta_dqn.driver.signals`
takes SIGTERM as Ctrl-C.
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from actors.actor import Actor, ActorSettings
from actors.evaluator import Evaluator, EvaluatorSettings
from beta_dqn.configuration.flags import Config, ConfigError, method_settings, replay_backend, settings
from beta_dqn.driver.cluster import (
    THIS_MACHINE_VAR,
    drop_token_notice,
    join_cluster,
    start_local_cluster,
    start_reaper,
    worker_runtime_env,
)
from beta_dqn.driver.preflight import actor_cpus, check_backend_room
from beta_dqn.driver.signals import OWN_SHUTDOWN, local_cluster_gone
from learner.methods import acting, extras
from replay_service.client import ReplaySampler, shard_of
from replay_service.contract import BackendError

MAX_RESTARTS = 10  # a process that keeps dying (out of memory, a crashing env) ends the run instead


class Backend(Protocol):
    """Where the run's parts live and how the loop talks to them: the same calls in one process or on Ray."""

    concurrent: bool  # parts run at the same time (Ray); False: a call runs to its end when made (serial)
    owned: bool  # the run owns its process: it takes SIGTERM as Ctrl-C (not in a grid's Ray task)

    def make(self, cls, *args, cpus: float = 0.0, restartable: bool = False, ported: bool = False) -> Any:
        """Build a part (an instance of `cls`) and return its handle (`ported`: other parts reach it through
        `port`)."""

    def port(self, handle) -> Any:
        """What another part holds to call this one (an actor's bandit or replay shard)."""

    def call(self, handle, method: str, *args) -> Any:
        """Start `handle.method(*args)`; a future."""

    def ready(self, futures: list, block: bool) -> list:
        """The futures among these that are done (at least one when `block`)."""

    def get(self, future) -> Any:
        """A future's value (a list's values)."""

    def put(self, value) -> Any:
        """Share a value with every part once (weights)."""

    def node(self) -> str:
        """The node this process runs on."""

    def reachable_address(self) -> str:
        """Where the run's other parts reach a server on this node: 127.0.0.1 when they all run on this
        machine (serial, or a Ray cluster this run started), else this node's address on the cluster."""

    def nodes(self, handles: list) -> list[str]:
        """The node each part runs on."""

    def shutdown(self) -> None:
        """No part left running."""


class _Done:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class SerialBackend:
    """Everything in one process, in a fixed order: deterministic for a given seed."""

    concurrent = False

    def __init__(self):
        # a process of its own (the CLI's) takes SIGTERM as Ctrl-C (`Run.run`); a Ray worker running a grid's
        # task, or a process that started Ray for something else, keeps its own signal handling
        ray = sys.modules.get("ray")
        self.owned = not (ray is not None and ray.is_initialized())

    def make(self, cls, *args, cpus: float = 0.0, restartable: bool = False, ported: bool = False):
        return cls(*args)

    def port(self, handle):
        return handle

    def call(self, handle, method: str, *args):
        return _Done(getattr(handle, method)(*args))

    def ready(self, futures: list, block: bool) -> list:
        return list(futures)

    def get(self, future):
        return [f.value for f in future] if isinstance(future, list) else future.value

    def put(self, value):
        return value

    def node(self) -> str:
        return "local"

    def reachable_address(self) -> str:
        return "127.0.0.1"

    def nodes(self, handles: list) -> list[str]:
        return ["local"] * len(handles)

    def shutdown(self) -> None:
        pass


class _RemotePort:
    """What an actor holds to reach the bandit or a replay shard across processes.

    `exchange` and `insert` wait for their answer (an arm needed now; an acknowledged insert is what the
    learner's step count relies on); `exchange_async` answers with a future (the actor steps meanwhile).
    """

    def __init__(self, name: str, handle=None):
        self.name, self._handle = name, handle

    def __reduce__(self):
        # sent by the actor's name, not its handle: an actor handle among a restartable actor's constructor
        # arguments is held in Ray's object store, and Ray then warns on every run that a restart could fail
        # (ray-project/ray#53727); a name is plain text, looked up where the port is first used (not while a
        # restarted actor is being built: an actor gone by then fails that call, with Ray's word on why)
        return _RemotePort, (self.name,)

    @property
    def handle(self):
        if self._handle is None:
            import ray  # (lazy: see the docstring)

            self._handle = ray.get_actor(self.name)
        return self._handle

    def exchange(self, reports: list, n: int, returned=(), holder=None) -> tuple[list[int], int]:
        import ray  # (lazy: see the docstring)

        return ray.get(self.handle.exchange.remote(reports, n, returned, holder))

    def exchange_async(self, reports: list, n: int, returned=(), holder=None):
        """The same, as a concurrent.futures.Future."""
        return self.handle.exchange.remote(reports, n, returned, holder).future()

    def insert(self, chunk) -> int:
        import ray  # (lazy: see the docstring)

        return ray.get(self.handle.insert.remote(chunk))



class RayBackend:
    concurrent = True

    def __init__(self, address: str = "", envs=(), wrappers=()):
        """`envs`: the names of the environments its runs make, `wrappers`: their --wrappers (the user's modules
        they name reach every worker)."""
        import ray  # (lazy: see the docstring)

        self.ray = ray
        self.handles: list = []
        self.names: dict[int, str] = {}  # id(handle) → the actor's name (the handle is held in self.handles)
        self.prefix, self.made = f"{os.getpid()}-{secrets.token_hex(4)}", 0
        self.reaper = None
        self.owned = not ray.is_initialized()  # shut down only a cluster this backend started
        address = address or os.environ.get("RAY_ADDRESS", "")
        self.local = self.owned and not address  # a cluster of this machine only, started here: it cannot grow
        # every part on this machine (a grid's run in a cluster its grid started, too): servers stay on loopback
        self.this_machine = self.local or os.environ.get(THIS_MACHINE_VAR) == "1"
        if not ray.is_initialized():
            drop_token_notice()
            if address:
                join_cluster(ray, address, envs, wrappers)
            else:
                start_local_cluster(ray, worker_runtime_env(envs, wrappers, **{THIS_MACHINE_VAR: "1"}))
                self.reaper = start_reaper()
        self.total_cpus = float(ray.cluster_resources().get("CPU", 1.0))

    def cluster_gone(self) -> bool:
        """Whether the local cluster this backend started has lost its GCS or raylet (a signal to the process
        group reached them too): then no Ray call can be answered, and none is made."""
        return self.local and local_cluster_gone()

    def make(self, cls, *args, cpus: float = 0.0, restartable: bool = False, ported: bool = False):
        """`restartable`: a process that dies is started again with the same arguments, and the call it
        was serving is retried there (actors and the evaluator hold no state the run needs back).
        `ported`: other parts will reach it through `port`; it is then named (unique in the run's Ray
        namespace), so that the port travels as its name (a named actor's creation waits for Ray's GCS to
        register it, so only those are)."""
        options = {"max_restarts": MAX_RESTARTS, "max_task_retries": MAX_RESTARTS} if restartable else {}
        name = None
        if ported:  # (a count of its own: `shutdown` forgets the names, a name may outlive it in the cluster)
            self.made += 1
            name = f"{cls.__name__}-{self.prefix}-{self.made}"
        # (Ray's stubs type `remote` options per overload; name and num_cpus are actor options)
        handle = self.ray.remote(num_cpus=cpus, name=name, **options)(cls).remote(*args)  # type: ignore[call-overload]
        self.handles.append(handle)
        if name:
            self.names[id(handle)] = name
        return handle

    def port(self, handle):
        return _RemotePort(self.names[id(handle)], handle)

    def call(self, handle, method: str, *args):
        return getattr(handle, method).remote(*args)

    def ready(self, futures: list, block: bool) -> list:
        if not futures:
            return []
        done, _ = self.ray.wait(futures, num_returns=1, timeout=None if block else 0)
        if done:  # take everything else that is already done too
            more, _ = self.ray.wait(futures, num_returns=len(futures), timeout=0)
            done = more or done
        return done

    def get(self, future):
        return self.ray.get(future)

    def put(self, value):
        return self.ray.put(value)

    def node(self) -> str:
        return self.ray.get_runtime_context().get_node_id()

    def reachable_address(self) -> str:
        return "127.0.0.1" if self.this_machine else self.ray.util.get_node_ip_address()

    def nodes(self, handles: list) -> list[str]:
        # runs in each part's process; a lambda travels by value, so the part imports nothing of the driver
        here = lambda _part: __import__("ray").get_runtime_context().get_node_id()  # noqa: E731
        return self.ray.get([h.__ray_call__.remote(here) for h in handles])

    def shutdown(self) -> None:
        if self.cluster_gone():  # nothing to ask: its processes end with their raylet, and the reaper sees to it
            self.handles.clear()
            self.names.clear()
            return
        for handle in self.handles:
            self.ray.kill(handle)
        self.handles.clear()
        self.names.clear()
        if self.owned:
            OWN_SHUTDOWN.set()  # its cluster ends now by this process's hand, not by a signal's
            self.ray.shutdown()


def make_backend(cfg: Config) -> Backend:
    if cfg.runtime == "serial":
        return SerialBackend()
    return RayBackend(cfg.address, envs=[cfg.env], wrappers=[cfg.wrappers])


def make_replay(cfg: Config, spec, backend, out: Path, resume: dict | None = None) -> ReplaySampler:
    """The run's replay, from its backend (`replay_service.backends`: `--replay` says which), continued from
    `resume` (a checkpoint) where given."""
    try:
        return replay_backend(cfg.replay).open(cfg, spec, backend, out, resume, extras(cfg.algo))
    except BackendError as e:
        raise ConfigError(e.name, e.message) from None


@dataclass(frozen=True)
class Parts:
    """A run's parts, as `build` wired them: their handles (`Backend.make`'s)."""

    arm_source: Any  # where episodes' arms come from: the bandit's handle (β-DQN), or the run's own copy of the arm
    arm_local: bool  # every actor holds a copy of the arm source (the run's own counts its episodes), no bandit
    actors: list[Any]  # the actors' handles, by index
    evaluator: Any  # the evaluator's handle


def build(cfg: Config, spec, backend, replay_ports: list, generation: int = 0) -> Parts:
    """Wire the run: arm source, actors (each inserting into its shard's port), evaluator. Their handles."""
    method = acting(method_settings(cfg))
    arms, args = method.arm_source(cfg.seed)
    if method.central:  # one source for the run (β-DQN's bandit): actors reach it through a port
        arm_source = backend.make(arms, *args, ported=True)
        actor_arms = [backend.port(arm_source)] * cfg.actors
    else:
        # no central state (one policy, or a head drawn uniformly): each actor holds its own source (seeded by
        # the run, the actor and the resume generation: no round trip per episode); the run's own copy, in
        # the run's process, counts the finished episodes per arm as their chunks arrive
        arm_source = arms(*args)
        actor_arms = [arms(*method.arm_source([cfg.seed, i, generation, 1])[1]) for i in range(cfg.actors)]
    cpus = actor_cpus(cfg, getattr(backend, "total_cpus", 1.0))
    check_backend_room(cfg, backend)
    mine = settings(ActorSettings, cfg)  # each part is sent what it reads, not the run's whole configuration
    actors = [backend.make(Actor, mine, spec, i, actor_arms[i], replay_ports[shard_of(i, cfg.replay_shards)],
                           generation, cpus=cpus, restartable=True) for i in range(cfg.actors)]
    evaluator = backend.make(Evaluator, settings(EvaluatorSettings, cfg), spec,
                             cfg.seed + 1_000_003 + 7919 * generation, restartable=True)
    return Parts(arm_source=arm_source, arm_local=not method.central, actors=actors, evaluator=evaluator)

