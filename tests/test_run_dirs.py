"""A run directory is never overwritten by accident, has one writer, and a resume continues only its own run.

Each mistake ends in one line on stderr that names the bad value or path, exit status 2, and every file that
existed before is byte for byte the same."""

import json
import os
from pathlib import Path

import pytest
import torch

from beta_dqn.launcher.main import main

SHORT = ["--env", "CliffWalk", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "2", "--total-steps",
         "1200", "--learning-starts", "400", "--eval-every", "600", "--eval-episodes", "2", "--checkpoint-every",
         "600", "--wandb", "disabled", "--progress", "false", "--json", "true"]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != ".lock"}


def one_line(capsys, status: int, expected: int = 2) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert status == expected, err
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished short run (and its checkpoint at its end)."""
    out = tmp_path_factory.mktemp("runs") / "done"
    assert main([*SHORT, "--out", str(out)]) == 0
    return out


def copy_of(run: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run, to, ignore=shutil.ignore_patterns(".lock"))
    return to


def test_a_new_run_refuses_a_directory_that_holds_one(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    before = snapshot(out)
    capsys.readouterr()
    line = one_line(capsys, main([*SHORT, "--seed", "5", "--out", str(out)]))
    assert f"{out} already holds a run (summary.json): it is finished: give another --out" in line
    assert "--overwrite true" in line
    assert snapshot(out) == before
    (out / "summary.json").unlink()  # stopped after a checkpoint: it can be continued
    before = snapshot(out)
    line = one_line(capsys, main([*SHORT, "--seed", "5", "--out", str(out)]))
    assert f"(checkpoint.pt): continue it with --resume {out}, or replace it with --overwrite true" in line
    assert snapshot(out) == before


def test_overwrite_replaces_the_run_that_was_there(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    old_snapshots = sorted(p.name for p in (out / "replay").iterdir())
    assert old_snapshots and (out / ".written").is_file()
    (out / "replay" / "shard0-999.npz").write_bytes(b"a user's own file")  # not the run's: it stays
    (out / "wandb").mkdir(exist_ok=True)
    (out / "wandb" / "notes.txt").write_text("mine")
    assert main([*SHORT, "--seed", "5", "--out", str(out), "--overwrite", "true"]) == 0
    assert json.loads((out / "summary.json").read_text())["seed"] == 5
    assert (out / "replay" / "shard0-999.npz").read_bytes() == b"a user's own file"
    assert (out / "wandb" / "notes.txt").read_text() == "mine"
    new = json.loads((out / "summary.json").read_text())["env_steps"]
    # the old run's snapshots went with it (the new run's, at its own step count, are there)
    assert sorted(p.name for p in (out / "replay").iterdir()) == sorted(
        ["shard0-999.npz", *(f"shard{i}-{new}.npz" for i in range(len(old_snapshots)))])


def test_resume_and_overwrite_together_are_refused(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out), "--overwrite", "true"]))
    assert "--overwrite" in line and "--resume" in line
    assert snapshot(out) == before


def test_resume_with_another_out_is_refused(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out), "--out", str(tmp_path / "elsewhere")]))
    assert line.endswith(f"--out: '{tmp_path / 'elsewhere'}': --resume continues the run in '{out}' and writes there; "
                         "give one of them")
    assert snapshot(out) == before and not (tmp_path / "elsewhere").exists()


def test_a_second_writer_is_refused_while_a_run_holds_the_directory(tmp_path, capsys):
    from beta_dqn.driver.state import RunDirectory

    out = tmp_path / "busy"
    holder = RunDirectory(out)  # another run holds it (a lock is per open file, even within one process)
    try:
        line = one_line(capsys, main([*SHORT, "--out", str(out)]))
    finally:
        holder.release()
    assert f"{out} is in use by process" in line
    assert sorted(p.name for p in out.iterdir()) == [".lock"]
    assert main([*SHORT, "--out", str(out)]) == 0  # released: the run goes ahead


@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_an_out_that_is_no_directory_is_one_line(tmp_path, capsys, where):
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me\n")
    out = blocker if where == "file" else blocker / "run"
    line = one_line(capsys, main([*SHORT, "--out", str(out)]))
    assert str(out) in line and "--out" in line
    assert blocker.read_text() == "keep me\n"


def test_a_torn_last_metrics_line_is_cut_on_resume(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    with open(out / "metrics.jsonl", "a") as f:
        f.write('{"env_steps": 12')  # killed mid-write
    capsys.readouterr()
    assert main(["--resume", str(out), "--json", "true"]) == 0
    err = capsys.readouterr().err
    assert "last line was cut short" in err and "Traceback" not in err
    assert all(json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines())


def test_a_damaged_metrics_line_before_the_last_is_one_line(finished, tmp_path, capsys):
    out = copy_of(finished, tmp_path / "run")
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert lines  # the damaged line goes before them
    (out / "metrics.jsonl").write_text("\n".join(["not json", *lines]) + "\n")
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out)]))
    assert "metrics.jsonl line 1 is damaged" in line
    assert snapshot(out) == before


def test_a_checkpoint_from_another_run_does_not_take_this_one_over(finished, tmp_path, capsys):
    other = copy_of(finished, tmp_path / "other")
    assert main([*SHORT, "--seed", "9", "--out", str(tmp_path / "mine")]) == 0
    mine = tmp_path / "mine"
    (mine / "checkpoint.pt").write_bytes((other / "checkpoint.pt").read_bytes())
    before = snapshot(mine)
    line = one_line(capsys, main(["--resume", str(mine)]))
    run_id = torch.load(other / "checkpoint.pt", weights_only=True)["config"]["run_id"]
    assert f"belongs to run {run_id!r}" in line and "copied from another run directory" in line
    assert snapshot(mine) == before


@pytest.mark.parametrize("edit", ["value", "damaged"])
def test_an_edited_config_json_is_refused_on_resume(finished, tmp_path, capsys, edit):
    out = copy_of(finished, tmp_path / "run")
    config = json.loads((out / "config.json").read_text())
    if edit == "value":
        (out / "config.json").write_text(json.dumps({**config, "lr": 0.5}))
    else:
        (out / "config.json").write_text('{"env": "CliffW')
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out)]))
    assert ("--lr 0.5" in line and "edited after the checkpoint" in line) if edit == "value" else "damaged" in line
    assert snapshot(out) == before


def test_a_grid_starts_over_only_a_grids_earlier_attempt(tmp_path):
    from beta_dqn.launcher.grid_task import _made_by_a_grid

    run = tmp_path / "CliffWalk_dqn_s0"
    run.mkdir()
    assert not _made_by_a_grid(run)  # nothing there
    (run / "config.json").write_text(json.dumps({"grid": "grid-1"}))
    assert _made_by_a_grid(run)
    (run / "config.json").write_text(json.dumps({"grid": ""}))  # a single run put there
    assert not _made_by_a_grid(run)
    (run / "config.json").write_text("[1, 2")
    assert not _made_by_a_grid(run)


def test_a_run_id_already_used_on_a_shared_redis_is_refused(redis_url, tmp_path, capsys):
    import redis

    argv = [*SHORT, "--replay", redis_url, "--run-id", "shared-id"]
    assert main([*argv, "--out", str(tmp_path / "first")]) == 0
    client = redis.Redis.from_url(redis_url)
    keys = sorted(client.keys("bdqn:shared-id:*"))
    stored = {k: client.dump(k) for k in keys}
    capsys.readouterr()
    line = one_line(capsys, main([*argv, "--out", str(tmp_path / "second")]))
    assert "--run-id: 'shared-id' already names a run's replay" in line and "--resume" in line
    assert sorted(client.keys("bdqn:shared-id:*")) == keys and {k: client.dump(k) for k in keys} == stored


def test_a_full_disk_at_a_checkpoint_is_one_line_and_keeps_the_last_one(tmp_path, monkeypatch, capsys):
    real_save, saves = torch.save, []

    def save(obj, f, *args, **kwargs):
        if "learner" not in obj:  # best.pt (the best evaluation's networks alone)
            return real_save(obj, f, *args, **kwargs)
        saves.append(f)
        if len(saves) == 2:  # the second checkpoint meets a full disk (what torch says then)
            f.write(b"half")
            raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 0")
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)  # (beta_dqn.driver.state imports it when it writes)
    out = tmp_path / "run"
    line = one_line(capsys, main([*SHORT, "--out", str(out)]), expected=1)
    assert f"cannot write {out / 'checkpoint.pt'} (" in line and "unexpected pos 64 vs 0" in line
    assert "the last checkpoint written is intact" in line
    assert torch.load(out / "checkpoint.pt", weights_only=True)["counters"]["env_steps"] == 600
    assert not (out / "checkpoint.pt.tmp").exists()


def test_a_full_disk_for_the_metrics_is_one_line(tmp_path, monkeypatch, capsys):
    import errno

    from beta_dqn.driver.outputs import RunLogger

    class Full:
        name = str(tmp_path / "run" / "metrics.jsonl")

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

        def close(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    real_init = RunLogger.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.metrics_file.close()
        self.metrics_file = Full()

    monkeypatch.setattr(RunLogger, "__init__", init)
    line = one_line(capsys, main([*SHORT, "--log-every", "0.01", "--out", str(tmp_path / "run")]), expected=1)
    assert line.endswith(f"cannot write {tmp_path / 'run' / 'metrics.jsonl'} (No space left on device)")


@pytest.mark.parametrize("damage", ["truncated", "missing", "foreign", "rng", "rng-state", "columns"])
def test_a_damaged_replay_snapshot_is_one_line_on_resume(finished, tmp_path, capsys, damage):
    import numpy as np

    out = copy_of(finished, tmp_path / "run")
    snapshot_file = next((out / "replay").glob("*.npz"))
    if damage == "truncated":
        snapshot_file.write_bytes(snapshot_file.read_bytes()[:100])
    elif damage == "missing":
        snapshot_file.unlink()
    elif damage == "foreign":  # a valid .npz, but not a replay shard's
        with open(snapshot_file, "wb") as f:
            np.savez(f, something=np.zeros(3))
    else:  # a shard's snapshot with its sampler's random state, or a column, damaged
        with np.load(snapshot_file, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        if damage == "columns":
            arrays["action"] = arrays["action"][:1]
        else:
            text = b"{'bit_generator': 'PCG64', 'state': (" if damage == "rng" else b"{'bit_generator': 'PCG64'}"
            arrays["rng"] = np.frombuffer(text, dtype=np.uint8)
        with open(snapshot_file, "wb") as f:
            np.savez(f, **arrays)
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out)]))
    assert "--resume: the replay snapshot of" in line and "cannot be read" in line
    assert snapshot(out) == before


def test_overwrite_touches_nothing_where_there_is_no_run(tmp_path):
    out = tmp_path / "project"
    (out / "wandb" / "mine").mkdir(parents=True)
    (out / "wandb" / "mine" / "notes").write_text("keep\n")
    assert main([*SHORT, "--out", str(out), "--overwrite", "true"]) == 0
    assert (out / "wandb" / "mine" / "notes").read_text() == "keep\n"


def test_a_lock_file_planted_as_a_link_is_never_written_through(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").symlink_to(victim)
    line = one_line(capsys, main([*SHORT, "--out", str(out)]))
    assert line.endswith(f"--out: {out / '.lock'} is a symbolic link: a run writes its own files there, never "
                         "through a link (remove the link, or give another --out)")
    assert victim.read_text() == "keep\n"


def test_a_run_id_claimed_by_a_run_that_has_stored_nothing_yet_is_refused(redis_url, tmp_path, capsys):
    """The claim is the key, not the data: a run that started a moment ago and has inserted nothing yet holds
    its id; a resumed run takes its own back, and --overwrite takes it."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.set("bdqn:claimed-id:0:owner", "run claimed-id writing /elsewhere since 2026-11-26 10:00 UTC")
    argv = [*SHORT, "--replay", redis_url, "--run-id", "claimed-id", "--out", str(tmp_path / "second")]
    line = one_line(capsys, main(argv))
    assert "--run-id: 'claimed-id' already names a run's replay on this Redis: run claimed-id writing" in line
    assert "writing /elsewhere since" in line
    assert "key bdqn:claimed-id:0:owner" in line and "--overwrite true" in line
    assert client.get("bdqn:claimed-id:0:owner") == b"run claimed-id writing /elsewhere since 2026-11-26 10:00 UTC"
    assert client.keys("bdqn:claimed-id:*") == [b"bdqn:claimed-id:0:owner"]
    # another run directory's claim: --overwrite alone replaces this --out's own run only
    line = one_line(capsys, main([*argv, "--overwrite", "true"]))
    assert "--run-id: 'claimed-id' is claimed on this Redis by another run directory (run claimed-id writing " \
           "/elsewhere since" in line and "--take-run-id true" in line
    assert main([*argv, "--overwrite", "true", "--take-run-id", "true"]) == 0
    assert str(tmp_path / "second") in client.get("bdqn:claimed-id:0:owner").decode()


