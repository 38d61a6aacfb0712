"""Where the plain classes run: in this process (`SerialBackend`) or as Ray actors (`RayBackend`).

The training loop (`driver.run`) is written once against this small interface:
`make(cls, *args)` builds a component, `call(handle, method, *args)` returns a future,
`ready(futures, block)` says which are done, `get(future)` reads one, `put(value)` shares a value.
This module is the only place that touches Ray's API for the run. It imports Ray where a Ray run needs it,
not at the top: Ray costs 1.3 s and 70 MB to import (measured with `python -X importtime`), which a serial
run need not pay.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import psutil

from actors.actor import Actor, ActorSettings
from actors.envs import env_modules
from actors.evaluator import Evaluator, EvaluatorSettings
from configuration.flags import ConfigError, method_settings, replay_backend, settings
from methods import PLUGINS, acting, extras
from replay_service.backends import PLUGINS as REPLAY_PLUGINS
from replay_service.client import ReplaySampler, shard_of
from replay_service.contract import BackendError

MAX_RESTARTS = 10  # a process that keeps dying (out of memory, a crashing env) ends the run instead
_THREAD_VARS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _worker_vars() -> dict[str, str]:
    """What Ray's workers are given: one thread per numeric library, and the methods and replay backends
    registered from outside the project (`methods.PLUGINS`, `replay_service.backends.PLUGINS`: a worker of a joined
    cluster inherits nothing of this process; the modules must be importable there too, e.g. from the same
    checkout on PYTHONPATH)."""
    plugins = {name: os.environ[name] for name in (PLUGINS, REPLAY_PLUGINS) if os.environ.get(name)}
    return {**_THREAD_VARS, **plugins}
# set in every process of a Ray cluster that a run or grid started on this machine (a grid's runs among them)
THIS_MACHINE_VAR = "BETA_DQN_THIS_MACHINE"


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


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast with one line when a `host:port` address does not answer (ray.init retries for minutes)."""
    target = address.split("://", 1)[-1]
    if target == "auto" or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    if target.startswith("["):  # [IPv6]:port, as Ray writes it
        host, _, rest = target[1:].partition("]")
        if not rest:
            return  # no port: Ray's default, Ray's to judge
        port = rest.removeprefix(":")
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ConfigError("address", f"{address!r} is not HOST:PORT: its port {port!r} is not a number from 1 to "
                                     "65535")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as e:
        raise ConfigError("address", f"no Ray cluster answers at {address!r} ({e})") from None


_TOKEN_HELP = ("give this client the cluster's token: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH naming the "
               "cluster's token file (or the file at ~/.ray/auth_token)")


def _runtime_env(envs, **env_vars) -> dict:
    """What every Ray worker of the run is given: `_worker_vars`, and the user's modules behind `module:Id`
    envs (`actors.envs.env_modules`), sent to every node by Ray (`py_modules`)."""
    shipped = env_modules(envs)
    return {"env_vars": {**_worker_vars(), **env_vars}, **({"py_modules": shipped} if shipped else {})}


def _join(ray, address: str, envs=()) -> None:
    """Join a running cluster; a cluster that refuses us (no token, a wrong token) or does not answer is one line.

    What Ray's core prints while it tries (a warning a second, for seconds) is held back and read: it is the
    only place that says a token was refused. It reaches stderr after all when the join succeeds."""
    _check_reachable(address)
    try:
        held = tempfile.TemporaryFile(mode="w+b")
    except OSError:
        held = None  # nowhere to hold Ray's lines: they reach stderr as they come
    try:
        sys.stderr.flush()
        if held is not None:
            saved = os.dup(2)
            os.dup2(held.fileno(), 2)
        try:
            ray.init(address=address, log_to_driver=False, runtime_env=_runtime_env(envs),
                     logging_level=logging.WARNING)
            failure = None
        except (ConnectionError, ValueError, RuntimeError, ray.exceptions.AuthenticationError) as e:
            failure = e
        finally:
            if held is not None:
                blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # stderr back, whatever comes
                try:
                    sys.stderr.flush()
                    os.dup2(saved, 2)
                    os.close(saved)
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        printed = ""
        if held is not None:
            held.seek(0)
            printed = held.read().decode("utf-8", "replace")
    finally:
        if held is not None:
            held.close()
    if failure is None:
        sys.stderr.write(printed)
        return
    if isinstance(failure, ray.exceptions.AuthenticationError):
        reason = f"token authentication is on (RAY_AUTH_MODE=token) and no token was found; {_TOKEN_HELP}"
    elif "InvalidAuthToken" in printed or "Unauthenticated" in printed:
        reason = f"the cluster refused this client's token (missing or not the cluster's); {_TOKEN_HELP}"
    else:
        text = str(failure).strip()
        reason = text.splitlines()[0] if text else type(failure).__name__
    raise ConfigError("address", f"cannot join the Ray cluster at {address!r}: {reason}")


