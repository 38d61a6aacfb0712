"""A method's own flags: a frozen dataclass in its folder (`<method>/flags.py`) whose fields are `flag`s, each
with its default and help text, and whose `check()` raises `FlagError` at the first bad value.
`beta_dqn.configuration.fields.Config` holds an instance of every registered method's `Flags` (`config.methods`), and
the command line, grids and resume name each flag flat, by its own name (a flag is read by its method, and by the
methods its `also` names).
"""

from __future__ import annotations

from dataclasses import field


class FlagError(ValueError):
    """A bad value of a method's flag: the flag's name and what is allowed
    (`beta_dqn.configuration.errors.ConfigError`)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


def flag(default, help: str, also: tuple[str, ...] = ()):
    """A method's flag: it changes what a run computes (a grid axis when given as a comma list); `also`: other
    methods that read it."""
    return field(default=default, metadata={"help": help, "also": tuple(also)})


def positive(flags, *names: str) -> None:
    for n in names:
        v = getattr(flags, n)
        if not v > 0:
            raise FlagError(n, f"must be > 0, got {v}")


def non_negative(flags, *names: str) -> None:
    for n in names:
        v = getattr(flags, n)
        if v < 0:
            raise FlagError(n, f"must be >= 0, got {v}")


def open_unit(flags, *names: str) -> None:
    for n in names:
        v = getattr(flags, n)
        if not 0.0 < v < 1.0:
            raise FlagError(n, f"must be in (0, 1), got {v}")


def choice(flags, name: str, allowed: tuple[str, ...]) -> None:
    v = getattr(flags, name)
    if v not in allowed:
        raise FlagError(name, f"{v!r} is not one of: {', '.join(allowed)}")
