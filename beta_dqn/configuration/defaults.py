"""The environments' own γ and learning rate (spec §4), read from `defaults.toml` beside this module: a file in
`--config`'s format (tests/test_config_file.py reads it as one), read here by its two keys alone."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from actors.envs import canonical_name, family_of

DEFAULTS = Path(__file__).with_name("defaults.toml")


@functools.cache
def _table() -> dict:
    return tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))


def env_defaults(name: str) -> tuple[float, float]:
    """An environment's default γ and learning rate (defaults.toml's for it, else its family's, else defaults.toml's
    top level), by its name alone: nothing is imported or made (a report of
    a `module:Id` run reads them where the user's module is not importable)."""
    table, family = _table(), family_of(name)
    own = table.get("envs", {}).get(canonical_name(name), {})
    gamma = own.get("gamma", family.gamma if family.gamma is not None else table["gamma"])
    return float(gamma), float(own.get("lr", family.lr if family.lr is not None else table["lr"]))
