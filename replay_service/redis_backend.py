"""`--replay redis-local` (servers the run starts, `local_redis`) or `--replay redis://...` (servers elsewhere, one
shard per URL): the run's replay on Redis (`redis_replay.RedisReplay`), and the claim that makes a run id's
namespace on a shared Redis one run's own.

On a shared Redis a run owns its run id's namespace: a new run claims it (atomically: of two runs started at
once with one id, one goes on) and marks each ring with a claim id of its own, which its checkpoints keep.
A new run refuses an id that another run claimed or that holds transitions, unless told to replace them
(`--overwrite`), and takes another run directory's claim only with `--take-run-id`; a resumed run (`resume`:
its checkpoint) takes its namespace back only while the rings still carry its claim id."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from replay_service.contract import BackendError, ReplayBackend
from replay_service.flags import flag, positive
from replay_service.redis_urls import RedisSetupError, given_password, parse_urls, redact_urls, with_password

LOCAL = "redis-local"
BOTH = ("run", "grid")  # may change when a run or a grid is resumed


@dataclass(frozen=True)
class RedisFlags:
    """The Redis backend's own flags (`ReplayBackend.flags`)."""

    replay_password_file: str = flag("", "a file whose first line is the Redis password (for URLs that name none; "
                                         "instead of REDIS_PASSWORD)", role="run", resume=BOTH)
    replay_timeout: float = flag(60.0, "seconds a Redis shard may stay unreachable (the run pauses, retrying) "
                                       "before the run stops", role="run")
    replay_persist: bool = flag(False, "redis-local: keep an append-only file in the run directory", role="run")
    take_run_id: bool = flag(False, "with --overwrite on a shared Redis: take a --run-id whose replay another run "
                                    "directory claimed (that run can then no longer resume)", role="run",
                             after="overwrite")

    def check(self) -> None:
        positive(self, "replay_timeout")


class RedisBackend(ReplayBackend):
    flags = RedisFlags
    names = (LOCAL,)
    scheme = "redis"
    shown = (LOCAL, "redis:// URLs")
    entries = ("redis",)  # redis-local's servers' files

    def check(self, cfg) -> None:
        if cfg.replay != LOCAL:
            urls = _urls(cfg.replay)
            if cfg.replay_shards not in (1, len(urls)):
                raise BackendError("replay_shards", f"{cfg.replay_shards}, but --replay names {len(urls)} servers "
                                                    "(one shard per URL)")
        elif cfg.address.startswith("ray://") and not cfg.grid:
            raise BackendError("replay", "redis-local with a ray:// client: its servers would run on this machine, "
                                         "out of the cluster's actors' reach; run the job on the cluster (ray exec, "
                                         "ray job submit), or give --replay redis://host:port of a server they "
                                         "reach")

    def settle(self, cfg) -> dict:
        # a password file's absolute path: a resume from another working directory finds it
        given = cfg.flags(RedisFlags).replay_password_file
        settled = {"replay_password_file": str(Path(given).expanduser().resolve())} if given else {}
        return settled if cfg.replay == LOCAL else {**settled, "replay_shards": len(_urls(cfg.replay))}

    def mask(self, value: str) -> str:
        return redact_urls(value)

    def unmask(self, value: str, flags: Mapping[str, Any], what: str) -> str:
        if "***" not in value:
            return value
        try:
            password = given_password(flags.get("replay_password_file", ""))
        except RedisSetupError as e:
            raise BackendError("replay_password_file", str(e)) from None
        if not password:
            raise BackendError("replay", f"the {what}'s Redis URL has a password that was not saved: give --replay "
                                         "with it again, --replay-password-file FILE, or set REDIS_PASSWORD")
        return value.replace("***", quote(password, safe=""))

    def fill_secrets(self, value: str, flags: Mapping[str, Any]) -> str:
        if value == LOCAL:
            return value
        try:
            return ",".join(with_password(u, flags.get("replay_password_file", "")) for u in parse_urls(value))
        except RedisSetupError as e:
            raise BackendError("replay", str(e)) from None

    def moves(self, old: str, new: str) -> bool:
        return LOCAL not in (old, new) and len(old.split(",")) == len(new.split(","))

    def preflight(self, cfg) -> None:
        from replay_service.local_redis import ping, redis_server_binary  # (the client: here, not in checks)

        try:
            if cfg.replay == LOCAL:
                redis_server_binary()
            else:
                for url in parse_urls(cfg.replay):
                    ping(with_password(url, cfg.flags(RedisFlags).replay_password_file))
        except RedisSetupError as e:
            raise BackendError("replay", str(e)) from None

    def cannot_resume(self, config: dict) -> str:
        if config.get("replay") == LOCAL and not config.get("replay_persist"):
            return "its redis-local replay was not persisted (--replay-persist)"
        return ""

    def run_dir_entries(self, cfg) -> tuple[str, ...]:
        return ("redis/",) if cfg.replay == LOCAL else ()

    def open(self, cfg, spec, backend, out: Path, resume: dict | None, extras: tuple):
        from replay_service.redis_replay import RedisReplay, RedisSettings  # (redis-py: where a run opens it)

        fields = RedisSettings.__dataclass_fields__
        replay = RedisReplay(RedisSettings(**{name: cfg.value(name) for name in fields}), spec, out,
                             backend.concurrent, backend.reachable_address(), extras)
        try:
            _claim(replay, cfg, out, resume)
        except BaseException:
            replay.close(started=False)
            raise
        return replay