def test_of_two_runs_claiming_one_id_at_once_one_gets_it_and_a_partial_claim_is_let_go(redis_url):
    import threading

    from replay_service.buffer import ObsPacker
    from replay_service.codec import Codec
    from replay_service.redis_shard import RedisShard

    packer = ObsPacker((4,), "float32", binary=False)

    def shard(i):
        return RedisShard(redis_url, "race-id", i, 100, Codec(packer, 2))

    for attempt in range(20):
        a, b = shard(attempt), shard(attempt)
        start, results = threading.Barrier(2), {}

        def claim(who, s, start=start, results=results):
            start.wait()
            results[who] = s.claim(who)

        threads = [threading.Thread(target=claim, args=(w, s)) for w, s in (("A", a), ("B", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r is None for r in results.values()) == [False, True]  # exactly one holds it
        winner = "A" if results["A"] is None else "B"
        assert results["B" if winner == "A" else "A"] == winner

    from replay_service.redis_replay import RedisReplay

    replay = RedisReplay.__new__(RedisReplay)  # its shards only: no servers, no prefetch thread
    replay.shards = [shard(100), shard(101)]
    replay.shards[1].claim("someone else")
    holder = replay.claim("me")
    assert holder.startswith("someone else (key bdqn:race-id:101:owner at redis://")
    client = replay.shards[0].client
    assert client.get("bdqn:race-id:100:owner") is None  # the claim it made is let go
    assert replay.shards[0].claim("third") is None


def test_overwrite_that_cannot_remove_the_old_run_is_one_line(finished, tmp_path, monkeypatch, capsys):
    import errno

    import beta_dqn.files

    out = copy_of(finished, tmp_path / "run")
    snapshot_file = sorted((out / "replay").iterdir())[0]
    remove = beta_dqn.files._remove

    def busy(path, whole):
        if path == snapshot_file:
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        remove(path, whole)

    monkeypatch.setattr(beta_dqn.files, "_remove", busy)
    capsys.readouterr()
    line = one_line(capsys, main([*SHORT, "--out", str(out), "--overwrite", "true"]), expected=1)
    assert f"--overwrite: cannot remove {snapshot_file} of the run being replaced (Device or resource busy)" in line
    assert "partly removed: --overwrite true again once it can be" in line
    # the files go in the reverse order of their making: config.json, the run's mark, is still there (with the
    # checkpoint, written before the snapshot's removal failed... after it: gone); no new run started
    assert snapshot_file.is_file() and (out / "config.json").is_file() and not (out / "summary.json").exists()
    assert json.loads((out / "config.json").read_text()) == json.loads((finished / "config.json").read_text())


def test_a_run_that_could_not_start_lets_go_of_its_run_id(redis_url, tmp_path, capsys, monkeypatch):
    """The same command, corrected, goes ahead: a claim made by a run that then failed to start is let go."""
    import redis

    import beta_dqn.driver.run
    from beta_dqn.configuration.flags import ConfigError

    real_build = beta_dqn.driver.run.build

    def build(*args, **kwargs):
        raise ConfigError("actors", "refused for this test")

    monkeypatch.setattr(beta_dqn.driver.run, "build", build)
    argv = [*SHORT, "--replay", redis_url, "--run-id", "let-go-id", "--out", str(tmp_path / "run")]
    assert "--actors: refused for this test" in one_line(capsys, main(argv))
    assert redis.Redis.from_url(redis_url).get("bdqn:let-go-id:0:owner") is None
    monkeypatch.setattr(beta_dqn.driver.run, "build", real_build)
    assert main(argv) == 0


def test_a_run_id_whose_owner_key_is_damaged_is_one_line(redis_url, tmp_path, capsys):
    import redis

    client = redis.Redis.from_url(redis_url)
    client.hset("bdqn:odd-id:0:owner", mapping={"not": "a string"})
    argv = [*SHORT, "--replay", redis_url, "--run-id", "odd-id", "--out", str(tmp_path / "run")]
    line = one_line(capsys, main(argv), expected=1)
    assert "replay shard bdqn:odd-id:0 at redis://" in line and "WRONGTYPE" in line
    assert "its key bdqn:odd-id:0:owner is damaged" in line
    assert client.type("bdqn:odd-id:0:owner") == b"hash"


def test_a_ring_key_of_the_wrong_type_is_named(redis_url, tmp_path, capsys):
    import redis

    client = redis.Redis.from_url(redis_url)
    client.set("bdqn:ring-id:0:ring", "not a hash")
    argv = [*SHORT, "--replay", redis_url, "--run-id", "ring-id", "--out", str(tmp_path / "run")]
    line = one_line(capsys, main(argv), expected=1)
    assert "its key bdqn:ring-id:0:ring is damaged (" in line and "WRONGTYPE" in line


# ---- never through a link, never what the run did not write (a hostile tester's findings) ----

@pytest.mark.parametrize("name", ["metrics.jsonl", "config.json", "checkpoint.pt", "replay", "wandb", ".written"])
def test_a_run_directory_whose_entries_are_links_is_refused(tmp_path, capsys, name):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(victim / "precious" if "." in name else victim)
    line = one_line(capsys, main([*SHORT, "--out", str(out)]))
    assert line.endswith(f"--out: {out / name} is a symbolic link: a run writes its own files there, never through "
                         "a link (remove the link, or give another --out)")
    assert sorted(p.name for p in victim.iterdir()) == ["precious"] and (victim / "precious").read_text() == "keep\n"
    assert sorted(p.name for p in out.iterdir()) == [name]  # nothing written


def test_a_planted_temp_name_is_never_written_through(tmp_path, capsys):
    """Every whole-file write makes a new temp name of its own: a link planted at the old predictable
    `<name>.tmp` is left alone, and the checkpoint is a file, not a link."""
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "run"
    out.mkdir()
    for name in ("checkpoint.pt.tmp", "config.json.tmp", "summary.json.tmp", "metrics.jsonl.tmp"):
        (out / name).symlink_to(victim)
    assert main([*SHORT, "--out", str(out)]) == 0
    assert victim.read_text() == "keep\n"
    assert (out / "checkpoint.pt").is_file() and not (out / "checkpoint.pt").is_symlink()
    assert not [p for p in out.rglob("*.tmp") if not p.is_symlink()]  # no temp file of the run's left


def test_a_run_prunes_only_snapshots_it_wrote(tmp_path, capsys):
    """Snapshots of this run's earlier checkpoints go; a user's file in replay/, whatever its name, stays."""
    out = tmp_path / "run"
    (out / "replay").mkdir(parents=True)
    (out / "replay" / "mine.npz").write_bytes(b"a user's own")
    (out / "replay" / "shard0-7.npz").write_bytes(b"named like a snapshot, not this run's")
    assert main([*SHORT, "--out", str(out)]) == 0
    left = sorted(p.name for p in (out / "replay").iterdir())
    assert left == ["mine.npz", "shard0-1200.npz", "shard0-7.npz"]  # the 600-step snapshot was pruned
    assert "replay/shard0-600.npz" not in (out / ".written").read_text().split()
    assert "replay/shard0-1200.npz" in (out / ".written").read_text().split()


def test_the_redis_configuration_is_never_written_through_a_link_and_is_private(tmp_path, capsys):
    import stat

    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "run"
    (out / "redis" / "shard0").mkdir(parents=True)
    (out / "redis" / "shard0" / "redis.conf").symlink_to(victim)
    line = one_line(capsys, main([*SHORT, "--replay", "redis-local", "--out", str(out)]))
    assert "redis.conf is a symbolic link" in line and victim.read_text() == "keep\n"
    # a run of its own: the configuration (with the password) is its owner's alone
    out2 = tmp_path / "run2"
    assert main([*SHORT, "--replay", "redis-local", "--out", str(out2), "--replay-persist", "true"]) == 0
    conf = out2 / "redis" / "shard0" / "redis.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600 and not conf.is_symlink()


def _forge(ckpt: dict, change: str) -> None:
    import torch

    if change == "absurd steps":
        ckpt["counters"]["env_steps"] = 10**15
    elif change == "negative steps":
        ckpt["counters"]["env_steps"] = -5
    elif change == "bad evaluations":
        ckpt["evals"] = [{"env_steps": 600}, {"env_steps": 600}]
    elif change == "evaluations not a list":
        ckpt["evals"] = "x"
    elif change == "wrong shape":
        name = next(k for k, v in ckpt["learner"]["nets"].items() if getattr(v, "ndim", 0) == 2)
        ckpt["learner"]["nets"][name] = torch.zeros(3, 3)
    elif change == "bad generation":
        ckpt["counters"]["generation"] = "x"
    elif change == "bad visits":
        ckpt["visits"] = [1, 2]
    elif change == "another method":
        ckpt["learner"]["nets"] = {"q.0.weight": torch.zeros(2, 2)}


@pytest.mark.parametrize("change, message", [
    ("absurd steps", "its env_steps (1,000,000,000,000,000) are beyond the run's total_steps (1200)"),
    ("negative steps", "its env_steps counter is -5, not a whole number ≥ 0"),
    ("bad evaluations", "its evaluations' env steps [600, 600] are not increasing steps the run reached"),
    ("evaluations not a list", "its evaluations are not a list of results with env_steps"),
    ("wrong shape", "does not fit this run's beta_dqn networks or arm source (RuntimeError: "),
    ("another method", "does not fit this run's beta_dqn networks or arm source ("),
    ("bad generation", "its generation is 'x', not a whole number ≥ 0"),
    ("bad visits", "its state visits are not a list of 48 counts"),
])
def test_a_forged_checkpoint_is_one_line_on_resume(finished, tmp_path, capsys, change, message):
    """A loadable checkpoint whose contents do not fit the run (counters, evaluations, networks) is refused in one
    line before anything runs, and the directory is left as it was."""
    import torch

    out = copy_of(finished, tmp_path / "run")
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["counters"]["env_steps"] == 1200 and "nets" in ckpt["learner"]
    _forge(ckpt, change)
    torch.save(ckpt, out / "checkpoint.pt")
    (out / "summary.json").unlink()  # not finished: a run to continue
    before = snapshot(out)
    line = one_line(capsys, main(["--resume", str(out), "--progress", "false"]))
    assert message in line and "--resume: " in line
    assert snapshot(out) == before


@pytest.mark.parametrize("name", [".lock", ".written", "ray_warnings.log"])
def test_a_hard_link_planted_in_the_run_directory_is_refused(tmp_path, capsys, name):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    out = tmp_path / "run"
    out.mkdir()
    os.link(victim, out / name)
    line = one_line(capsys, main([*SHORT, "--out", str(out)]))
    assert line.endswith(f"--out: {out / name} has other hard links: a run writes its own files there, never into "
                         "another name's file (remove it, or give another --out)")
    assert victim.read_text() == "keep\n"


def test_a_directory_that_only_looks_like_a_run_is_not_emptied_by_overwrite(tmp_path, capsys):
    """--overwrite removes a run this program made (by its record, or for an older run its own names); a
    directory with a config.json of something else, and a wandb/ of the user's, is refused and left whole."""
    out = tmp_path / "mine"
    (out / "wandb" / "run-20240101-abc").mkdir(parents=True)
    (out / "wandb" / "run-20240101-abc" / "notes.txt").write_text("mine")
    (out / "config.json").write_text('{"model": "resnet"}')
    before = snapshot(out)
    line = one_line(capsys, main([*SHORT, "--out", str(out), "--overwrite", "true"]))
    assert f"--out: {out} holds a config.json that is not a run's of this program" in line
    assert snapshot(out) == before


def test_a_claims_directory_is_read_right_whatever_words_its_run_id_and_directory_hold():
    from replay_service.redis_backend import claimed_dir as _claimed_dir

    text = "run a writing b writing /x since y since 2026-11-26 10:00 UTC, claim 0a1b"
    assert _claimed_dir(text, "a writing b") == "/x since y"
    assert _claimed_dir(text, "a") == "b writing /x since y"  # (never asked: the claim's key is its run id's)
    assert _claimed_dir("run other writing /x since 2026", "a") == ""
    assert _claimed_dir("damaged text", "a") == ""


def test_a_snapshot_is_recorded_before_it_is_written(tmp_path, capsys, monkeypatch):
    """A run killed while it writes a snapshot (here: the write fails) still knows the file as its own."""
    from replay_service import client

    out, real = tmp_path / "run", client.write_atomically

    def write_then_fail(path, write, mode):
        real(path, write, mode)
        if path.name == "shard0-1200.npz":
            raise KeyboardInterrupt  # as a kill between the snapshot and the checkpoint that names it

    monkeypatch.setattr(client, "write_atomically", write_then_fail)
    assert main([*SHORT, "--out", str(out)]) == 130
    assert (out / "replay" / "shard0-1200.npz").is_file()
    assert "replay/shard0-1200.npz" in (out / ".written").read_text().split()
    # a SIGKILL mid-write leaves the write's temp file: --overwrite removes it with the file it was to become,
    # and nothing of the user's
    (out / "replay" / ".shard0-1200.npz.k3j9.tmp").write_bytes(b"half a snapshot")
    (out / "replay" / ".mine.npz.k3j9.tmp").write_bytes(b"a user's own")
    capsys.readouterr()
    monkeypatch.undo()
    assert main([*SHORT, "--out", str(out), "--overwrite", "true"]) == 0
    assert sorted(p.name for p in (out / "replay").iterdir()) == [".mine.npz.k3j9.tmp", "shard0-1200.npz"]


def test_a_run_made_before_runs_kept_a_record_is_recorded_whole_when_resumed(tmp_path, capsys, monkeypatch):
    """Resumed, a run with no `.written` (an older version's) records the files it had by name, so a later
    --overwrite removes all of that run and nothing else."""
    from replay_service import client

    out, real = tmp_path / "run", client.write_atomically

    def stop_at_the_second_snapshot(path, write, mode):
        if path.name == "shard0-1200.npz":
            raise KeyboardInterrupt
        real(path, write, mode)

    monkeypatch.setattr(client, "write_atomically", stop_at_the_second_snapshot)
    assert main([*SHORT, "--out", str(out)]) == 130
    monkeypatch.undo()
    (out / ".written").unlink()  # as an older version left it, with a snapshot a kill left behind
    (out / "replay" / "shard0-900.npz").write_bytes((out / "replay" / "shard0-600.npz").read_bytes())
    (out / "replay" / "mine.npz").write_bytes(b"a user's own")
    assert main(["--resume", str(out), "--progress", "false", "--json", "true"]) == 0
    recorded = (out / ".written").read_text().split()
    assert {"config.json", "metrics.jsonl", "evals.csv", "checkpoint.pt", "replay/shard0-900.npz",
            "replay/shard0-1200.npz"} <= set(recorded)
    capsys.readouterr()
    assert main([*SHORT, "--out", str(out), "--overwrite", "true"]) == 0
    assert sorted(p.name for p in (out / "replay").iterdir()) == ["mine.npz", "shard0-1200.npz"]
    assert (out / "replay" / "mine.npz").read_bytes() == b"a user's own"
