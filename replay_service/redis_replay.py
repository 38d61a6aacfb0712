"""The run's replay on Redis: its servers (`--replay redis-local`), one `RedisShard` per server, and the
learner's sampler, which keeps decoded batches ready on a background thread so that the learner does not
wait on the network (the serial runner samples on demand, for determinism)."""

from __future__ import annotations

import queue
import sys
import threading
from pathlib import Path

import numpy as np

from replay_service.buffer import make_packer
from replay_service.client import concat, split_batch
from replay_service.codec import Codec
from replay_service.local_redis import parse_urls, redact, start_local, with_password
from replay_service.redis_shard import RedisShard

PREFETCH_BATCHES = 16


class RedisReplay:
    def __init__(self, cfg, spec, out: Path):
        self.servers = []
        if cfg.replay == "redis-local":
            self.servers = start_local(cfg.replay_shards, out / "redis", cfg.replay_persist)
            urls = [s.url for s in self.servers]
        else:
            urls = [with_password(u) for u in parse_urls(cfg.replay)]
        if cfg.replay_persist and not self.servers:  # the user's servers: ask them for an append-only file
            import redis

            for url in urls:
                try:
                    redis.Redis.from_url(url).config_set("appendonly", "yes")
                except redis.RedisError as e:
                    print(f"warning: --replay-persist: {redact(url)} refused CONFIG SET appendonly yes "
                          f"({type(e).__name__}); its own persistence settings apply", file=sys.stderr)
        packer = make_packer(spec.obs_shape, spec.obs_dtype, spec.name)
        capacity = cfg.replay_capacity // len(urls)
        self.shards = [RedisShard(url, cfg.run_id, i, capacity, Codec(packer, spec.n_actions), cfg.seed * 1000 + i,
                                  timeout=cfg.replay_timeout) for i, url in enumerate(urls)]
        self.batch_size = cfg.batch_size
        self.queue: queue.Queue = queue.Queue(maxsize=PREFETCH_BATCHES)
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def sample(self, sizes: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One batch, uniform over every stored transition: shards in proportion to their sizes."""
        counts = split_batch(sizes, self.batch_size, rng)
        return concat([self.shards[s].sample(int(n)) for s, n in enumerate(counts) if n > 0])

    def start_prefetch(self, sizes, rng: np.random.Generator) -> None:
        """Keep up to PREFETCH_BATCHES batches ready; `sizes()` gives the shards' current sizes."""

        def loop():
            try:
                while not self.stopping.is_set():
                    batch = self.sample(sizes(), rng)
                    while not self.stopping.is_set():
                        try:
                            self.queue.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
            except BaseException as e:  # handed to the learner at its next batch
                self.error = e

        self.thread = threading.Thread(target=loop, name="replay-prefetch", daemon=True)
        self.thread.start()

    def next_batch(self) -> dict[str, np.ndarray]:
        while True:
            try:
                return self.queue.get(timeout=0.1)
            except queue.Empty:
                if self.error is not None:
                    raise self.error from None
                if self.thread is None or not self.thread.is_alive():
                    raise RuntimeError("the replay prefetch thread is not running") from None

    def stats(self) -> list[dict]:
        return [s.stats() for s in self.shards]

    def close(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        for server in self.servers:
            server.stop()
