"""Flags of a part of its own: a method's (`learner.methods.flags`) or a replay backend's (`ReplayBackend.flags`).
Such flags are a frozen dataclass in the part's folder whose fields are `flag`s, each with its default and help
text, and whose `check()` raises `FlagError` at the first bad value. `beta_dqn.configuration.fields.Config`
holds an instance of each registered part's `Flags` (`config.methods`, `config.replays`); the command line, a
--config file, config.json, grids and resume name every flag flat, by its own name. (Here, the lowest of the
packages whose parts declare flags, so that both can import it.)
"""

from __future__ import annotations

from dataclasses import field

ROLES = ("computes", "run", "bookkeeping")  # as `beta_dqn.configuration.fields` documents them


class FlagError(ValueError):
    """A bad value of a part's flag: the flag's name and what is allowed
    (`beta_dqn.configuration.errors.ConfigError`)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


def flag(default, help: str, also: tuple[str, ...] = (), role: str = "computes", resume: tuple[str, ...] = (),
         after: str = ""):
    """A part's flag. `role`: "computes" (what a run computes; a grid axis when given as a comma list), "run"
    (where and how a run executes and reports) or "bookkeeping" (names a run); `resume`: what may give it a new
    value when continued with --resume ("run", "grid"); `also` (a method's flag; a backend's is read by every
    method, and one that "computes" is a grid axis for every run): other methods that read it;
    `after`: the shared flag it follows in the flags' order (--help's groups, config.json, a grid's run names;
    default: a method's flags before the evaluation block, a backend's after --replay)."""
    if role not in ROLES:  # (no "secret": a part's secret belongs in its value or a file it names, never a flag)
        raise ValueError(f"flag role {role!r} is not one of: {', '.join(ROLES)}")
    if not set(resume) <= {"run", "grid"}:
        raise ValueError(f"flag resume {resume!r}: name 'run', 'grid' or both")
    return field(default=default, metadata={"help": help, "also": tuple(also), "role": role,
                                            "resume": tuple(resume), "after": after})


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
