"""The environments' own γ and learning rate (spec §4), read from `defaults.toml` beside this module: a file in
`--config`'s format (tests/test_config_file.py reads it as one), read here by its two keys alone."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from actors.envs import canonical_name

DEFAULTS = Path(__file__).with_name("defaults.toml")


@functools.cache
def _table() -> dict:
    return tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))


def env_defaults(name: str) -> tuple[float, float]:
    """An environment's default γ and learning rate, by its name alone: nothing is imported or made (a report of
    a `module:Id` run reads them where the user's module is not importable)."""
    table = _table()
    own = table.get("envs", {}).get(canonical_name(name), {})
    return float(own.get("gamma", table["gamma"])), float(own.get("lr", table["lr"]))
