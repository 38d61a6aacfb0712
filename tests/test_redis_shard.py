"""A replay shard on a real redis-server: FIFO at capacity, uniform sampling, one round trip per batch,
runs kept apart by namespace, invalid records counted without breaking a batch."""

import numpy as np
import pytest
import redis

from actors.envs import env_spec
from replay_service.buffer import make_packer
from replay_service.codec import Codec
from replay_service.redis_shard import RedisShard

pytestmark = pytest.mark.integration


def codec():
    return Codec(make_packer(env_spec("CliffWalk")), 4)


def marked_chunk(start, n):
    """n transitions whose reward is their index (start, start+1, ...): a marker to find them by."""
    packer = codec().packer
    obs = np.zeros((n, 48), dtype=np.uint8)
    obs[np.arange(n), np.arange(start, start + n) % 48] = 1
    return {"obs": packer.pack(obs), "next_obs": packer.pack(obs), "action": np.arange(n) % 4,
            "reward": np.arange(start, start + n, dtype=np.float32), "terminated": np.zeros(n, bool),
            "actor": 1, "version": 2}


def shard(url, run, capacity, seed=0):
    s = RedisShard(url, run, 0, capacity, codec(), seed)
    s.client.delete(*s.keys)
    return s


def test_fifo_eviction_at_capacity(redis_url):
    s = shard(redis_url, "fifo", capacity=10)
    assert s.insert(marked_chunk(0, 7)) == 7
    assert s.insert(marked_chunk(7, 18)) == 25
    assert s.stats()["size"] == 10 and s.stats()["inserted"] == 25
    seen = set(np.concatenate([s.sample(32)["reward"] for _ in range(20)]).astype(int).tolist())
    assert seen == set(range(15, 25))  # only the newest 10 survive


def test_sampling_is_uniform_over_slots(redis_url):
    s = shard(redis_url, "uniform", capacity=50, seed=1)
    s.insert(marked_chunk(0, 50))
    draws = np.concatenate([s.sample(32)["reward"] for _ in range(250)]).astype(int)
    counts = np.bincount(draws, minlength=50)
    expected = len(draws) / 50
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert counts.min() > 0
    assert chi2 < 85.4  # χ² critical value, 49 degrees of freedom, p = 0.001


def test_one_round_trip_per_batch(redis_url):
    s = shard(redis_url, "trips", capacity=100)
    s.insert(marked_chunk(0, 100))
    def counts():  # CONFIG RESETSTAT is off on the run's servers: compare counts before and after
        return {k: v["calls"] for k, v in s.client.info("commandstats").items() if not k.startswith("cmdstat_info")}

    before = counts()
    for _ in range(5):
        assert len(s.sample(32)["action"]) == 32
    calls = {k: n - before.get(k, 0) for k, n in counts().items() if n != before.get(k, 0)}
    # five client commands (EVALSHA), one per batch; the HMGETs (the ring's counters, then its records) ran
    # inside the script, on the server
    assert calls == {"cmdstat_evalsha": 5, "cmdstat_hmget": 10}


def test_two_runs_share_a_server_without_mixing(redis_url):
    a, b = shard(redis_url, "run-a", capacity=20), shard(redis_url, "run-b", capacity=20)
    a.insert(marked_chunk(0, 5))
    b.insert(marked_chunk(100, 3))
    assert a.stats()["inserted"] == 5 and b.stats()["inserted"] == 3
    assert set(a.sample(64)["reward"].astype(int)) <= set(range(5))
    assert set(b.sample(64)["reward"].astype(int)) <= {100, 101, 102}
    from replay_service.redis_shard import ReplayDamaged

    with pytest.raises(ReplayDamaged, match="has capacity 20, not 30"):  # the same namespace, another ring
        RedisShard(redis_url, "run-a", 0, 30, codec()).insert(marked_chunk(0, 1))


def test_invalid_records_are_counted_and_the_batch_keeps_its_size(redis_url):
    s = shard(redis_url, "bad", capacity=10)
    s.insert(marked_chunk(0, 10))
    s.client.hset(s.keys[0], 3, b"\x80\x04garbage")  # a pickle-looking blob where a record was
    s.client.hset(s.keys[0], 4, b"")
    batches = [s.sample(32) for _ in range(10)]
    assert all(len(b["action"]) == 32 for b in batches)
    rejected = s.stats()["rejected"]
    assert sum(rejected.values()) > 0 and set(rejected) <= {"not_msgpack", "type", "empty", "keys", "version"}
    assert not {3, 4} & set(np.concatenate([b["reward"] for b in batches]).astype(int).tolist())


