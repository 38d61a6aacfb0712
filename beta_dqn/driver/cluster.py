"""The run's Ray cluster: joining a running one (`join_cluster`: an address that does not answer, a token refused, each
one line), starting one on this machine (`start_local_cluster`; `cluster_to_start`: its CPUs; `ClusterStartError`: its
start timed out),
what every worker of it is given (`worker_runtime_env`), and the reaper that ends what is left of a cluster started here
once this process is gone (`start_reaper`). `beta_dqn.driver.runtime.RayBackend` uses them; this module does not import
Ray (`join_cluster` is handed it).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile

import psutil

from actors.envs import PLUGINS as ENV_PLUGINS
from actors.envs import env_modules
from beta_dqn.configuration.flags import ConfigError
from learner.methods import PLUGINS
from replay_service.backends import PLUGINS as REPLAY_PLUGINS

_THREAD_VARS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _worker_vars() -> dict[str, str]:
    """What Ray's workers are given: one thread per numeric library, and the methods, replay backends and
    environment families registered from outside the project (`learner.methods.PLUGINS`,
    `replay_service.backends.PLUGINS`, `actors.envs.PLUGINS`: a worker of a joined cluster inherits nothing of this
    process; the modules must be importable there too, e.g. from the same checkout on PYTHONPATH)."""
    plugins = {name: os.environ[name] for name in (PLUGINS, REPLAY_PLUGINS, ENV_PLUGINS) if os.environ.get(name)}
    return {**_THREAD_VARS, **plugins}
# set in every process of a Ray cluster that a run or grid started on this machine (a grid's runs among them)
THIS_MACHINE_VAR = "BETA_DQN_THIS_MACHINE"


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


def worker_runtime_env(envs, wrappers=(), **env_vars) -> dict:
    """What every Ray worker of the run is given: `_worker_vars`, and the user's modules behind `module:Id`
    envs and `--wrappers` (`actors.envs.env_modules`), sent to every node by Ray (`py_modules`)."""
    shipped = env_modules(envs, wrappers)
    return {"env_vars": {**_worker_vars(), **env_vars}, **({"py_modules": shipped} if shipped else {})}


def join_cluster(ray, address: str, envs=(), wrappers=()) -> None:
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
            ray.init(address=address, log_to_driver=False, runtime_env=worker_runtime_env(envs, wrappers),
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


def drop_token_notice() -> None:
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


def start_reaper():
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


# Ray's settings for a cluster that a run starts on this machine: no workers started ahead of the actors that ask
# for them. Ray starts one per CPU when its node comes up and more when the driver connects; a run's actors take
# workers of their own runtime environment, so on 2 cores 2 of a Ray run's 9 worker processes sat unused, importing
# Ray beside the actors' own start (bench/ray_start.py measures the start with and without these)
LOCAL_SYSTEM_CONFIG = {"enable_worker_prestart": False, "prestart_worker_first_driver": False}


@contextlib.contextmanager
def _any_free_agent_port(ray):
    """While it lasts, a node that `ray.init` starts has its dashboard agent listen on a port the system picks.
    `ray.init` gives it no argument for it, and its default, 52365, is one port for the whole machine: a second
    cluster here (another run's, a test session's) tries it 6 times over 3.4 s, logs a traceback and goes on
    without it, and Ray's startup waits that long. Ray's own `cluster_utils` picks any port the same way (None, as
    here). Where Ray's parameters no longer take the name, nothing changes. (Not for two threads at once: one
    process starts one cluster, in `ray.init`.)"""
    params = ray._private.parameter.RayParams
    init = params.__init__
    if "dashboard_agent_listen_port" not in inspect.signature(init).parameters:
        yield
        return

    def any_port(self, *args, dashboard_agent_listen_port=None, **kwargs):
        init(self, *args, dashboard_agent_listen_port=dashboard_agent_listen_port, **kwargs)

    params.__init__ = any_port
    try:
        yield
    finally:
        params.__init__ = init


def start_local_cluster(ray, runtime_env: dict, num_cpus: int | None = None, **init) -> None:
    """Start a Ray cluster of this machine alone (its CPUs: `num_cpus`, else `cluster_to_start`'s) and join it.
    Ray's own INFO lines ("Started a local Ray instance") stay off the terminal; its startup timeout is one line
    (`ClusterStartError`). `init`: more of `ray.init`'s arguments (the test suite's cluster: a temp dir of its own)."""
    try:
        with _any_free_agent_port(ray):
            # "local" always starts a fresh cluster (a stale ray_current_cluster file is ignored)
            ray.init(address="local", num_cpus=cluster_to_start() if num_cpus is None else num_cpus,
                     include_dashboard=False, dashboard_host="127.0.0.1", log_to_driver=False, runtime_env=runtime_env,
                     logging_level=logging.WARNING, _system_config=LOCAL_SYSTEM_CONFIG, **init)
    except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for it
        error = ClusterStartError.of(e)
        if error is e:
            raise
        raise error from None


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
