"""The replay ring, compact observations, sharded sampling and the replay-ratio limiter."""

import numpy as np
import pytest

from actors.envs import env_spec
from replay_service.buffer import ReplayBuffer, make_packer
from replay_service.client import RateLimiter, achieved_ratio, split_batch


def chunk(start, n, packer):
    obs = np.zeros((n, 10, 10, 4), dtype=bool)
    for i in range(n):
        obs[i].flat[(start + i) % 400] = True
    return {"obs": packer.pack(obs), "action": np.arange(start, start + n) % 6,
            "reward": np.arange(start, start + n, dtype=np.float32), "next_obs": packer.pack(obs),
            "terminated": np.zeros(n, dtype=bool)}


def test_bool_observations_are_bit_packed_and_round_trip():
    packer = make_packer(env_spec("MinAtar/Breakout"))
    obs = np.random.default_rng(0).random((7, 10, 10, 4)) > 0.7
    packed = packer.pack(obs)
    assert packed.shape == (7, 50) and packed.dtype == np.uint8  # 400 bits -> 50 bytes
    assert np.array_equal(packer.unpack(packed), obs)
    cliff = make_packer(env_spec("CliffWalk"))
    one_hot = np.eye(48, dtype=np.uint8)[[3, 40]]
    assert cliff.pack(one_hot).shape == (2, 6)
    assert np.array_equal(cliff.unpack(cliff.pack(one_hot)), one_hot)
    grid = make_packer(env_spec("DoorKey"))  # values up to 10: stored as bytes
    g = np.random.default_rng(1).integers(0, 11, (3, 6, 6, 3)).astype(np.uint8)
    assert np.array_equal(grid.unpack(grid.pack(g)), g)


def test_ring_is_fifo_at_capacity():
    packer = make_packer(env_spec("MinAtar/Breakout"))
    buf = ReplayBuffer(10, packer.packed_shape, packer.packed_dtype, seed=0)
    buf.insert(chunk(0, 6, packer))
    buf.insert(chunk(6, 6, packer))
    assert buf.stats() == {"size": 10, "inserted": 12, "capacity": 10}
    # the two oldest (rewards 0 and 1) were evicted; 2..11 remain
    assert sorted(buf.columns["reward"].tolist()) == list(range(2, 12))
    batch = buf.sample(500)
    assert set(batch["reward"].tolist()) == set(range(2, 12))
    # transitions stay whole: action and observation belong to the same step
    assert np.all(batch["action"] == batch["reward"].astype(int) % 6)


def test_split_batch_is_proportional_to_shard_sizes():
    rng = np.random.default_rng(0)
    sizes = np.array([100, 300, 0, 600])
    total = np.zeros(4)
    for _ in range(2000):
        counts = split_batch(sizes, 32, rng)
        assert counts.sum() == 32 and counts[2] == 0
        total += counts
    np.testing.assert_allclose(total / total.sum(), sizes / sizes.sum(), atol=0.01)


def test_rate_limiter_holds_the_ratio():
    lim = RateLimiter(ratio=0.25, learning_starts=100, batch_size=32, slack=64)
    assert lim.owed(99) == 0 and lim.owed(100) == 0 and lim.owed(104) == 1 and lim.owed(500) == 100
    # actors may run at most `slack` steps ahead of what the learner has consumed
    assert lim.may_collect(100 + 4 + 64, updates=0)
    assert not lim.may_collect(100 + 4 + 65, updates=0)
    assert lim.may_update(0, 104) and not lim.may_update(1, 104)
    # simulate: collect chunks of 16 whenever allowed, update whenever owed
    steps = updates = 0
    while steps < 10_000:
        if lim.may_collect(steps + 16, updates):
            steps += 16
        while lim.may_update(updates, steps):
            updates += 1
        assert updates - 0.25 * max(steps - 100, 0) <= 0
        assert 0.25 * (steps - 100) - updates <= 0.25 * 64 + 1
    assert achieved_ratio(updates, steps, 100) == pytest.approx(0.25, abs=1e-3)


@pytest.mark.parametrize("learning_starts,chunk", [(0, 20), (0, 8), (10, 20), (100, 64), (5000, 64)])
def test_limiter_never_deadlocks(learning_starts, chunk):
    # slack = one chunk (one actor): the tightest the runner ever sets
    lim = RateLimiter(ratio=0.25, learning_starts=learning_starts, batch_size=32, slack=chunk)
    steps = updates = 0
    for _ in range(2000):
        progressed = False
        if lim.may_collect(steps + chunk, updates):
            steps, progressed = steps + chunk, True
        while lim.may_update(updates, steps):
            updates, progressed = updates + 1, True
        assert progressed, (steps, updates)
