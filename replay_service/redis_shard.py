"""One replay shard on a Redis server: a FIFO ring of msgpack records (`replay_service.codec`).

Same API as the in-memory `ReplayBuffer` (`insert(chunk)`, `sample(n)`, `stats()`), so the run can hold
either. Keys live under a namespace (`bdqn:<run id>:<shard>`), so several runs can share one server:

    <ns>:ring   hash, slot -> record        <ns>:meta   hash: capacity, cursor, size, inserted
    <ns>:owner  string: the run that claimed the namespace (its id, directory and start time)

An insert is one server-side script call per chunk (atomic: the ring, its cursor and counters move
together); a sample is one script call per batch: the client sends n uniform numbers from its own seeded
generator, the script maps them to slots of the current size and returns the records. Records are
decoded and validated here; an invalid one is counted by kind (`stats()["rejected"]`), logged once per
kind, and replaced in the batch by a valid record of the same draw, so a batch keeps its size.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import redis

from replay_service.codec import Codec
from replay_service.redis_urls import redact

log = logging.getLogger(__name__)

_INSERT = """
if KEYS[3] and not redis.call('SET', KEYS[3], 1, 'NX', 'EX', 86400) then
  return redis.call('HGET', KEYS[2], 'inserted')  -- this chunk is stored already (a resent call)
end
local cap = tonumber(ARGV[1])
local stored = redis.call('HGET', KEYS[2], 'capacity')
if stored and tonumber(stored) ~= cap then
  return redis.error_reply('replay shard ' .. KEYS[2] .. ' has capacity ' .. stored .. ', not ' .. cap)
end
local cursor = tonumber(redis.call('HGET', KEYS[2], 'cursor') or '0')
local size = tonumber(redis.call('HGET', KEYS[2], 'size') or '0')
for i = 2, #ARGV do
  redis.call('HSET', KEYS[1], cursor, ARGV[i])
  cursor = (cursor + 1) % cap
end
local n = #ARGV - 1
redis.call('HSET', KEYS[2], 'capacity', cap, 'cursor', cursor, 'size', math.min(size + n, cap))
return redis.call('HINCRBY', KEYS[2], 'inserted', n)
"""

_SAMPLE = """
local meta = redis.call('HMGET', KEYS[2], 'size', 'capacity')
local raw_size, raw_cap = meta[1], meta[2]
local size, cap = tonumber(raw_size or '0'), tonumber(raw_cap or ARGV[1])
if not size or not cap or size ~= math.floor(size) or size < 0 or size > cap or cap ~= tonumber(ARGV[1]) then
  return redis.error_reply('DAMAGED size=' .. tostring(raw_size) .. ' capacity=' .. tostring(raw_cap))
end
if size == 0 then return {} end
local slots = {}
for i = 2, #ARGV do slots[i - 1] = math.floor(tonumber(ARGV[i]) * size) end
return redis.call('HMGET', KEYS[1], unpack(slots))
"""


_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def namespace(run_id: str, shard: int) -> str:
    return f"bdqn:{run_id}:{shard}"


class ReplayUnavailable(RuntimeError):
    """A Redis shard stayed unreachable longer than the run's `--replay-timeout`."""


class ReplayDamaged(ReplayUnavailable):
    """A Redis shard's data cannot be used: its meta key does not hold a ring's counters, or every record
    drawn again and again is invalid. The run stops as for an unreachable shard (a checkpoint, one line)."""


REDRAWS = 100  # batches drawn again when every record of one was invalid, before the shard counts as damaged


