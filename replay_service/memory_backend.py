"""`--replay memory`: the run's replay as in-memory shards (`buffer.ReplayBuffer`), hosted by the run's runtime (Ray
actors, or objects in a serial run's process), sampled as one (`client.ShardedReplay`); a checkpoint writes each
shard's contents beside it."""

from __future__ import annotations

from pathlib import Path

from replay_service.buffer import ReplayBuffer, make_packer
from replay_service.client import ShardedReplay
from replay_service.contract import ReplayBackend


class MemoryBackend(ReplayBackend):
    names = ("memory",)
    shown = ("memory",)
    entries = ("replay",)  # its checkpoints' snapshots of the shards

    def memory_bytes(self, cfg, row_bytes: int) -> int:
        # what --total-steps can fill of the capacity, or one shard's array, which the system must grant whole
        return max(min(cfg.replay_capacity, cfg.total_steps), cfg.replay_capacity // cfg.replay_shards) * row_bytes

    def open(self, cfg, spec, backend, out: Path, resume: dict | None, extras: tuple):
        packer = make_packer(spec)
        shard_capacity = cfg.replay_capacity // cfg.replay_shards
        handles = [backend.make(ReplayBuffer, shard_capacity, packer.packed_shape, packer.packed_dtype.name,
                                cfg.seed * 1000 + s, extras, ported=True) for s in range(cfg.replay_shards)]
        return ShardedReplay(backend, handles, cfg.replay_capacity, cfg.batch_size, cfg.seed)
