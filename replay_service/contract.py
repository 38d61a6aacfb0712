"""What a replay backend is (`backends` registers them): the questions the configuration, the driver and the
run ask of the store of a run's transitions. Nothing here connects."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


class BackendError(ValueError):
    """A bad value for a backend: the flag's name and what is allowed (`beta_dqn.configuration.errors.ConfigError`)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


class ReplayBackend:
    """What the driver and the configuration ask of a replay backend. `cfg` is the run's configuration
    (`beta_dqn.configuration.fields.Config`: the shared flags as attributes, any flag by `cfg.value(name)`, the
    backend's own typed by `cfg.flags(its Flags)`)."""

    flags: type | None = None  # its own flags (`replay_service.flags`), a frozen dataclass, or None
    names: tuple[str, ...] = ()  # the --replay values it takes by name
    scheme: str = ""  # a URL scheme it takes: --replay SCHEME://... (several, comma-separated: a shard each)
    shown: tuple[str, ...] = ()  # how help and errors name what it takes
    entries: tuple[str, ...] = ()  # names its runs may make in a run directory (a file, or a folder)

    def check(self, cfg) -> None:
        """BackendError at the first value it cannot use (nothing reached: no server asked, no file read)."""

    def settle(self, cfg) -> dict:
        """Fields the value decides (e.g. the number of shards a list of URLs names), for `resolve`."""
        return {}

    def mask(self, value: str) -> str:
        """The value as it may be written and shown (a password masked)."""
        return value

    def unmask(self, value: str, flags: Mapping[str, Any], what: str) -> str:
        """A saved value with what `mask` took out given back from off the command line, for resuming `what`
        (a run or a grid; `flags`: its flags by name, as config.json holds them); BackendError saying what to
        provide when none is given."""
        return value

    def fill_secrets(self, value: str, flags: Mapping[str, Any]) -> str:
        """The value with secrets given off the command line (a file one of the run's `flags` names, a variable)
        filled in, where a grid starts: the nodes that run its runs need not have them."""
        return value

    def moves(self, old: str, new: str) -> bool:
        """Whether a resumed run may be given `new` for its saved `old` (the same data at a new address)."""
        return False

    def preflight(self, cfg) -> None:
        """BackendError when what the run needs is not there (a binary, a server that answers)."""

    def cannot_resume(self, config: dict) -> str:
        """Why a stopped run of this configuration (its config.json) cannot continue from its checkpoint, or ""."""
        return ""

    def memory_bytes(self, cfg, row_bytes: int) -> int:
        """This machine's memory the replay must be granted (the largest of what it fills and what it allocates
        whole), for transitions of `row_bytes` each; 0 when it lives elsewhere."""
        return 0

    def run_dir_entries(self, cfg) -> tuple[str, ...]:
        """Which of its `entries` a run of `cfg` makes as it starts (a trailing / for a folder): the run's to
        remove if it cannot start."""
        return ()

    def open(self, cfg, spec, backend, out: Path, resume: dict | None, extras: tuple):
        """The run's sampler (`client.ReplaySampler`): its shards made (by `backend`, the run's runtime, where
        they are its parts), `resume` (a checkpoint) continued. `extras`: the method's per-step fields."""
        raise NotImplementedError