class _NoTokenNotice(logging.Filter):
    """Ray 2.60 turns token authentication on for a cluster `ray.init` starts, and for a driver that joins with
    `--address auto` and finds a token file, and says so in a WARNING every time ("Set RAY_AUTH_MODE=disabled
    to opt out"): the first line a new user read on a healthy run. Token authentication on is what this project
    wants (docs/clusters.md, "Token authentication"), so that one notice is dropped; every other line of Ray's
    logger still reaches the terminal ("Token authentication is disabled ..." too). (Setting RAY_AUTH_MODE=token
    in this process would silence it as well, but once Ray is imported it has read its configuration: Ray then
    refuses its own cluster, unless its private `Config.initialize` is called again.)"""

    NOTICE = "Token authentication is enabled for this Ray cluster"

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.NOTICE)


def _drop_token_notice() -> None:
    logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if not any(isinstance(f, _NoTokenNotice) for f in logger.filters):
        logger.addFilter(_NoTokenNotice())


def cluster_to_start(address: str = "") -> int | None:
    """The CPUs of the Ray cluster that `RayBackend(address)` would start here, this machine's (os.cpu_count(),
    which it gives `ray.init`), or None where it would start none: it joins one (an address, RAY_ADDRESS), one is
    already started in this process (a grid's run), or the machine does not say its count."""
    if address or os.environ.get("RAY_ADDRESS"):
        return None
    ray = sys.modules.get("ray")  # (not imported for the question: `import ray` takes seconds)
    if ray is not None and ray.is_initialized():
        return None
    return os.cpu_count()


class RayBackend:
    concurrent = True

    def __init__(self, address: str = "", envs=()):
        """`envs`: the names of the environments its runs make (their `module:Id` modules reach every worker)."""
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
            _drop_token_notice()
            if address:
                _join(ray, address, envs)
            else:
                # "local" always starts a fresh cluster (a stale ray_current_cluster file is ignored)
                # Ray's own INFO lines ("Started a local Ray instance") stay off the terminal
                try:
                    ray.init(address="local", num_cpus=cluster_to_start(), include_dashboard=False,
                             dashboard_host="127.0.0.1", log_to_driver=False,
                             runtime_env=_runtime_env(envs, **{THIS_MACHINE_VAR: "1"}),
                             logging_level=logging.WARNING)
                except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for it
                    error = ClusterStartError.of(e)
                    if error is e:
                        raise
                    raise error from None
                self.reaper = _start_reaper()
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
        handle = self.ray.remote(num_cpus=cpus, name=name, **options)(cls).remote(*args)
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
            _OWN_SHUTDOWN.set()  # its cluster ends now by this process's hand, not by a signal's
            self.ray.shutdown()


_SIGNALLED = threading.Event()  # a SIGTERM arrived (`sigterm_interrupts`)
_OWN_SHUTDOWN = threading.Event()  # this process is shutting its local cluster down (`RayBackend.shutdown`)
CLUSTER_DRAIN_S = 30.0  # how long, after a SIGTERM, a local cluster's GCS or raylet may take to end
OWN_SHUTDOWN_S = 5.0  # how long the watcher lets this process's own shutdown of its cluster finish


