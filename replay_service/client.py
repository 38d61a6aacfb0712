"""The run's side of the replay: which shard an actor's chunks go to, the replay ratio as a contract
(`RateLimiter`), and drawing the learner's batches uniformly over every shard (`ReplaySampler`: the
in-memory shards' `ShardedReplay` here, Redis's `replay_service.redis_replay.RedisReplay`)."""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path
from typing import Protocol

import numpy as np

from replay_service.files import no_links, write_atomically

SAMPLE_BATCHES = 8  # batches per replay sample call on Ray (data at most 2×8 updates old: negligible at 100k)
PREFETCH_CALLS = 2


def shard_of(actor_id: int, n_shards: int) -> int:
    return actor_id % n_shards


def split_batch(sizes: np.ndarray, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """How many of a batch each shard gives so that every stored transition is equally likely.

    Uniform over the union of shards = shard chosen with probability ∝ its size, then uniform inside.
    """
    total = sizes.sum()
    if total == 0:
        raise RuntimeError("sample from an empty replay")
    return rng.multinomial(batch_size, sizes / total)


def concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if len(parts) == 1:
        return parts[0]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


class RateLimiter:
    """The replay ratio as a contract: updates = ratio × (env steps inserted − learning_starts).

    The learner may update while it owes updates; actors may dispatch a chunk while the steps
    committed (inserted + in flight) stay within `slack` env steps of what the learner has consumed.
    """

    def __init__(self, ratio: float, learning_starts: int, batch_size: int, slack: int):
        self.ratio, self.learning_starts, self.batch_size = ratio, learning_starts, batch_size
        self.slack = slack  # at least one chunk, so a chunk always fits when the learner owes nothing
        self.first_update = max(learning_starts, batch_size)  # env steps before the first update

    def owed(self, env_steps: int) -> int:
        """Updates due after `env_steps` inserted steps."""
        if env_steps < self.first_update:
            return 0
        return math.floor(self.ratio * (env_steps - self.learning_starts))

    def may_update(self, updates: int, env_steps: int) -> bool:
        return updates < self.owed(env_steps)

    def may_collect(self, committed_after: int, updates: int) -> bool:
        consumed = max(self.learning_starts + (updates + 1) / self.ratio, self.first_update)
        return committed_after <= consumed + self.slack


def achieved_ratio(updates: int, env_steps: int, learning_starts: int) -> float:
    """Updates per env step inserted after learning started (the quantity the limiter holds)."""
    return updates / max(env_steps - learning_starts, 1)


class ReplayCheckpoint(Protocol):
    """How a replay is saved with the run's checkpoint and continued from it: in-memory shards as snapshot files
    in the run directory, Redis as the rings' counters (the servers keep the data)."""

    def snapshot_files(self, env_steps: int) -> list[str]:
        """The files (relative to the run directory) that `state_dict(out, env_steps)` will write: the run records
        them before they exist, so a run killed mid-write still knows them as its own."""

    def state_dict(self, out: Path, env_steps: int) -> dict:
        """What a checkpoint keeps (files it needs, `snapshot_files`, are written under `out` first)."""

    def checkpoint_written(self, out: Path, state: dict) -> list[str]:
        """The checkpoint holding `state` is on disk: files this run wrote for its previous checkpoint that this one
        does not need are removed; their paths (relative to `out`) are returned."""

    def load_state_dict(self, state: dict, out: Path) -> None:
        """Continue from a checkpoint's `state_dict()`."""


class ReplaySampler(ReplayCheckpoint, Protocol):
    """The learner's view of a sharded replay, whatever stores it (and, as `ReplayCheckpoint`, how it is saved)."""

    ports: list  # what each shard's actors insert into (`insert(chunk)`)

    def added(self, shard: int, steps: int) -> None:
        """The run harvested a chunk of `steps` transitions that shard `shard` acknowledged."""

    def next_batch(self) -> dict[str, np.ndarray]:
        """One batch, uniform over every transition harvested so far."""

    def stats(self) -> list[dict]:
        """Per shard: transitions inserted, held, and records rejected (by kind)."""

    def rejected(self) -> dict | None:
        """Records the learner's side refused so far, by kind (None where records cannot be malformed)."""

    def locations(self) -> list[str]:
        """Where the replay lives, for the summary: each Redis server's URL without its password ([]: in
        the run's own processes)."""

    def close(self, started: bool = True) -> None:
        """Stop what it started (threads, servers); `started=False`: the run never started, and lets go of
        what it claimed (a Redis run id)."""


class ShardIndex:
    """What every sampler keeps: transitions harvested per shard and the rng that splits a batch over them."""

    def __init__(self, n_shards: int, capacity: int, batch_size: int, seed: int):
        self.inserted = np.zeros(n_shards, dtype=np.int64)
        self.shard_capacity = capacity // n_shards
        self.batch_size = batch_size
        self.split_rng = np.random.default_rng(seed + 17)

    def added(self, shard: int, steps: int) -> None:
        self.inserted[shard] += steps

    def sizes(self) -> np.ndarray:
        """Transitions each shard holds (as far as the run has harvested)."""
        return np.minimum(self.inserted, self.shard_capacity)

    def split(self) -> np.ndarray:
        return split_batch(self.sizes(), self.batch_size, self.split_rng)

    def index_state(self) -> dict:
        return {"split_rng": self.split_rng.bit_generator.state, "shard_inserted": self.inserted.tolist()}

    def load_index_state(self, state: dict) -> None:
        self.split_rng.bit_generator.state = state["split_rng"]
        self.inserted = np.asarray(state["shard_inserted"], dtype=np.int64)


class ShardedReplay(ShardIndex):
    """In-memory shards (`replay_service.buffer.ReplayBuffer`, hosted by the run's backend) as one sampler.

    Serial: one batch sampled when asked (deterministic). Ray: batches come `SAMPLE_BATCHES` per shard call,
    with `PREFETCH_CALLS` calls in flight, so the learner rarely waits and pays a round trip per 8 updates.
    """

    def __init__(self, backend, handles: list, capacity: int, batch_size: int, seed: int):
        super().__init__(len(handles), capacity, batch_size, seed)
        self.backend, self.handles = backend, handles
        self.ports = [backend.port(h) for h in handles]
        self.n_batches, self.depth = (SAMPLE_BATCHES, PREFETCH_CALLS) if backend.concurrent else (1, 1)
        self.snapshots: list[str] = []  # the files of the last checkpoint this run wrote or resumed from
        self.prefetched: deque = deque()  # sample calls in flight
        self.ready: deque = deque()  # sampled batches not used yet

    def _sample_future(self):
        """Ask every shard, in one call each, for its part of `n_batches` uniform batches."""
        counts = np.stack([self.split() for _ in range(self.n_batches)])
        futures = [self.backend.call(self.handles[s], "sample", int(n)) for s, n in enumerate(counts.sum(0)) if n > 0]
        return counts, futures

    def next_batch(self) -> dict[str, np.ndarray]:
        if not self.ready:
            while len(self.prefetched) < self.depth:
                self.prefetched.append(self._sample_future())
            counts, futures = self.prefetched.popleft()
            parts = self.backend.get(futures)
            per_shard = counts[:, counts.sum(0) > 0]  # (batches, shards asked): rows each batch takes
            starts = np.cumsum(per_shard, axis=0) - per_shard
            for j in range(len(counts)):
                self.ready.append(concat([{k: v[lo:lo + n] for k, v in part.items()}
                                          for part, lo, n in zip(parts, starts[j], per_shard[j], strict=True)]))
        return self.ready.popleft()

    def stats(self) -> list[dict]:
        return [self.backend.get(self.backend.call(h, "stats")) for h in self.handles]

    def rejected(self) -> dict | None:
        return None  # chunks travel as arrays between our own processes: nothing to decode

    def state_dict(self, out: Path, env_steps: int) -> dict:
        """Each shard's contents to `out/replay/shard<i>-<env_steps>.npz` (`files.write_atomically`: on the disk
        before the checkpoint that names them); the checkpoint names them, and once it is written the files of
        the checkpoint before it are removed (`checkpoint_written`)."""
        (out / "replay").mkdir(exist_ok=True)
        states = self.backend.get([self.backend.call(h, "state_dict") for h in self.handles])
        files = self.snapshot_files(env_steps)
        for name, state in zip(files, states, strict=True):
            write_atomically(out / name, lambda f, state=state: np.savez(f, **state), "wb")
        return {**self.index_state(), "replay_files": files}

    def snapshot_files(self, env_steps: int) -> list[str]:
        return [f"replay/shard{s}-{env_steps}.npz" for s in range(len(self.handles))]

    def checkpoint_written(self, out: Path, state: dict) -> list[str]:
        """The snapshots of this run's previous checkpoint that the new one does not name, removed (never a file
        this run did not write, never through a link); returned."""
        removed = [name for name in self.snapshots if name not in state["replay_files"] and no_links(out, name)]
        for name in removed:
            (out / name).unlink(missing_ok=True)
        self.snapshots = list(state["replay_files"])
        return removed

    def load_state_dict(self, state: dict, out: Path) -> None:
        self.snapshots = list(state["replay_files"])  # the resumed checkpoint's: this run's to prune
        self.load_index_state(state)
        for handle, name in zip(self.handles, state["replay_files"], strict=True):
            with np.load(out / name, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            self.backend.get(self.backend.call(handle, "load_state_dict", arrays))

    def locations(self) -> list[str]:
        return []

    def close(self, started: bool = True) -> None:
        pass  # the backend stops the shards with the run's other parts

