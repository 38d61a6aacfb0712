"""Redis URLs as `--replay` takes them, and their passwords: parsed, checked, masked and filled in. Nothing here
connects (`configuration` reads it); `local_redis` starts servers and asks them, `redis_backend` is the backend.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast
from urllib.parse import parse_qsl, quote, urlsplit

from replay_service.files import Unreadable, read_bounded

PASSWORD_FILE_BYTES = 64 << 10  # a password file holds a line


class RedisSetupError(RuntimeError):
    """Redis cannot be used as asked (no binary, a bad URL, no answer); the message is one line."""


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
    if password is not None and parts is not None and "@" not in tail[len(parts.netloc):]:
        user = f"{parts.username}:" if parts.username else ":"
        return parts._replace(netloc=f"{user}***@{parts.netloc.rsplit('@', 1)[1]}").geturl()
    if "@" not in tail:
        return url
    # anything else with an @ (a password with URL syntax in it: `/`, `?`, `#`): all up to the last @ goes
    return f"{head}{sep}***@{tail.rsplit('@', 1)[1]}"


def redact_urls(replay: str) -> str:
    """--replay's value with every URL's password masked (a value that is no URL, `memory`, passes through)."""
    if "://" not in replay:
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
    from redis.connection import URL_QUERY_ARGUMENT_PARSERS  # (redis-py's parsers: imported, nothing connects)

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
        parser = cast("Callable[[str], object] | None", URL_QUERY_ARGUMENT_PARSERS.get(name))  # (typed as object)
        try:
            if parser is not None:
                parser(value)
        except (TypeError, ValueError):
            raise RedisSetupError(f"{where!r}: {name}={value!r} is not a value redis-py takes for {name}") from None