def _urls(value: str) -> list[str]:
    try:
        return parse_urls(value)
    except RedisSetupError as e:
        raise BackendError("replay", str(e)) from None


def claimed_dir(owner: str, run_id: str) -> str:
    """The run directory a claim of `run_id`'s namespace names, or "". Its text is `run <run_id> writing <dir>
    since <time>, claim <id>`: read with the run id known and the last " since " (the time and claim id after it
    have none), a run id or directory with those words in it is read right."""
    prefix = f"run {run_id} writing "
    if not owner.startswith(prefix):
        return ""
    directory, since, _ = owner[len(prefix):].rpartition(" since ")
    return directory if since else ""


def _claim(replay, cfg, out: Path, resume: dict | None) -> None:
    """This run's claim on its run id's namespace (the module's docstring), or BackendError naming who holds it."""
    since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    kept = (resume or {}).get("replay_claim")
    claim_id = kept or secrets.token_hex(8)
    owner = f"run {cfg.run_id} writing {Path(out).resolve()} since {since}, claim {claim_id}"
    if kept is not None:
        strange = next((m for m in replay.marks() if m != kept), "")
        if strange != "":
            carried = "no claim" if strange is None else f"claim {strange}"
            raise BackendError("resume", f"the replay of run id {cfg.run_id!r} on this Redis is no longer "
                                         f"this run's: its rings carry {carried}, not this checkpoint's {kept} "
                                         f"(now held by {replay.holder() or 'no run'}); the transitions it "
                                         "stored are gone: start it again with --overwrite true and "
                                         "--take-run-id true, or with another --run-id")
    elif cfg.overwrite and not cfg.flags(RedisFlags).take_run_id:
        other = replay.holder()
        if other is not None and claimed_dir(other, cfg.run_id) != str(Path(out).resolve()):
            raise BackendError("run_id", f"{cfg.run_id!r} is claimed on this Redis by another run directory "
                                         f"({other}); --overwrite replaces this --out's own run only: give "
                                         "another --run-id, or --take-run-id true to take it (that run can "
                                         "then no longer resume)")
    holder = replay.claim(owner, take=resume is not None or cfg.overwrite)
    held = 0 if resume is not None else sum(st["inserted"] for st in replay.stats())
    if holder is None and held and not cfg.overwrite:
        replay.release(owner)
        holder = f"no run claimed it, but it holds {held:,} transitions"
    if holder is not None:
        raise BackendError("run_id", f"{cfg.run_id!r} already names a run's replay on this Redis: {holder}; "
                                     "choose another --run-id, continue that run with --resume, or replace "
                                     "it with --overwrite true")
    for shard in replay.shards if held else []:
        shard.rewind(0)
    replay.mark(claim_id)
