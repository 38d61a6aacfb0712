"""The msgpack record codec: round trips, and malformed records rejected and counted, never unpickled."""

import pickle

import msgpack
import numpy as np
import pytest

from actors.envs import env_spec, make_env
from learner.methods import extras
from replay_service.buffer import make_packer
from replay_service.codec import SCHEMA_VERSION, Codec, RecordError

LESSON = extras("lesson")  # a method with a per-step extra: the option (0..3, int8)


def codec_for(name, extra=()):
    spec = env_spec(name)
    return Codec(make_packer(spec), spec.n_actions, extra), spec


def real_chunk(name, n=20, seed=0, extra=()):
    """Transitions from the real environment, packed as an actor packs them (with LESSON's options if
    `extra` declares them)."""
    codec, spec = codec_for(name, extra)
    env, rng = make_env(name, seed=seed), np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows = {k: [] for k in ("obs", "next_obs", "action", "reward", "terminated", "truncated", "episode")}
    episode = 0
    for _ in range(n):
        a = int(rng.integers(spec.n_actions))
        nxt, r, term, trunc, _ = env.step(a)
        for k, v in zip(rows, (obs, nxt, a, r, term, trunc, episode), strict=True):
            rows[k].append(v)
        obs = nxt
        if term or trunc:
            obs, _ = env.reset()
            episode += 1
    chunk = {k: np.asarray(v) for k, v in rows.items()}
    chunk["obs"], chunk["next_obs"] = codec.packer.pack(chunk["obs"]), codec.packer.pack(chunk["next_obs"])
    if extra:
        chunk["option"] = (np.arange(n) % 4).astype(np.int8)  # LESSON's options travel with the records
    return codec, spec, chunk


@pytest.mark.parametrize("extra", [(), LESSON], ids=["core", "lesson"])
@pytest.mark.parametrize("name", ["MinAtar/Breakout", "DoorKey", "CliffWalk"])
def test_round_trip(name, extra):
    codec, spec, chunk = real_chunk(name, extra=extra)
    records = codec.encode_chunk(chunk, actor=3, version=7)
    assert all(isinstance(r, bytes) for r in records)
    batch, errors = codec.decode_batch(records)
    assert errors == [] and not codec.rejected
    assert set(batch) == {"obs", "next_obs", "action", "reward", "terminated", *(f.name for f in extra)}
    for k in ("obs", "next_obs", "action", "terminated", *(f.name for f in extra)):
        np.testing.assert_array_equal(batch[k], chunk[k])
    np.testing.assert_array_equal(batch["reward"], chunk["reward"].astype(np.float32))
    # and back to observations the learner can use
    np.testing.assert_array_equal(codec.packer.unpack(batch["obs"]).shape[1:], spec.obs_shape)
    rec = codec.decode(records[0])
    assert rec["actor"] == 3 and rec["version"] == 7 and rec["v"] == SCHEMA_VERSION


def tampered(record: bytes, **changes) -> bytes:
    rec = msgpack.unpackb(record, raw=False)
    for k, v in changes.items():
        if v is KeyError:
            del rec[k]
        else:
            rec[k] = v
    return msgpack.packb(rec, use_bin_type=True)