def test_an_actor_streams_its_chunks_into_a_redis_shard(redis_url):
    from actors.actor import Actor, ActorSettings
    from beta_dqn.configuration.flags import Config, resolve, settings
    from learner.methods.networks import make_network, to_numpy
    from meta_controller.bandit import SlidingWindowBandit

    # 2 envs × 300 steps: past CliffWalk's 100-step limit, so every env ends episodes whatever the policy
    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=0, envs_per_actor=2, wandb="disabled"))
    s = shard(redis_url, "actor", capacity=1000)
    actor = Actor(settings(ActorSettings, cfg), spec, 5, SlidingWindowBandit(13, 100, 0), s)
    weights = {n: to_numpy(make_network(spec.obs_shape, spec.n_actions)) for n in ("q", "beta")}
    actor.collect(600, weights, version=4)
    assert s.stats()["inserted"] == 600
    records = [s.codec.decode(blob) for blob in s.client.hvals(s.keys[0])]
    assert {r["actor"] for r in records} == {5} and {r["version"] for r in records} == {4}
    # every episode that ended at the time limit is marked truncated, not terminated
    ended = [r for r in records if r["terminated"] or r["truncated"]]
    assert ended and all(r["terminated"] != r["truncated"] for r in ended)
    assert len({r["episode"] for r in records}) >= len(ended)
    batch = s.sample(32)
    assert batch["obs"].shape == (32, *s.codec.packer.packed_shape)


def test_serial_runs_on_redis_are_deterministic_and_keep_the_password_out(redis_url, tmp_path):
    import json

    from beta_dqn.configuration.flags import Config, resolve
    from beta_dqn.driver.run import train

    password = redis_url.split(":")[2].split("@")[0]
    for name in ("a", "b"):  # two runs share the server: their own namespaces
        cfg, spec = resolve(Config.of(env="CliffWalk", runtime="serial", actors=2, envs_per_actor=2, replay=redis_url,
                                   total_steps=3000, learning_starts=500, eval_every=1500, eval_episodes=3,
                                   wandb="disabled", progress=False, out=str(tmp_path / name)))
        summary = train(cfg, spec)
        assert summary["replay_inserted"] == 3000 and summary["updates"] == (3000 - 500) // 4
        assert summary["replay_rejected"] == {}
        text = (tmp_path / name / "config.json").read_text()
        assert password not in text and json.loads(text)["replay"].startswith("redis://:***@127.0.0.1:")
    assert (tmp_path / "a" / "evals.csv").read_text() == (tmp_path / "b" / "evals.csv").read_text()


def test_a_chunk_sent_twice_is_stored_once(redis_url):
    s = shard(redis_url, "twice", capacity=100)
    chunk = {**marked_chunk(0, 10), "chunk_id": "3-ab12cd34-0"}
    assert s.insert(chunk) == 10
    assert s.insert(chunk) == 10  # the resent call (same id) changes nothing
    assert s.insert({**marked_chunk(10, 5), "chunk_id": "3-ab12cd34-1"}) == 15
    assert s.stats()["size"] == 15


def test_a_batch_of_only_invalid_records_is_drawn_again(redis_url):
    s = shard(redis_url, "redraw", capacity=100, seed=3)
    s.insert(marked_chunk(0, 100))
    for slot in range(10, 100):  # 90 of 100 records damaged: a batch of one is mostly all invalid
        s.client.hset(s.keys[0], slot, b"\x00garbage")
    rewards = {int(s.sample(1)["reward"][0]) for _ in range(20)}
    assert rewards <= set(range(10)) and sum(s.stats()["rejected"].values()) >= 20


def test_a_ring_of_only_invalid_records_is_damaged_in_one_line(redis_url):
    from replay_service.redis_shard import ReplayDamaged

    s = shard(redis_url, "allbad", capacity=10)
    s.insert(marked_chunk(0, 10))
    for slot in range(10):
        s.client.hset(s.keys[0], slot, b"\x00garbage")
    with pytest.raises(ReplayDamaged, match="batches in a row held no valid record") as err:
        s.sample(4)
    assert "\n" not in str(err.value) and s.ns in str(err.value)


@pytest.mark.parametrize("field,value", [("size", "many"), ("size", "50"), ("capacity", "7"), ("inserted", "x")])
def test_damaged_meta_keys_name_the_key_and_the_shard(redis_url, field, value):
    from replay_service.redis_shard import ReplayDamaged

    s = shard(redis_url, f"meta-{field}-{value}", capacity=10)
    s.insert(marked_chunk(0, 10))
    s.client.hset(s.keys[1], field, value)
    calls = [s.stats] if field == "inserted" else [lambda: s.sample(4), s.stats]
    for call in calls:
        with pytest.raises(ReplayDamaged) as err:
            call()
        assert f"{s.keys[1]} is damaged" in str(err.value) and "\n" not in str(err.value)