def local_cluster_gone(wait: float | None = None) -> bool:
    """Whether this process started a local Ray cluster whose GCS or raylet has ended (a signal to the process
    group reached them too, or they were killed): no Ray call can be answered then. After a SIGTERM they get up
    to 2 s (`wait`) to end (they received it when this process did)."""
    worker = sys.modules.get("ray._private.worker")
    node = getattr(worker, "_global_node", None)
    processes = [info.process for kind in ("gcs_server", "raylet")
                 for info in (getattr(node, "all_processes", None) or {}).get(kind, []) if info.process is not None]
    if not processes:
        return False
    deadline = time.monotonic() + (wait if wait is not None else 2.0 if _SIGNALLED.is_set() else 0.0)
    while True:
        if any(process.poll() is not None for process in processes):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


_REAPER = """
import os, signal, sys, time
import psutil
wanted = [(int(pid), float(t)) for pid, t in (w.split(":") for w in sys.argv[1:])]
sys.stdin.read()  # EOF: the process that started the cluster is gone, however it ended
time.sleep(2.0)  # Ray's own shutdown first
for pid, started in wanted:
    try:
        p = psutil.Process(pid)
        if abs(p.create_time() - started) < 0.01:  # the same process, not a new one with its number
            p.kill()
    except psutil.Error:
        pass
"""


