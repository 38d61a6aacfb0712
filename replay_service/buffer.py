"""A FIFO ring of transitions in numpy, with observations stored compactly (spec §4: 100k, FIFO).

Boolean and one-hot observations (MinAtar, CliffWalk) are bit-packed: 1 bit per entry.
"""

from __future__ import annotations

import ast

import numpy as np

from replay_service.schema import OBSERVATIONS, Field, Schema


class ObsPacker:
    """Bit-packs observations whose entries are all 0/1 (bool, or CliffWalk's uint8 one-hot)."""

    def __init__(self, shape: tuple[int, ...], dtype: str, binary: bool):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.size = int(np.prod(shape))
        self.binary = binary

    def pack(self, obs: np.ndarray) -> np.ndarray:
        flat = obs.reshape(obs.shape[0], self.size)
        return np.packbits(flat.astype(bool), axis=1) if self.binary else flat.astype(self.dtype, copy=False)

    def unpack(self, packed: np.ndarray) -> np.ndarray:
        if self.binary:
            flat = np.unpackbits(packed, axis=1, count=self.size).astype(self.dtype, copy=False)
        else:
            flat = packed
        return flat.reshape(packed.shape[0], *self.shape)

    @property
    def packed_shape(self) -> tuple[int]:
        return ((self.size + 7) // 8,) if self.binary else (self.size,)

    @property
    def packed_dtype(self) -> np.dtype:
        return np.dtype(np.uint8) if self.binary else self.dtype


def make_packer(spec) -> ObsPacker:
    """The packer of an environment's observations (`actors.envs.EnvSpec`): bit-packed when binary."""
    return ObsPacker(spec.obs_shape, spec.obs_dtype, spec.binary_obs)


class ReplayBuffer:
    """Fixed-capacity FIFO ring. `insert` takes a chunk of packed transitions; `sample` is uniform. It holds
    the columns of `schema.Schema(extras)`: the core's and the method's extras."""

    def __init__(self, capacity: int, packed_shape: tuple[int, ...], packed_dtype, seed: int = 0,
                 extras: tuple[Field, ...] = ()):
        self.capacity = capacity
        self.schema = Schema(tuple(extras))
        self.columns = {name: np.zeros((capacity, *packed_shape), dtype=packed_dtype) for name in OBSERVATIONS}
        self.columns.update({f.name: np.zeros(capacity, dtype=f.dtype) for f in self.schema.columns})
        self.cursor = 0  # next slot to write
        self.size = 0
        self.inserted = 0  # total ever inserted
        self.rng = np.random.default_rng(seed)

    def insert(self, chunk: dict[str, np.ndarray]) -> int:
        n = len(chunk["action"])
        if n > self.capacity:  # only the newest `capacity` survive FIFO anyway
            chunk = {k: chunk[k][-self.capacity:] for k in self.columns}
            self.inserted += n - self.capacity
            n = self.capacity
        idx = (self.cursor + np.arange(n)) % self.capacity
        for name, column in self.columns.items():
            column[idx] = chunk[name]
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
        self.inserted += n
        return self.inserted

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        if self.size == 0:
            raise RuntimeError("sample from an empty replay buffer")
        idx = self.rng.integers(0, self.size, size=batch_size)
        return {name: column[idx] for name, column in self.columns.items()}

    def state_dict(self) -> dict:
        """Everything, for a snapshot in the run directory (plain arrays and numbers: np.savez-able)."""
        state: dict[str, np.ndarray | int] = {name: column[:self.size] for name, column in self.columns.items()}
        state.update(cursor=self.cursor, size=self.size, inserted=self.inserted,
                     rng=np.frombuffer(repr(self.rng.bit_generator.state).encode(), dtype=np.uint8))
        return state

    def load_state_dict(self, state) -> None:
        """A snapshot's contents back (ValueError, one line, where they do not fit this buffer or the sampler's
        random state does not read: the text of a literal, never code)."""
        self.size, self.cursor, self.inserted = int(state["size"]), int(state["cursor"]), int(state["inserted"])
        if not 0 <= self.size <= self.capacity or not 0 <= self.cursor < self.capacity:
            raise ValueError(f"its size {self.size} or cursor {self.cursor} does not fit a buffer of {self.capacity}")
        for name, column in self.columns.items():  # (a snapshot of an older version may hold more: not read)
            if len(state[name]) != self.size:
                raise ValueError(f"its column {name!r} holds {len(state[name])} rows, not its size {self.size}")
            column[:self.size] = state[name]
        try:
            self.rng.bit_generator.state = ast.literal_eval(bytes(state["rng"]).decode())
        except (SyntaxError, ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError, MemoryError):
            raise ValueError("its sampler's random state is damaged") from None

    def stats(self) -> dict[str, int]:
        return {"size": self.size, "inserted": self.inserted, "capacity": self.capacity}
