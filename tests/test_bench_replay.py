"""bench/replay.py's memory measurements, on the session's Ray cluster: chunks inserted into and batches drawn
from Ray actor shards, and the bytes a stored transition takes as the ring allocates it (nothing else runs the
bench: an attribute it read was renamed once and it failed unseen)."""

import argparse

import pytest

from actors.envs import env_spec
from replay_service.buffer import make_packer
from replay_service.schema import Schema


@pytest.mark.integration
def test_the_replay_bench_measures_memory_shards(ray_cluster):
    from bench import replay  # (imports Ray)

    row = replay.micro(argparse.Namespace(env="CliffWalk", chunks=4, batches=3), "memory", 2)
    packer = make_packer(env_spec("CliffWalk"))
    assert row["backend"] == "memory" and row["shards"] == 2
    assert row["bytes_per_transition"] == Schema().row_bytes(packer.packed_shape, packer.packed_dtype)
    assert row["inserts_per_s"] > 0 and row["batches_per_s"] > 0