def _start_reaper():
    """A small process of its own (outside this process group, so that a signal to the group leaves it) that
    waits for this process to end, however it ends (SIGKILL too: its pipe closes), and then kills what is left
    of the local Ray cluster started here: Ray's agents otherwise outlive a killed driver by minutes, waiting
    on a GCS that is gone. It knows the cluster's processes as they were when it started (by number and start
    time, so a number reused since is left alone)."""
    wanted = [f"{p.pid}:{p.create_time()}" for p in psutil.Process().children(recursive=True)]
    try:
        return subprocess.Popen([sys.executable, "-c", _REAPER, *wanted], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None  # best effort: without it, Ray's agents end on their own, later


def actor_cpus(cfg, total_cpus: float) -> float:
    """What each actor declares: `--actor-cpus`, or by default a share of what the learner leaves of the cluster."""
    return cfg.actor_cpus or min(1.0, max(0.01, (total_cpus - 1) / cfg.actors))


def room_problem(cfg, total_cpus: float) -> str:
    """"" when the run's actors fit the cluster's CPUs, else what is short."""
    cpus = actor_cpus(cfg, total_cpus)
    if cfg.actors * cpus <= total_cpus + 1e-9:
        return ""
    return (f"{cfg.actors} actors × {cpus:g} CPUs need {cfg.actors * cpus:g} CPUs, but the cluster has "
            f"{total_cpus:g} (--actors, --actor-cpus)")


def _check_room(cfg, backend) -> None:
    """Actors that the cluster cannot place would wait forever: refuse them on a cluster this run started
    (a joined cluster may grow: a warning)."""
    total = getattr(backend, "total_cpus", None)
    problem = "" if total is None else room_problem(cfg, total)
    if not problem:
        return
    if backend.local:
        raise ConfigError("actors", problem)
    print(f"warning: {problem}; actors wait until the cluster grows", file=sys.stderr)


def make_backend(cfg) -> Backend:
    return SerialBackend() if cfg.runtime == "serial" else RayBackend(cfg.address, envs=[cfg.env])


def make_replay(cfg, spec, backend, out: Path, resume: dict | None = None) -> ReplaySampler:
    """The run's replay, from its backend (`replay_service.backends`: `--replay` says which), continued from
    `resume` (a checkpoint) where given."""
    try:
        return replay_backend(cfg.replay).open(cfg, spec, backend, out, resume, extras(cfg.algo))
    except BackendError as e:
        raise ConfigError(e.name, e.message) from None


def build(cfg, spec, backend, replay_ports: list, generation: int = 0) -> dict:
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
    _check_room(cfg, backend)
    mine = settings(ActorSettings, cfg)  # each part is sent what it reads, not the run's whole configuration
    actors = [backend.make(Actor, mine, spec, i, actor_arms[i], replay_ports[shard_of(i, cfg.replay_shards)],
                           generation, cpus=cpus, restartable=True) for i in range(cfg.actors)]
    evaluator = backend.make(Evaluator, settings(EvaluatorSettings, cfg), spec,
                             cfg.seed + 1_000_003 + 7919 * generation, restartable=True)
    return {"arm_source": arm_source, "arm_local": not method.central, "actors": actors, "evaluator": evaluator}


def _write_line(text: str) -> None:
    """`text` on stderr on a line of its own: with tqdm's locks (0.5 s at most each: a bar stuck mid-draw does
    not hold it back), a live progress bar is cleared and drawn again below it. Never raises: a closed or
    broken stderr (its reader ended by the same signal) leaves the process to end all the same."""
    from tqdm import tqdm

    try:
        lock, taken = tqdm.get_lock(), []
        try:
            for part in lock.locks:
                if not part.acquire(timeout=0.5):
                    break
                taken.append(part)
            if len(taken) == len(lock.locks):
                tqdm.write(text, file=sys.stderr, nolock=True)
            else:
                sys.stderr.write("\n" + text + "\n")
            sys.stderr.flush()
        finally:
            for part in reversed(taken):
                part.release()
    except Exception:  # noqa: BLE001
        pass


class ClusterStartError(RuntimeError):
    """The local Ray cluster did not start (its processes did not come up in the time Ray gives them)."""

    @classmethod
    def of(cls, e: BaseException) -> BaseException:
        """The one line for Ray's startup timeout; any other error `e` itself (to be raised as it came)."""
        if "timed out during startup" not in str(e):
            return e
        load = os.getloadavg()[0]
        return cls(f"Ray's local cluster did not start: its node timed out during startup (this machine's load "
                   f"average is {load:.1f} on {os.cpu_count()} cores); try again when it is less busy")


class Interrupted(KeyboardInterrupt):
    """An interrupt (Ctrl-C, SIGTERM) whose line, how to continue, was said already (`sigterm_interrupts`)."""


def interrupt_behind(e: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt that `e` is, or that was being handled as `e` was raised (else None). The interrupt
    is raised wherever the main thread is when the signal arrives; inside CPython's `threading.Condition.wait`
    (under `queue.Queue.get`, `Event.wait`, `Future.result`) it can land after the lock is released and before
    the `try` that takes it back, and the `with` around the wait then raises "RuntimeError: cannot release
    un-acquired lock" with the interrupt as its context: that is still the interrupt. So is an error raised in
    a `finally` or an `except` on the interrupt's way out (said beside it: `say_beside`). The chain is read as a
    traceback shows it: an error raised `from` something else is not the interrupt's."""
    return next((x for x in error_chain(e) if isinstance(x, KeyboardInterrupt)), None)


def error_chain(e: BaseException | None):
    """`e`, then what it was raised from or while handling, as a traceback shows them (`from None` ends it)."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        yield e
        seen.add(id(e))
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)


_LOCK_RACE = ("cannot release un-acquired lock", "release unlocked lock")  # CPython's (interrupt_behind)


def say_beside(e: BaseException) -> None:
    """An error an interrupt led to, in a `warning:` line of its own (after the interrupt's): it may be a bug of
    its own, so it is not hidden. Not the interrupt itself, an error of Ray's (what the signal ended too), nor
    CPython's lock race (`interrupt_behind`)."""
    if isinstance(e, KeyboardInterrupt) or type(e).__module__.startswith("ray") or (
            isinstance(e, RuntimeError) and str(e) in _LOCK_RACE):
        return
    _write_line(f"warning: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")


@contextlib.contextmanager
def sigterm_interrupts(line, when_cluster_gone=None):
    """While a run or a grid runs (in its process's main thread), `kill PID` (SIGTERM, what `timeout` and job
    schedulers send) stops it as Ctrl-C does: one started in the background by a script (`nohup … &`) ignores
    SIGINT, so Ctrl-C's signal never reaches it. Installed after Ray's start, whose own handler aborts.

    `line()` is what an interrupt says on stderr (how to continue), once: as a SIGTERM arrives, or as a Ctrl-C
    leaves the block (or an error the interrupt raised where it landed: `interrupt_behind`); the interrupt then
    leaves as `Interrupted`. A SIGTERM sent to the process group reaches Ray's processes at the same moment (Ray
    blocks only SIGINT in them): the main thread may then be inside a Ray call that waits a minute for a GCS
    that is gone before Python can raise anything, and Ray's own core may end
    this process first (status 1) when its raylet ends at once. So a watcher thread hears every signal as it
    arrives (`signal.set_wakeup_fd`) and says the line then; if the local cluster's GCS or raylet ends while the
    block lasts (within `CLUSTER_DRAIN_S`: a raylet with workers to stop takes about 10 s), it calls
    `when_cluster_gone()` and ends the process at once (status 130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    said = threading.Lock()  # taken by whoever says the line: once
    said_text = [""]
    inside = [True]  # the block's body runs: a SIGTERM interrupts it (not the block's own way out)
    _SIGNALLED.clear()  # (this block's: a process may run several, one after the other)
    _OWN_SHUTDOWN.clear()
    from tqdm import tqdm

    tqdm.get_lock()  # (made here, in the main thread: not in the watcher's race with Ray's core)

    def text() -> str:
        try:
            return line()
        except Exception as e:  # noqa: BLE001 - the interrupt is said all the same
            return f"python -m learner.main: interrupted ({type(e).__name__} finding where to continue)"

    spoken = threading.Event()

    def say() -> bool:
        """Say the line unless it was (or is being) said: whether this call said it."""
        if not said.acquire(blocking=False):
            return False
        said_text[0] = text()
        _write_line(said_text[0])
        spoken.set()
        return True

    def say_again_if_changed() -> None:  # (on the way out: a checkpoint or the summary written since the signal)
        if spoken.wait(2.0):  # (the watcher may be saying it this moment)
            now = text()
            if now != said_text[0]:
                _write_line(now)

    def terminated(signum, frame):
        _SIGNALLED.set()
        if inside[0]:
            raise KeyboardInterrupt

    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.signal(signal.SIGTERM, terminated)
    previous_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    ended = threading.Event()

    def cluster_ends() -> bool:  # (a SIGTERM to this process alone leaves the cluster up: the block ends first)
        deadline = time.monotonic() + CLUSTER_DRAIN_S
        while not ended.is_set() and time.monotonic() < deadline:
            if local_cluster_gone(wait=0.0):
                return True
            time.sleep(0.05)
        return False

    def watch():
        try:
            while True:
                got = os.read(read, 64)
                if not got:  # the block ended: its write end closed
                    return
                if signal.SIGTERM not in got:
                    continue
                say()
                # (a SIGTERM to this process alone: its own shutdown may have ended the cluster, and the block then
                # ends in seconds on its own, writing and releasing what it must)
                if cluster_ends():
                    if _OWN_SHUTDOWN.is_set() and ended.wait(OWN_SHUTDOWN_S):
                        return
                    break
        except OSError:
            return
        finally:
            os.close(read)
        try:
            if when_cluster_gone is not None:
                when_cluster_gone()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(130)

    watcher = threading.Thread(target=watch, name="sigterm-watch", daemon=True)
    watcher.start()
    try:
        yield
    except BaseException as e:
        inside[0] = False
        if isinstance(e, GeneratorExit):
            raise
        if interrupt_behind(e) is not None:  # (or an error on the interrupt's way out, as a run closed: said after)
            first = say()
            say_beside(e)
            if not first:
                say_again_if_changed()
            raise Interrupted from None
        if not said.acquire(blocking=False):  # a SIGTERM said the line: this error is what it led to (an actor it
            say_beside(e)  # ended too), the interrupt
            say_again_if_changed()
            raise Interrupted from e
        raise  # (and no line after it: the lock is taken)
    else:
        inside[0] = False
        if not said.acquire(blocking=False):  # a SIGTERM as the body ended, said already: as the line said
            say_again_if_changed()
            raise Interrupted
    finally:  # (a handler installed outside Python reads as None: Ray's, gone with Ray's shutdown)
        inside[0] = False
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        ended.set()
        os.close(write)  # the watcher reads EOF and ends: waited for, so no thread is left at the process's exit
        watcher.join(timeout=5)
