"""Transitions as msgpack records: how they travel to and rest in an external replay (Redis).

One record per transition, a msgpack map with a schema version:

    {"v": 3, "obs": bytes, "next_obs": bytes, "dtype": str, "shape": [int, ...], "packed": bool,
     "action": int, "reward": float, "terminated": bool, "truncated": bool,
     "actor": int, "episode": int, "version": int, <the method's extras>}

The extras are the per-step fields the run's method declares (`replay_service.schema`; LESSON's `option`),
each an int, float or bool of its declared range; a record carries exactly its run's. Schema 2 records
(every record carried an `option`, 0 but for LESSON) are read too: their `option` is the extra of a method
that declares one, and must be 0 for the others.

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
from replay_service.schema import CORE, RECORD_ONLY, Field, Schema

SCHEMA_VERSION = 3  # 3: a method's extras (2: an `option` in every record)
READABLE = (2, SCHEMA_VERSION)
BOOKKEEPING = (("v", int), ("obs", bytes), ("next_obs", bytes), ("dtype", str), ("shape", list), ("packed", bool),
               ("actor", int), ("version", int))
V2_OPTION = Field("option", "int8", 0, 127)  # what schema 2 stored with every record
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
    extras: tuple[Field, ...] = ()

    def __post_init__(self):
        self.schema = Schema(tuple(self.extras))
        self.fields = self.schema.columns + RECORD_ONLY  # the per-step fields of a record
        self.keys = frozenset({name for name, _ in BOOKKEEPING} | {f.name for f in self.fields})
        self.shape = list(self.packer.shape)
        self.dtype = self.packer.dtype.name
        self.obs_bytes = int(np.prod(self.packer.packed_shape)) * self.packer.packed_dtype.itemsize
        self.rejected: Counter = Counter()  # kind -> records rejected
        self.float_obs = np.issubdtype(self.packer.packed_dtype, np.floating)  # checked for NaN and inf

    # ---- encoding (actors) ----
    def encode_chunk(self, chunk: dict[str, np.ndarray], actor: int, version: int) -> list[bytes]:
        """A chunk as the actor builds it (packed observations) -> one record per transition."""
        n = len(chunk["action"])
        missing = [f.name for f in self.schema.columns if f.name not in chunk]
        if missing:
            raise ValueError(f"a chunk without {missing}: every transition holds them")
        columns = {f.name: (chunk[f.name] if f.name in chunk else np.zeros(n, dtype=f.dtype), f.kind)
                   for f in self.fields}  # (`truncated` and `episode` are zeros where a chunk has none)
        head = {"v": SCHEMA_VERSION, "dtype": self.dtype, "shape": self.shape, "packed": self.packer.binary,
                "actor": int(actor), "version": int(version)}
        return [msgpack.packb({**head, "obs": chunk["obs"][i].tobytes(), "next_obs": chunk["next_obs"][i].tobytes(),
                               **{name: kind(values[i]) for name, (values, kind) in columns.items()}},
                              use_bin_type=True)
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
        version = rec.get("v")
        if type(version) is not int or version not in READABLE:
            raise RecordError("version", f"schema {version!r}, expected one of {list(READABLE)}")
        fields, keys, extras = self.fields, self.keys, self.schema.extras
        if version == 2 and any(f.name != "option" for f in self.schema.extras):
            raise RecordError("version", f"schema 2, which holds no extras but an option, for a method that "
                                         f"declares {[f.name for f in self.schema.extras]}")
        if version == 2:  # every record had an option: the extra of a method that declares one, else 0
            option = next((f for f in self.schema.extras if f.name == "option"), V2_OPTION)
            fields, extras = CORE + RECORD_ONLY + (option,), (option,)
            keys = frozenset({name for name, _ in BOOKKEEPING} | {f.name for f in fields})
        if rec.keys() != keys:
            raise RecordError("keys", f"missing {sorted(keys - rec.keys())}, extra {sorted(rec.keys() - keys)}")
        for key, kind in (*BOOKKEEPING, *((f.name, f.kind) for f in fields)):
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
        for f in extras:  # within their declared range
            bounds = f.bounds()
            if bounds is not None and not bounds[0] <= rec[f.name] <= bounds[1]:
                raise RecordError("value", f"{f.name} {rec[f.name]} outside [{bounds[0]}, {bounds[1]}]")
            if f.kind is float and (not math.isfinite(rec[f.name]) or abs(rec[f.name]) > FLOAT32_MAX):
                raise RecordError("value", f"{f.name} {rec[f.name]} (finite float32 expected)")
        if version == 2:
            option = rec.pop("option")
            if "option" in self.schema.stored:
                rec["option"] = option
            elif option != 0:
                raise RecordError("value", f"option {option} in a schema 2 record of a method without options")
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
            **{f.name: np.array([r[f.name] for r in good], dtype=f.dtype) for f in self.schema.columns},
        }
        return batch, errors