def test_malformed_records_are_rejected_and_counted():
    codec, _, chunk = real_chunk("MinAtar/Breakout", n=4, extra=LESSON)
    good = codec.encode_chunk(chunk, actor=0, version=1)[0]
    bad = {
        "truncated bytes": (good[:len(good) // 2], "not_msgpack"),
        "trailing garbage": (good + b"\x00", "not_msgpack"),
        "old version": (tampered(good, v=1), "version"),
        "wrong shape": (tampered(good, shape=[10, 10, 3]), "shape"),
        "short observation": (tampered(good, obs=b"\x00" * 3), "shape"),
        "wrong dtype": (tampered(good, dtype="float32"), "dtype"),
        "NaN reward": (tampered(good, reward=float("nan")), "value"),
        "infinite reward": (tampered(good, reward=float("inf")), "value"),
        "reward beyond float32": (tampered(good, reward=3.5e38), "value"),
        "negative action": (tampered(good, action=-1), "value"),
        "action out of range": (tampered(good, action=6), "value"),
        "option out of range": (tampered(good, option=4), "value"),
        "negative option": (tampered(good, option=-1), "value"),
        "no option": (tampered(good, option=KeyError), "keys"),
        "option not an int": (tampered(good, option=1.0), "type"),
        "extra key": (tampered(good, evil=1), "keys"),
        "missing key": (tampered(good, reward=KeyError), "keys"),
        "foreign type": (tampered(good, action="0"), "type"),
        "bool as int": (tampered(good, action=True), "type"),
        "pickled payload": (pickle.dumps({"v": 1, "obs": b""}), None),
        "empty blob": (b"", "empty"),
        "huge length field": (b"\xc6\xff\xff\xff\xf0", "not_msgpack"),  # bin32 claiming ~4 GB
        "not a map": (msgpack.packb([1, 2, 3]), "type"),
        "extension type": (msgpack.packb(msgpack.ExtType(1, b"x")), "type"),
    }
    for what, (blob, kind) in bad.items():
        with pytest.raises(RecordError) as err:
            codec.decode(blob)
        if kind is not None:
            assert err.value.kind == kind, what
    batch, errors = codec.decode_batch([good, *[b for b, _ in bad.values()], good])
    assert len(batch["action"]) == 2 and len(errors) == len(bad)
    assert sum(codec.rejected.values()) == len(bad) and codec.rejected["value"] == 7


def test_a_record_carries_exactly_its_methods_extras():
    """A DQN run's replay refuses a record with an option (another method's extra), and LESSON's one without."""
    dqn, _ = codec_for("CliffWalk")
    lesson, _, chunk = real_chunk("CliffWalk", n=2, extra=LESSON)
    with_option = lesson.encode_chunk(chunk, actor=0, version=0)[0]
    without = dqn.encode_chunk(chunk, actor=0, version=0)[0]  # (the chunk's option is not a DQN field)
    assert "option" not in msgpack.unpackb(without, raw=False)
    for codec, blob in ((dqn, with_option), (lesson, without)):
        with pytest.raises(RecordError) as err:
            codec.decode(blob)
        assert err.value.kind == "keys"


def test_schema_2_records_are_read_with_their_option():
    """Records written before the extras (schema 2: an option in every record, 0 but for LESSON) are read: a
    LESSON replay keeps their option, another method's drops a 0 and refuses any other value."""
    lesson, _, chunk = real_chunk("CliffWalk", n=3, extra=LESSON)
    old = [tampered(r, v=2) for r in lesson.encode_chunk(chunk, actor=0, version=0)]
    batch, errors = lesson.decode_batch(old)
    assert errors == [] and batch["option"].tolist() == chunk["option"].tolist()
    dqn, _ = codec_for("CliffWalk")
    batch, errors = dqn.decode_batch(old)
    assert "option" not in batch and len(batch["action"]) == 1  # option 0 read; options 1 and 2 refused
    assert [e.kind for e in errors] == ["value", "value"]
    with pytest.raises(RecordError) as err:
        dqn.decode(tampered(old[0], option=KeyError))
    assert err.value.kind == "keys"


def test_a_pickled_object_is_never_constructed(tmp_path):
    codec, _ = codec_for("CliffWalk")
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    with pytest.raises(RecordError):
        codec.decode(pickle.dumps(Boom()))
    assert not marker.exists()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_float_observation_with_nan_or_inf_is_rejected(bad):
    """CartPole's observations are float32: a NaN or inf in one would poison every update that draws it."""
    codec, _, chunk = real_chunk("CartPole-v1", n=3)
    good = codec.encode_chunk(chunk, actor=0, version=1)
    obs = np.frombuffer(msgpack.unpackb(good[0], raw=False)["obs"], dtype=np.float32).copy()
    obs[2] = bad
    for key in ("obs", "next_obs"):
        with pytest.raises(RecordError, match="NaN or inf") as err:
            codec.decode(tampered(good[0], **{key: obs.tobytes()}))
        assert err.value.kind == "value"
    assert codec.decode(good[1])["action"] in (0, 1)


def test_a_schema_refuses_extras_it_could_not_hold_or_check():
    from replay_service.schema import Field, Schema

    for bad in (Field("x", "int8", 0, 300), Field("x", "int8", 5, 2), Field("x", "float32", 0, 1),
                Field("x", "float64"), Field("action", "int64"), Field("chunk_id", "int8")):
        with pytest.raises(ValueError):
            Schema((bad,))
    with pytest.raises(ValueError):
        Schema((Field("x", "int8"), Field("x", "int16")))
    assert Field("x", "int8").bounds() == (-128, 127) and Field("x", "float32").bounds() is None


def test_a_schema_2_record_is_refused_where_the_method_declares_other_extras():
    lesson, _, chunk = real_chunk("CliffWalk", n=1, extra=LESSON)
    old = tampered(lesson.encode_chunk(chunk, actor=0, version=0)[0], v=2)
    from replay_service.schema import Field

    other = Codec(lesson.packer, 4, (Field("x", "int8"),))
    with pytest.raises(RecordError) as err:
        other.decode(old)
    assert err.value.kind == "version"
    with pytest.raises(ValueError, match="without"):  # a chunk that lacks the method's extra is not sent
        other.encode_chunk(chunk, actor=0, version=0)