class RedisShard:
    def __init__(self, url: str, run_id: str, shard: int, capacity: int, codec: Codec, seed: int = 0,
                 timeout: float = 60.0):
        self.url, self.run_id, self.shard, self.capacity, self.codec = url, run_id, shard, capacity, codec
        self.timeout = timeout  # seconds a call keeps retrying while the server is unreachable
        self.ns = namespace(run_id, shard)
        self.keys = [f"{self.ns}:ring", f"{self.ns}:meta"]
        self.client = redis.Redis.from_url(url)
        self._insert = self.client.register_script(_INSERT)
        self._sample = self.client.register_script(_SAMPLE)
        for script in (self._insert, self._sample):  # loaded now: every later call is one EVALSHA
            self._retrying(self.client.script_load, script.script)
        self.rng = np.random.default_rng(seed)
        self.logged: set[str] = set()

    def __getstate__(self) -> dict:
        """What travels to an actor process: the shard's address and settings, not a connection."""
        return {"args": (self.url, self.run_id, self.shard, self.capacity, self.codec.packer, self.codec.n_actions,
                         self.codec.extras, self.timeout), "rng": self.rng.bit_generator.state}

    def __setstate__(self, state: dict) -> None:
        url, run_id, shard, capacity, packer, n_actions, extras, timeout = state["args"]
        type(self).__init__(self, url, run_id, shard, capacity, Codec(packer, n_actions, extras), timeout=timeout)
        self.rng.bit_generator.state = state["rng"]

    def insert(self, chunk: dict) -> int:
        """A chunk of packed transitions (with `actor` and `version` when the actor sends them)."""
        records = self.codec.encode_chunk(chunk, int(chunk.get("actor", 0)), int(chunk.get("version", 0)))
        return self.insert_records(records, chunk.get("chunk_id"))

    def insert_records(self, records: list[bytes], chunk_id: str | None = None) -> int:
        """One script call; with a `chunk_id`, a call that arrives twice (a retry after a lost reply)
        stores the chunk once (ids are remembered for a day)."""
        keys = self.keys + ([f"{self.ns}:chunk:{chunk_id}"] if chunk_id else [])
        try:
            return int(self._retrying(self._insert, keys=keys, args=[self.capacity, *records]))
        except redis.ResponseError as e:
            raise self._refused(e) from None

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        """`batch_size` transitions drawn uniformly from the ring, in one round trip (a batch whose every
        record was invalid is drawn again)."""
        for _ in range(REDRAWS):
            uniforms = [repr(float(u)) for u in self.rng.random(batch_size)]
            blobs = self._script(self._sample, args=[self.capacity, *uniforms])
            if not blobs:
                raise RuntimeError(f"sample from an empty replay shard ({self.ns})")
            batch, errors = self.codec.decode_batch(blobs)
            for e in errors:
                if e.kind not in self.logged:
                    self.logged.add(e.kind)
                    log.warning("replay shard %s: rejected a record (%s); further ones of this kind are counted "
                                "only", self.ns, e)
            if not errors:
                return batch
            if len(batch["action"]):
                return self._refill(batch, batch_size)
        raise ReplayDamaged(f"replay shard {self.ns} at {redact(self.url)}: {REDRAWS} batches in a row held no valid "
                            f"record (rejected so far: {dict(self.codec.rejected)})")

    def _script(self, script, args: list) -> list:
        """A script call on the ring (see `_refused`)."""
        try:
            return self._retrying(script, keys=self.keys, args=args)
        except redis.ResponseError as e:
            raise self._refused(e) from None

    def _refused(self, e: redis.ResponseError) -> ReplayUnavailable:
        """What the server's refusal means: keys that do not hold a ring (the sample script's DAMAGED reply, a
        wrong type, counters Lua cannot count with, another ring's capacity) are ReplayDamaged; anything else
        (out of memory, a read-only replica, a failed save) is an outage, ReplayUnavailable."""
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        damaged = any(mark in text for mark in ("DAMAGED", "WRONGTYPE", "has capacity", "arithmetic", "number"))
        where = f"replay shard {self.ns} at {redact(self.url)}"
        if damaged:
            return ReplayDamaged(f"{where}: its key {self._damaged_key(text)} is damaged ({text})")
        return ReplayUnavailable(f"{where} refused a call ({text})")

    def _damaged_key(self, text: str) -> str:
        """Which of the run's keys a refusal is about: for a wrong type, the one whose type is not its own (the
        ring and its meta are hashes, the owner's claim a string); otherwise the meta key, whose counters and
        capacity the scripts read."""
        if "WRONGTYPE" in text:
            expected = {self.keys[0]: b"hash", self.keys[1]: b"hash", f"{self.ns}:owner": b"string"}
            try:
                for key, kind in expected.items():
                    if self.client.type(key) not in (kind, b"none"):
                        return key
            except redis.RedisError:
                pass  # the server went away meanwhile: the meta key, as before
        return self.keys[1]

    def _retrying(self, call, *args, **kwargs):
        """`call` until the server answers: backoff from 50 ms to 2 s, for at most `timeout` seconds (the
        run pauses meanwhile); then ReplayUnavailable. A script lost with a restarted server is loaded again
        by redis-py on its own."""
        deadline, delay = None, 0.05
        while True:
            try:
                return call(*args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as e:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self.timeout
                    log.warning("replay shard %s (%s) is unreachable; retrying for up to %g s",
                                self.ns, redact(self.url), self.timeout)
                if now >= deadline:
                    raise ReplayUnavailable(f"replay shard {self.ns} at {redact(self.url)} did not answer for "
                                            f"{self.timeout:g} s ({type(e).__name__})") from None
                time.sleep(min(delay, max(deadline - now, 0.0)))
                delay = min(delay * 2, 2.0)

    def _refill(self, batch: dict[str, np.ndarray], batch_size: int) -> dict[str, np.ndarray]:
        n = len(batch["action"])
        pick = self.rng.integers(0, n, size=batch_size - n)
        return {k: np.concatenate([v, v[pick]]) for k, v in batch.items()}

    def claim(self, owner: str, take: bool = False) -> str | None:
        """Hold the namespace for a run: one atomic `SET <ns>:owner NX`, so of two runs that start at once with
        one run id, one gets it. Returns None when held now, else who holds it. `take`: hold it whoever did."""
        key = f"{self.ns}:owner"
        try:
            if self._retrying(self.client.set, key, owner, nx=not take):
                return None
            holder = self._retrying(self.client.get, key)
        except redis.ResponseError as e:  # a read-only replica, no memory, no permission, a key of another type
            raise self._refused(e) from None
        if holder is None:
            return "a run that has just let go"
        text = holder.decode("utf-8", "replace")[:300]  # the server's text reaches the terminal: printable only
        return "".join(c if c.isprintable() else "?" for c in text)

    def holder(self) -> str | None:
        """Who holds the namespace now (the claim's text), or None."""
        try:
            held = self._retrying(self.client.get, f"{self.ns}:owner")
        except redis.ResponseError as e:
            raise self._refused(e) from None
        return None if held is None else "".join(c if c.isprintable() else "?"
                                                 for c in held.decode("utf-8", "replace")[:300])

    def mark(self, claim: str) -> None:
        """Write the claim id of the run that owns the ring into its meta (a resume checks it is still its own)."""
        try:
            self._retrying(self.client.hset, self.keys[1], "claim", claim)
        except redis.ResponseError as e:
            raise self._refused(e) from None

    def marked(self) -> str | None:
        """The claim id in the ring's meta (None: no run marked it, e.g. one made before claims had ids)."""
        try:
            value = self._retrying(self.client.hget, self.keys[1], "claim")
        except redis.ResponseError as e:
            raise self._refused(e) from None
        return None if value is None else value.decode("utf-8", "replace")[:64]

    def release(self, owner: str) -> None:
        """Let go of a claim this run made (compare and delete: another run's claim stays)."""
        try:
            self._retrying(self.client.eval, _RELEASE, 1, f"{self.ns}:owner", owner)
        except redis.ResponseError as e:
            raise self._refused(e) from None

    def rewind(self, inserted: int) -> None:
        """Back to the state after `inserted` inserts (a resumed run drops what its killed predecessor
        wrote after the checkpoint: those slots are written again next; a ring that wrapped since keeps the
        newer records in the slots they overwrote)."""
        cursor, size = inserted % self.capacity, min(inserted, self.capacity)
        try:
            self._retrying(self.client.hset, self.keys[1], mapping={"cursor": cursor, "size": size,
                                                                    "inserted": inserted})
        except redis.ResponseError as e:
            raise self._refused(e) from None

    def stats(self) -> dict:
        try:
            meta = self._retrying(self.client.hgetall, self.keys[1])
        except redis.ResponseError as e:
            raise self._refused(e) from None
        try:
            size, inserted = int(meta.get(b"size", 0)), int(meta.get(b"inserted", 0))
            capacity = int(meta.get(b"capacity", self.capacity))
            if not 0 <= size <= capacity == self.capacity or inserted < size:
                raise ValueError
        except ValueError:
            raise ReplayDamaged(f"replay shard {self.ns} at {redact(self.url)}: its key {self.keys[1]} is damaged "
                                f"(size={meta.get(b'size')!r}, capacity={meta.get(b'capacity')!r}, "
                                f"inserted={meta.get(b'inserted')!r})") from None
        return {"size": size, "inserted": inserted, "capacity": self.capacity, "rejected": dict(self.codec.rejected)}
