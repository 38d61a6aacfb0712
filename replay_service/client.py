"""Sharded replay: which shard a chunk goes to, and how a batch is drawn across shards uniformly."""

from __future__ import annotations

import numpy as np


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
