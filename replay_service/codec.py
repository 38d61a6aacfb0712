"""Transitions as msgpack records: how they travel to and rest in an external replay (Redis).

One record per transition, a msgpack map with a schema version:

    {"v": 2, "obs": bytes, "next_obs": bytes, "dtype": str, "shape": [int, ...], "packed": bool,
     "action": int, "option": int, "reward": float, "terminated": bool, "truncated": bool,
     "actor": int, "episode": int, "version": int}

`option` is the LESSON option active when the action was taken (0 for every other algorithm; schema 2
added it).

`obs`/`next_obs` are the observation's bytes, bit-packed (`packed`) for boolean and one-hot observations
(`replay_service.buffer.ObsPacker`). Decoding validates every field against what the run expects and
raises `RecordError(kind)` for anything else: bytes that are not msgpack, a length field larger than any
record can be, an unknown version, missing or extra keys, a foreign type, a wrong shape or dtype, a
reward that is not finite or does not fit float32 (the batch's type), a float observation with NaN or inf, an
action outside the action space. msgpack never constructs objects from the bytes
(extension types are refused, nothing is unpickled), so a hostile record can only be rejected.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import msgpack
import numpy as np

from replay_service.buffer import ObsPacker

SCHEMA_VERSION = 2
MAX_OPTION = 127  # the replay stores options as int8
KEYS = frozenset({"v", "obs", "next_obs", "dtype", "shape", "packed", "action", "option", "reward", "terminated",
                  "truncated", "actor", "episode", "version"})
MAX_RECORD_BYTES = 1 << 20  # no observation of the supported environments comes near 1 MiB
FLOAT32_MAX = float(np.finfo(np.float32).max)


class RecordError(ValueError):
    """A record that is not a valid transition of this run; `kind` names what was wrong."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def _refuse_ext(code: int, data: bytes):
    raise RecordError("type", f"msgpack extension type {code}")


