"""The run's replay on Redis: its servers (`--replay redis-local`), one `RedisShard` per server, and the
learner's sampler (`client.ReplaySampler`), which keeps decoded batches ready on a background thread so
that the learner does not wait on the network (the serial runner samples on demand, for determinism)."""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis

from replay_service.buffer import make_packer
from replay_service.client import ShardIndex, concat
from replay_service.codec import Codec
from replay_service.local_redis import start_local
from replay_service.redis_shard import RedisShard
from replay_service.redis_urls import parse_urls, redact, with_password

PREFETCH_BATCHES = 16
WAIT_ROUND_S = 0.1  # how often the learner, waiting for a batch, looks whether the prefetch thread has ended


@dataclass(frozen=True)
class RedisSettings:
    """What the Redis replay reads of the run's configuration (`beta_dqn.configuration.settings.settings`)."""

    replay: str  # "redis-local" or the servers' URLs (passwords masked: `replay_password_file` fills them)
    replay_shards: int
    replay_capacity: int  # transitions, over all shards
    replay_persist: bool
    replay_password_file: str
    replay_timeout: float
    run_id: str  # the namespace of the run's keys
    batch_size: int
    seed: int


class RedisReplay(ShardIndex):
    def __init__(self, cfg: RedisSettings, spec, out: Path, concurrent: bool, host: str = "127.0.0.1",
                 extras: tuple = ()):
        """`host`: where `redis-local` servers listen (the address the run's actors reach this node at);
        `extras`: the method's per-step fields (`replay_service.schema`)."""
        self.concurrent = concurrent  # Ray: batches decoded ahead on a thread; serial: drawn when asked
        self.servers = []
        if cfg.replay == "redis-local":
            self.servers = start_local(cfg.replay_shards, out / "redis", cfg.replay_persist, host)
            urls = [s.url for s in self.servers]
        else:
            urls = [with_password(u, cfg.replay_password_file) for u in parse_urls(cfg.replay)]
        if cfg.replay_persist and not self.servers:  # the user's servers: ask them for an append-only file
            for url in urls:
                try:
                    redis.Redis.from_url(url).config_set("appendonly", "yes")
                except redis.RedisError as e:
                    print(f"warning: --replay-persist: {redact(url)} refused CONFIG SET appendonly yes "
                          f"({type(e).__name__}); its own persistence settings apply", file=sys.stderr)
        packer = make_packer(spec)
        capacity = cfg.replay_capacity // len(urls)
        self.shards = [RedisShard(url, cfg.run_id, i, capacity, Codec(packer, spec.n_actions, extras),
                                  cfg.seed * 1000 + i, timeout=cfg.replay_timeout) for i, url in enumerate(urls)]
        self.ports = self.shards  # every actor holds a copy of its shard (each copy opens its own connection)
        super().__init__(len(self.shards), cfg.replay_capacity, cfg.batch_size, cfg.seed)
        # batches ready: a C queue, which a Ctrl-C landing in the learner's wait cannot leave locked (a `queue.Queue`'s
        # lock it could: the learner's next batch and the thread's next put then waited for good)
        self.ready: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        # set by the thread as it ends: `Thread.is_alive()` is not asked from the learner's thread, where an
        # interrupt landing inside it (CPython 3.11's bpo-45274 handling) marks a running thread stopped
        self.ended = False
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.owner: str | None = None  # this run's claim on its namespaces (`claim`)
        self.claim_id: str | None = None  # the id in that claim and in each ring's meta; the checkpoint keeps it

    def claim(self, owner: str, take: bool = False) -> str | None:
        """Every shard's namespace for this run (`RedisShard.claim`); None, or who holds one of them (then this
        run holds none: the claims it made are let go)."""
        made: list[RedisShard] = []
        try:
            for shard in self.shards:
                holder = shard.claim(owner, take)
                if holder is not None:
                    self._let_go(made, owner)
                    return f"{holder} (key {shard.ns}:owner at {redact(shard.url)})"
                made.append(shard)
        except BaseException:
            self._let_go(made, owner)
            raise
        self.owner = owner
        return None

    def holder(self) -> str | None:
        """Who holds the first shard's namespace now that is not this run (the claim's text), or None."""
        for shard in self.shards:
            held = shard.holder()
            if held is not None and held != self.owner:
                return held
        return None

    def mark(self, claim_id: str) -> None:
        """This run's claim id in every ring's meta (`RedisShard.mark`)."""
        for shard in self.shards:
            shard.mark(claim_id)
        self.claim_id = claim_id

    def marks(self) -> list[str | None]:
        return [shard.marked() for shard in self.shards]

    @staticmethod
    def _let_go(shards, owner: str) -> None:
        for shard in shards:  # best effort: a server that fails here is reported by what failed first
            try:
                shard.release(owner)
            except Exception:
                pass

    def locations(self) -> list[str]:
        return [redact(shard.url) for shard in self.shards]

    def release(self, owner: str) -> None:
        self._let_go(self.shards, owner)
        self.owner = None

    def sample(self) -> dict[str, np.ndarray]:
        """One batch, uniform over every stored transition: shards in proportion to their sizes."""
        counts = self.split()
        return concat([self.shards[s].sample(int(n)) for s, n in enumerate(counts) if n > 0])

    def start_prefetch(self) -> None:
        """Keep up to PREFETCH_BATCHES batches ready: only this thread adds them, so the bound holds; while it is
        reached, a look every 5 ms (16 batches are many updates' worth), which shares no lock with the learner."""

        def loop():
            try:
                while not self.stopping.is_set():
                    if self.ready.qsize() >= PREFETCH_BATCHES:
                        time.sleep(0.005)
                        continue
                    self.ready.put(self.sample())
            except BaseException as e:  # handed to the learner at its next batch
                self.error = e
            finally:
                self.ended = True

        self.thread = threading.Thread(target=loop, name="replay-prefetch", daemon=True)
        try:
            self.thread.start()
        except BaseException:  # it could not start: no batch to wait for (an interrupt that landed in start(),
            self.ended = True  # the thread running or not, ends the run anyway)
            raise

    def next_batch(self) -> dict[str, np.ndarray]:
        if not self.concurrent:
            return self.sample()
        if self.thread is None:
            self.start_prefetch()
        while True:
            try:
                return self.ready.get(timeout=WAIT_ROUND_S)
            except queue.Empty:
                pass
            if self.ended:  # its error (set before it ended; raised here, its own cause and context kept), or none
                raise self.error or RuntimeError("the replay prefetch thread is not running")

    def stats(self) -> list[dict]:
        return [s.stats() for s in self.shards]

    def rejected(self) -> dict | None:
        return dict(sum((Counter(s.codec.rejected) for s in self.shards), Counter()))

    def snapshot_files(self, env_steps: int) -> list[str]:
        return []  # Redis keeps its own data

    def state_dict(self, out: Path, env_steps: int) -> dict:
        # Redis keeps its own data; the claim id tells a resume that the rings are still this run's
        return {**self.index_state(), "replay_files": None, "replay_claim": self.claim_id}

    def checkpoint_written(self, out: Path, state: dict) -> list[str]:
        return []  # no files

    def load_state_dict(self, state: dict, out: Path) -> None:
        """Rewind each shard to what the checkpoint had harvested (chunks inserted after it are dropped)."""
        self.load_index_state(state)
        for shard, inserted, stats in zip(self.shards, self.inserted, self.stats(), strict=True):
            if stats["inserted"] > inserted:
                shard.rewind(int(inserted))
        have = np.array([st["inserted"] for st in self.stats()], dtype=np.int64)
        if (have < self.inserted).any():
            print(f"warning: the Redis replay holds {int(have.sum())} of the {int(self.inserted.sum())} "
                  "transitions inserted before the checkpoint; continuing with what it has", file=sys.stderr)
            self.inserted = np.minimum(have, self.inserted)

    def close(self, started: bool = True) -> None:
        """`started=False`: a new run that could not start lets go of its run id (the corrected command goes on)."""
        if not started and self.owner is not None:
            self.release(self.owner)
        self.stopping.set()
        if self.thread is not None and self.thread.is_alive():  # (one that never started cannot be joined)
            self.thread.join(timeout=5)
        for server in self.servers:
            server.stop()
