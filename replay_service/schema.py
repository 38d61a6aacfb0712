"""The transition, declared once: what an actor's chunk, the replay (in-memory rings and Redis records) and
the learner's batch hold.

Every method stores the core: the observation and the next one (packed by `buffer.ObsPacker`), the action,
the reward and whether the episode terminated (truncation bootstraps, so the learner never reads it). A
method may declare per-step extras of its own (`learner.methods.contracts.Acting.extras`; LESSON stores the option
active at each step): each a numpy column with a dtype and, for integers, the range a value must lie in. The
actor's chunk, `ReplayBuffer`, `codec.Codec` and the learner's batch all read a `Schema` made from the
method's extras, so nothing outside the method's folder names them. Records for an external replay also
carry `truncated` and the episode's number, for readers other than the learner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OBSERVATIONS = ("obs", "next_obs")  # packed observations, in the replay's packed layout


@dataclass(frozen=True)
class Field:
    """One per-step column: its name, numpy dtype and (integers) the inclusive range of its values."""

    name: str
    dtype: str  # "int64", "int8", "float32" or "bool"
    low: int | None = None
    high: int | None = None

    @property
    def kind(self) -> type:
        """The Python type of its value in a record."""
        dtype = np.dtype(self.dtype)
        return bool if dtype == np.bool_ else int if np.issubdtype(dtype, np.integer) else float

    def bounds(self) -> tuple[int, int] | None:
        """The range a record's value must lie in (integers): the declared one, else the dtype's."""
        if self.kind is not int:
            return None
        info = np.iinfo(np.dtype(self.dtype))
        return (int(info.min) if self.low is None else self.low, int(info.max) if self.high is None else self.high)


CORE = (Field("action", "int64"), Field("reward", "float32"), Field("terminated", "bool"))
RECORD_ONLY = (Field("truncated", "bool"), Field("episode", "int64"))  # in records and chunks; not stored
RESERVED = frozenset({*OBSERVATIONS, *(f.name for f in CORE + RECORD_ONLY),
                      # a record's bookkeeping (`codec`) and a chunk's (`actors.actor.Actor._chunk`)
                      "v", "dtype", "shape", "packed", "actor", "version", "chunk_id"})


@dataclass(frozen=True)
class Schema:
    """The core fields and a method's extras."""

    extras: tuple[Field, ...] = ()

    def __post_init__(self):
        names = [f.name for f in self.extras]
        clash = sorted((set(names) & RESERVED) | {n for n in names if names.count(n) > 1})
        if clash:
            raise ValueError(f"extra fields {clash} clash with the core's or each other's names")
        for f in self.extras:
            if f.dtype not in ("bool", "int8", "int16", "int32", "int64", "float32"):
                raise ValueError(f"extra field {f.name!r}: dtype {f.dtype!r}; allowed: bool, int8-64, float32")
            if f.kind is not int and (f.low, f.high) != (None, None):
                raise ValueError(f"extra field {f.name!r}: a range is for integer fields only")
            if f.kind is int:
                info, (low, high) = np.iinfo(np.dtype(f.dtype)), f.bounds()
                if not info.min <= low <= high <= info.max:
                    raise ValueError(f"extra field {f.name!r}: range [{low}, {high}] not within {f.dtype}'s "
                                     f"[{info.min}, {info.max}]")

    @property
    def columns(self) -> tuple[Field, ...]:
        """The stored per-step columns besides the observations: the core's, then the extras."""
        return CORE + self.extras

    @property
    def stored(self) -> tuple[str, ...]:
        """Every array a replay slot holds, by name."""
        return OBSERVATIONS + tuple(f.name for f in self.columns)

    def row_bytes(self, packed_shape: tuple[int, ...], packed_dtype) -> int:
        """What one replay slot holds, in bytes."""
        obs = int(np.prod(packed_shape)) * np.dtype(packed_dtype).itemsize
        return 2 * obs + sum(np.dtype(f.dtype).itemsize for f in self.columns)

    def column(self, name: str, values) -> np.ndarray:
        """A chunk's or a batch's column as its declared dtype."""
        return np.asarray(values, dtype=self.field(name).dtype)

    def field(self, name: str) -> Field:
        return next(f for f in self.columns + RECORD_ONLY if f.name == name)