def test_a_damaged_ring_stops_the_run_with_one_line_and_a_checkpoint(redis_url, tmp_path, capsys):
    """The learner's sampler meets the damage: the run writes its checkpoint and ends in one line."""
    import threading
    import time

    from beta_dqn.configuration.flags import Config, resolve
    from beta_dqn.driver.run import Run

    cfg, spec = resolve(Config.of(env="CliffWalk", runtime="serial", actors=1, envs_per_actor=2, replay=redis_url,
                               total_steps=3000, learning_starts=500, eval_every=3000, eval_episodes=2,
                               wandb="disabled", progress=False, out=str(tmp_path / "run"), run_id="damaged"))
    run = Run(cfg, spec)
    meta = run.replay.shards[0].keys[1]
    client = redis.Redis.from_url(redis_url)

    def damage():
        while run.state.env_steps < 1000:
            time.sleep(0.001)
        client.hset(meta, "size", "lots")

    thread = threading.Thread(target=damage)
    thread.start()
    from replay_service.redis_shard import ReplayDamaged

    with pytest.raises(ReplayDamaged) as err:
        run.run()
    thread.join()
    message = str(err.value)
    assert f"{meta} is damaged" in message and "checkpoint written at env step" in message and "\n" not in message
    assert (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_local_server_listens_only_where_it_is_told(tmp_path):
    """On a cluster a run's redis-local servers listen on the address its actors reach its node at; here
    127.0.0.2 (a loopback address of its own): reachable there, with the password, and nowhere else; and the
    commands the run never sends (CONFIG, which could write files, DEBUG, MODULE, …) are off."""
    from replay_service.local_redis import LocalServer

    server = LocalServer(tmp_path / "s", host="127.0.0.2").start()
    try:
        assert server.url.startswith(f"redis://:{server.password}@127.0.0.2:")
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        for command in ("CONFIG GET dir", "DEBUG SLEEP 0", "MODULE LIST", "FLUSHALL", "REPLICAOF NO ONE"):
            with pytest.raises(redis.ResponseError, match="unknown command"):
                client.execute_command(*command.split())
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.2", port=server.port).ping()  # no password, no service
        with pytest.raises(redis.ConnectionError):
            redis.Redis(host="127.0.0.1", port=server.port, password=server.password).ping()
    finally:
        server.stop()


def test_an_interrupt_anywhere_in_the_wait_for_a_batch_leaves_the_prefetch_running(redis_url, tmp_path, monkeypatch):
    """Ctrl-C lands wherever the learner's thread is, often in its wait for a prefetched batch. Interrupted at
    each line (and each call and return) of `next_batch` and of the waiting it does (threading, queue), one
    batch per point, once the prefetch thread runs, with batches ready and then with none (the thread's sampling
    held back): each leaves as KeyboardInterrupt, the next batch still comes, the thread keeps its bound, and
    close ends it at once. (On a `queue.Queue`, an interrupt as its `with` had taken the queue's lock left it
    held: the learner's next batch, and the prefetch thread's next put, waited on it for good.)"""
    import inspect
    import queue
    import threading
    import time

    import replay_service.redis_replay as module
    from beta_dqn.configuration.flags import Config, resolve, settings
    from replay_service.redis_replay import RedisReplay, RedisSettings
    from tests.test_learner import interrupted_at

    cfg, spec = resolve(Config.of(env="CliffWalk", replay=redis_url, run_id="interrupted", wandb="disabled",
                               out=str(tmp_path)))
    replay = RedisReplay(settings(RedisSettings, cfg), spec, tmp_path, concurrent=True)
    replay.shards[0].client.delete(*replay.shards[0].keys)
    replay.added(0, replay.shards[0].insert(marked_chunk(0, 100)))
    watched = {module.__file__, threading.__file__, queue.__file__}
    seen = {"point": None, "interrupted": 0, "waiting": 0, "points": set(), "errors": [], "finished": False}

    def batch() -> None:
        assert len(replay.next_batch()["reward"]) == cfg.batch_size

    def batch_interrupted_at(k: int) -> bool:  # (an error ends the sweep)
        return interrupted_at(batch, k, watched, seen) == "interrupted"

    def ready(n: int) -> bool:  # n batches ready within 10 s
        deadline = time.monotonic() + 10
        while replay.ready.qsize() != n and time.monotonic() < deadline:
            time.sleep(0.01)
        return replay.ready.qsize() == n

    def sweep():
        replay.next_batch()  # the prefetch thread started (once per run, as learning starts)
        k = 1
        while batch_interrupted_at(k):
            seen["interrupted"] += 1
            k += 1
        for _ in range(3 * module.PREFETCH_BATCHES):  # and batches keep coming after it
            replay.next_batch()
        seen["bound"] = ready(module.PREFETCH_BATCHES)
        time.sleep(0.1)  # (and no more)
        seen["bound"] &= replay.ready.qsize() == module.PREFETCH_BATCHES
        gate, sample = threading.Semaphore(0), replay.sample
        replay.sample = lambda: (gate.acquire(), sample())[1]  # no batch until the gate opens
        while replay.ready.qsize():
            replay.next_batch()
        monkeypatch.setattr(module, "WAIT_ROUND_S", 0.01)
        seen["points"].clear()
        for k in range(1, 61):  # the first 60 points of a wait for a batch that is not there (rounds of it)
            seen["waiting"] += batch_interrupted_at(k)
        for _ in range(2 * module.PREFETCH_BATCHES):
            gate.release()
        for _ in range(module.PREFETCH_BATCHES):
            replay.next_batch()
        seen["finished"] = True

    thread = threading.Thread(target=sweep, daemon=True)  # (a hang ends the test, not the suite)
    try:
        thread.start()
        thread.join(timeout=60)
        assert seen["finished"], f"a batch hung after an interrupt at {seen['point']}"
        assert not seen["errors"], seen["errors"][:3]
        assert seen["interrupted"] >= 5 and seen["waiting"] == 60, seen
        ended = inspect.getsourcelines(RedisReplay.next_batch)  # (the look at whether the thread has ended)
        line = ended[1] + next(i for i, text in enumerate(ended[0]) if "if self.ended" in text)
        assert ("redis_replay.py", line, "line") in seen["points"], sorted(seen["points"])
        assert seen["bound"], seen
    finally:
        start = time.monotonic()
        replay.close()
    assert time.monotonic() - start < 1.0 and not replay.thread.is_alive()


def test_a_prefetch_thread_that_cannot_start_is_not_waited_for(redis_url, tmp_path, monkeypatch):
    """The learner's first batch starts the prefetch thread: one that cannot start is that batch's error, and
    the next batch says the thread is not running at once instead of waiting for good; close still works."""
    import threading

    from beta_dqn.configuration.flags import Config, resolve, settings
    from replay_service.redis_replay import RedisReplay, RedisSettings

    cfg, spec = resolve(Config.of(env="CliffWalk", replay=redis_url, run_id="unstarted", wandb="disabled",
                               out=str(tmp_path)))
    replay = RedisReplay(settings(RedisSettings, cfg), spec, tmp_path, concurrent=True)
    replay.shards[0].client.delete(*replay.shards[0].keys)
    replay.added(0, replay.shards[0].insert(marked_chunk(0, 100)))
    start = threading.Thread.start

    def refused(thread):
        if thread.name == "replay-prefetch":
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        replay.next_batch()
    said = []

    def again():
        try:
            replay.next_batch()
        except RuntimeError as e:
            said.append(str(e))

    waiter = threading.Thread(target=again, daemon=True)  # (a wait for good ends the test, not the suite)
    waiter.start()
    waiter.join(timeout=10)
    assert said == ["the replay prefetch thread is not running"]
    replay.close()


def test_the_prefetch_threads_error_is_the_learners_as_it_was(redis_url, tmp_path):
    """A Ray run's sampler meets a damaged ring on the prefetch thread: the learner's next batch raises that
    error (its one line is what the run says, with its checkpoint), its cause kept, and so does every batch
    after it."""
    import threading

    from beta_dqn.configuration.flags import Config, resolve, settings
    from replay_service.redis_replay import RedisReplay, RedisSettings
    from replay_service.redis_shard import ReplayDamaged

    cfg, spec = resolve(Config.of(env="CliffWalk", replay=redis_url, run_id="thread-error", wandb="disabled",
                               out=str(tmp_path)))
    replay = RedisReplay(settings(RedisSettings, cfg), spec, tmp_path, concurrent=True)
    replay.shards[0].client.delete(*replay.shards[0].keys)
    replay.added(0, replay.shards[0].insert(marked_chunk(0, 100)))
    cause = ConnectionError("the ring's script failed")

    def damaged():
        raise ReplayDamaged("shard 0's ring is damaged") from cause

    replay.sample = damaged
    said = []

    def batches():
        for _ in range(2):
            try:
                replay.next_batch()
            except ReplayDamaged as e:
                said.append((str(e), e.__cause__))

    waiter = threading.Thread(target=batches, daemon=True)  # (a wait for good ends the test, not the suite)
    waiter.start()
    waiter.join(timeout=10)
    assert said == [("shard 0's ring is damaged", cause)] * 2
    replay.close()