@dataclass
class Codec:
    """Encodes a chunk into records and decodes records into a batch, for one run's observations."""

    packer: ObsPacker
    n_actions: int

    def __post_init__(self):
        self.shape = list(self.packer.shape)
        self.dtype = self.packer.dtype.name
        self.obs_bytes = int(np.prod(self.packer.packed_shape)) * self.packer.packed_dtype.itemsize
        self.rejected: Counter = Counter()  # kind -> records rejected
        self.float_obs = np.issubdtype(self.packer.packed_dtype, np.floating)  # checked for NaN and inf

    # ---- encoding (actors) ----
    def encode_chunk(self, chunk: dict[str, np.ndarray], actor: int, version: int) -> list[bytes]:
        """A chunk as the actor builds it (packed observations) -> one record per transition."""
        n = len(chunk["action"])
        truncated = chunk.get("truncated", np.zeros(n, dtype=bool))
        episode = chunk.get("episode", np.zeros(n, dtype=np.int64))
        option = chunk.get("option", np.zeros(n, dtype=np.int8))
        head = {"v": SCHEMA_VERSION, "dtype": self.dtype, "shape": self.shape, "packed": self.packer.binary,
                "actor": int(actor), "version": int(version)}
        return [msgpack.packb({**head, "obs": chunk["obs"][i].tobytes(), "next_obs": chunk["next_obs"][i].tobytes(),
                               "action": int(chunk["action"][i]), "option": int(option[i]),
                               "reward": float(chunk["reward"][i]), "terminated": bool(chunk["terminated"][i]),
                               "truncated": bool(truncated[i]), "episode": int(episode[i])}, use_bin_type=True)
                for i in range(n)]

    # ---- decoding (learner) ----
    def decode(self, blob) -> dict:
        """One record -> its fields, validated; RecordError otherwise."""
        if not isinstance(blob, (bytes, bytearray)) or not blob:
            raise RecordError("empty", "no bytes")
        if len(blob) > MAX_RECORD_BYTES:
            raise RecordError("length", f"{len(blob)} bytes")
        try:
            rec = msgpack.unpackb(blob, raw=False, strict_map_key=True, ext_hook=_refuse_ext, use_list=True,
                                  max_bin_len=MAX_RECORD_BYTES, max_str_len=64, max_array_len=16, max_map_len=32)
        except RecordError:
            raise
        except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, TypeError) as e:
            # a huge length field, truncated bytes and trailing garbage all land here
            raise RecordError("not_msgpack", type(e).__name__) from None
        if not isinstance(rec, dict):
            raise RecordError("type", f"a {type(rec).__name__}, not a map")
        if rec.get("v") != SCHEMA_VERSION:
            raise RecordError("version", f"schema {rec.get('v')!r}, expected {SCHEMA_VERSION}")
        if rec.keys() != KEYS:
            raise RecordError("keys", f"missing {sorted(KEYS - rec.keys())}, extra {sorted(rec.keys() - KEYS)}")
        for key, kind in (("obs", bytes), ("next_obs", bytes), ("dtype", str), ("shape", list), ("packed", bool),
                          ("action", int), ("option", int), ("reward", float), ("terminated", bool),
                          ("truncated", bool), ("actor", int), ("episode", int), ("version", int)):
            value = rec[key]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise RecordError("type", f"{key} is a {type(value).__name__}, expected {kind.__name__}")
        if rec["shape"] != self.shape:
            raise RecordError("shape", f"{rec['shape']}, expected {self.shape}")
        if rec["dtype"] != self.dtype or rec["packed"] != self.packer.binary:
            raise RecordError("dtype", f"{rec['dtype']} (packed={rec['packed']}), expected {self.dtype}")
        if len(rec["obs"]) != self.obs_bytes or len(rec["next_obs"]) != self.obs_bytes:
            raise RecordError("shape", f"observation of {len(rec['obs'])}/{len(rec['next_obs'])} bytes, "
                                       f"expected {self.obs_bytes}")
        if not 0 <= rec["action"] < self.n_actions:
            raise RecordError("value", f"action {rec['action']} outside [0, {self.n_actions})")
        if not 0 <= rec["option"] <= MAX_OPTION:
            raise RecordError("value", f"option {rec['option']} outside [0, {MAX_OPTION}]")
        if not math.isfinite(rec["reward"]) or abs(rec["reward"]) > FLOAT32_MAX:
            raise RecordError("value", f"reward {rec['reward']} (finite float32 expected)")
        if self.float_obs and not all(np.isfinite(np.frombuffer(rec[k], dtype=self.packer.packed_dtype)).all()
                                      for k in ("obs", "next_obs")):
            raise RecordError("value", "an observation with NaN or inf")
        if min(rec["actor"], rec["episode"], rec["version"]) < 0:
            raise RecordError("value", "negative actor, episode or version")
        return rec

    def decode_batch(self, blobs: list) -> tuple[dict[str, np.ndarray], list[RecordError]]:
        """Records -> a batch in the replay's packed layout, the valid ones only, and the errors.
        Every rejection is counted in `rejected` by kind."""
        good, errors = [], []
        for blob in blobs:
            try:
                good.append(self.decode(blob))
            except RecordError as e:
                self.rejected[e.kind] += 1
                errors.append(e)
        dtype, width = self.packer.packed_dtype, self.packer.packed_shape
        batch = {
            "obs": np.frombuffer(b"".join(r["obs"] for r in good), dtype=dtype).reshape(len(good), *width),
            "next_obs": np.frombuffer(b"".join(r["next_obs"] for r in good), dtype=dtype).reshape(len(good), *width),
            "action": np.array([r["action"] for r in good], dtype=np.int64),
            "option": np.array([r["option"] for r in good], dtype=np.int8),
            "reward": np.array([r["reward"] for r in good], dtype=np.float32),
            "terminated": np.array([r["terminated"] for r in good], dtype=bool),
        }
        return batch, errors
