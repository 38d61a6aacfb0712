"""The replay backends, one module each and one line in `REPLAY_BACKENDS`: what `--replay VALUE` stores a run's
transitions in. A backend (`contract.ReplayBackend`) says which values it takes, checks them (no I/O: the
configuration asks), checks what it needs of the world before a run starts (`preflight`: the driver asks), says
when a stopped run of it cannot continue, how much of this machine's memory it takes, and opens the run's sampler
(`client.ReplaySampler`), whose ports the actors insert into.

The two of the project: `memory` (`memory_backend`: shards as Ray actors, or objects in a serial run's process)
and `redis` (`redis_backend`: `redis-local` servers the run starts, or redis:// URLs of servers elsewhere).

A backend may also live outside this package, in a folder of its own: a module that calls `register` and is
named in the environment variable `BETA_DQN_REPLAYS` (`tests/toy_replay` is one, run end to end by
`tests/test_replay_folder.py`).

This module imports nothing that connects: a backend imports its clients where it opens or preflights.
"""

from __future__ import annotations

import re

from replay_service.contract import ReplayBackend
from replay_service.memory_backend import MemoryBackend
from replay_service.plugins import load_plugins
from replay_service.redis_backend import RedisBackend

REPLAY_BACKENDS: dict[str, ReplayBackend] = {  # a backend's name -> the backend
    "memory": MemoryBackend(),
    "redis": RedisBackend(),
}
PLUGINS = "BETA_DQN_REPLAYS"  # environment variable: modules (comma-separated) that `register` backends of their own


def register(name: str, backend: ReplayBackend) -> None:
    """Add a backend that lives outside this package (a module named in `PLUGINS` calls it when imported; Ray's
    workers inherit the variable, so they register it too)."""
    if name in REPLAY_BACKENDS:
        raise ValueError(f"a replay backend named {name!r} is registered already")
    params = getattr(backend.flags, "__dataclass_params__", None)
    if backend.flags is not None and not (params is not None and params.frozen):
        raise ValueError(f"replay backend {name!r}: its flags class {backend.flags.__name__} is not a frozen "
                         "dataclass; declare it with @dataclass(frozen=True)")
    if backend.flags is not None and not callable(getattr(backend.flags, "check", None)):
        raise ValueError(f"replay backend {name!r}: its flags class {backend.flags.__name__} has no check() "
                         "(a method that raises replay_service.flags.FlagError at a bad value)")
    names = {n for b in REPLAY_BACKENDS.values() for n in b.names}
    schemes = {b.scheme for b in REPLAY_BACKENDS.values() if b.scheme}
    if names & set(backend.names) or backend.scheme in schemes:
        raise ValueError(f"replay backend {name!r} takes a --replay value another backend takes")
    REPLAY_BACKENDS[name] = backend


def backend_for(value: str) -> ReplayBackend | None:
    """The backend that takes --replay `value` (by name, or by its URLs' scheme), or None."""
    for backend in REPLAY_BACKENDS.values():
        if value in backend.names:
            return backend
    scheme = value.strip().partition("://")[0] if "://" in value else None
    return next((b for b in REPLAY_BACKENDS.values() if b.scheme and b.scheme == scheme), None)


def masked(value: str) -> str:
    """--replay's value as it may be written and shown: as its backend masks it; a value no backend takes with
    everything before an @ of each of its URLs masked (it may hold a password)."""
    backend = backend_for(value)
    return backend.mask(value) if backend is not None else re.sub(r"://[^,]*@", "://***@", value)


def choices() -> str:
    """What --replay takes, in words: `memory, redis-local or redis:// URLs`."""
    shown = [name for backend in REPLAY_BACKENDS.values() for name in backend.shown]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


load_plugins(PLUGINS, "replay backends")  # (last: a plugin imports this module's names)
