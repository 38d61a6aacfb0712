"""The run: actors collect, the replay ratio is held, the learner updates and publishes, evals happen.

Written once against `driver.runtime`'s backend, so the serial and the Ray runner are the same loop.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import Counter, deque
from pathlib import Path

import numpy as np
import torch

from driver.config import CHECKPOINT_FORMAT, public
from driver.outputs import RunLogger
from driver.runtime import build, make_backend
from learner.algorithms import acting
from learner.learner import Learner, pick_device
from replay_service.client import concat, shard_of, split_batch
from replay_service.redis_replay import RedisReplay
from replay_service.redis_shard import ReplayUnavailable

SAMPLE_BATCHES = 8  # batches per replay sample call on Ray (data at most 2×8 updates old: negligible at 100k)
PREFETCH_CALLS = 2
HARVEST_EVERY = 8  # Ray: updates in a burst before finished chunks are harvested (16 doubled the p95 staleness)


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops (its message is one line for the user)."""


class RateLimiter:
    """The replay ratio as a contract: updates = ratio × (env steps inserted − learning_starts).

    The learner may update while it owes updates; actors may dispatch a chunk while the steps
    committed (inserted + in flight) stay within `slack` env steps of what the learner has consumed.
    """

    def __init__(self, ratio: float, learning_starts: int, batch_size: int, slack: int):
        self.ratio, self.learning_starts, self.batch_size = ratio, learning_starts, batch_size
        self.slack = slack  # at least one chunk, so a chunk always fits when the learner owes nothing
        self.first_update = max(learning_starts, batch_size)  # env steps before the first update

    def owed(self, env_steps: int) -> int:
        """Updates due after `env_steps` inserted steps."""
        if env_steps < self.first_update:
            return 0
        return math.floor(self.ratio * (env_steps - self.learning_starts))

    def may_update(self, updates: int, env_steps: int) -> bool:
        return updates < self.owed(env_steps)

    def may_collect(self, committed_after: int, updates: int) -> bool:
        consumed = max(self.learning_starts + (updates + 1) / self.ratio, self.first_update)
        return committed_after <= consumed + self.slack


def achieved_ratio(updates: int, env_steps: int, learning_starts: int) -> float:
    """Updates per env step inserted after learning started (the quantity the limiter holds)."""
    return updates / max(env_steps - learning_starts, 1)


def _json_number(value):
    """NaN (no notion of success, e.g. MinAtar) is written as null: JSON has no NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _commit() -> str | None:
    """The source's git commit (with "+dirty" for uncommitted changes), or None outside a git checkout."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _process_tree_rss() -> float:
    """Resident memory of this process and all its descendants (Ray's too), in GB."""
    import psutil

    me = psutil.Process()
    total = 0
    for p in [me, *me.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e9


class Run:
    def __init__(self, cfg, spec, resume: dict | None = None):
        """`resume`: a checkpoint (`driver.main.resume_config` reads it) to continue from."""
        self.cfg, self.spec = cfg, spec
        self.resumed = resume
        self.generation = 0 if resume is None else int(resume["counters"].get("generation", 0)) + 1
        self.clock = _Clock()  # startup, steady-state rates and where the learner's time goes
        self.backend = make_backend(cfg)  # first: a cluster that cannot be joined leaves nothing behind
        try:
            self.out = Path(cfg.out)
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "config.json").write_text(json.dumps(public(cfg), indent=2) + "\n")
            torch.set_num_threads(cfg.learner_threads)
            self.learner = Learner(cfg, spec, pick_device(cfg.device))
            self.redis = RedisReplay(cfg, spec, self.out) if cfg.replay != "memory" else None
            self.parts = build(cfg, spec, self.backend, self.redis.shards if self.redis else None, self.generation)
        except BaseException:
            self._shutdown()
            raise
        self.limiter = RateLimiter(cfg.replay_ratio, cfg.learning_starts, cfg.batch_size,
                                   cfg.chunk_steps * cfg.actors)
        self.split_rng = np.random.default_rng(cfg.seed + 17)
        self.shard_inserted = np.zeros(cfg.replay_shards, dtype=np.int64)
        self.shard_capacity = cfg.replay_capacity // cfg.replay_shards
        self.acting = acting(cfg)
        self.env_steps = 0
        self.committed = 0
        self.dispatched = 0  # chunks handed out (round-robin position)
        self.max_inflight = 0  # most chunks collected at once (all actors busy: == actors)
        self.episodes = 0
        self.arm_episodes = 0  # finished episodes that were played under an arm (reported to it)
        self.actor_versions = [[-1, -1] for _ in range(cfg.actors)]  # [first, last] weights used
        self.visits = np.zeros(spec.obs_shape[0], dtype=np.int64) if spec.name == "CliffWalk" else None
        self.evals: dict[int, dict | None] = {}  # env_steps -> result (None while running)
        self.next_target = cfg.target_update
        self.target_syncs: list[tuple[int, int]] = []  # (env step, learner updates) of each target copy
        self.next_eval = min(cfg.eval_every, cfg.total_steps)
        self.staleness: Counter = Counter()  # versions behind -> chunks
        self.next_checkpoint = cfg.checkpoint_every
        self.wandb_id = None
        if resume is not None:
            try:
                self._restore(resume)
            except BaseException:
                self._shutdown()
                raise
        self.shared, self.shared_version = None, -1  # the weights in the object store, and their version

    def _shutdown(self) -> None:
        """No Ray actors or cluster, and no Redis servers, left behind."""
        self.backend.shutdown()
        if getattr(self, "redis", None) is not None:
            self.redis.close()

    # ---- replay ----
    def _shard_sizes(self) -> np.ndarray:
        """Transitions each shard holds (as far as the run has harvested)."""
        return np.minimum(self.shard_inserted, self.shard_capacity)

    def _sample_future(self, n_batches: int):
        """Ask every shard, in one call each, for its part of `n_batches` uniform batches."""
        sizes = self._shard_sizes()
        counts = np.stack([split_batch(sizes, self.cfg.batch_size, self.split_rng) for _ in range(n_batches)])
        futures = [self.backend.call(self.parts["shards"][s], "sample", int(n))
                   for s, n in enumerate(counts.sum(0)) if n > 0]
        return counts, futures

    def _next_batch(self, prefetched: deque, ready: deque):
        if self.redis is not None:  # Redis: batches decoded ahead on a thread (Ray) or drawn now (serial)
            if not self.backend.concurrent:
                return self.redis.sample(self._shard_sizes(), self.split_rng)
            if self.redis.thread is None:
                self.redis.start_prefetch(self._shard_sizes, self.split_rng)
            return self.redis.next_batch()
        return self._next_memory_batch(prefetched, ready)

    def _next_memory_batch(self, prefetched: deque, ready: deque):
        """Serial: sample one batch now (deterministic). Ray: batches come `SAMPLE_BATCHES` per shard call,
        with `PREFETCH_CALLS` calls in flight, so the learner rarely waits and pays a round trip per 8 updates."""
        if not ready:
            n_batches, depth = (SAMPLE_BATCHES, PREFETCH_CALLS) if self.backend.concurrent else (1, 1)
            while len(prefetched) < depth:
                prefetched.append(self._sample_future(n_batches))
            counts, futures = prefetched.popleft()
            parts = self.backend.get(futures)
            per_shard = counts[:, counts.sum(0) > 0]  # (batches, shards asked): rows each batch takes
            starts = np.cumsum(per_shard, axis=0) - per_shard
            for j in range(len(counts)):
                ready.append(concat([{k: v[lo:lo + n] for k, v in part.items()}
                                     for part, lo, n in zip(parts, starts[j], per_shard[j], strict=True)]))
        return ready.popleft()

    # ---- the loop ----
    def run(self) -> dict:
        cfg, backend, learner = self.cfg, self.backend, self.learner
        actors = self.parts["actors"]
        try:
            logger = RunLogger(cfg, self.out, cfg.total_steps, None if self.resumed is None else {
                "env_steps": self.env_steps, "evals": [self.evals[k] for k in sorted(self.evals)],
                "wandb_id": self.resumed.get("wandb_id")})
            self.wandb_id = logger.wandb_id
            logger.advance(self.env_steps)
        except BaseException:
            self._shutdown()
            raise
        t0 = time.perf_counter()
        inflight: dict = {}  # future -> actor index
        eval_futures: list = []
        prefetched: deque = deque()  # sample calls in flight
        batches: deque = deque()  # sampled batches not used yet
        window = _Window()
        last_log = time.perf_counter()
        peak_rss = 0.0
        try:
            # every actor up before the first chunk: a process that starts while the learner is already
            # updating starts slowly on a busy machine and then acts on weights that are long out of date
            backend.get([backend.call(a, "ready") for a in actors])
            self.clock.actors_ready()
            if backend.concurrent:  # where the parts run (a grid on a cluster reports it)
                self.placement = {"learner": backend.node(), "actors": [backend.node(a) for a in actors]}
            t0 = time.perf_counter()
            while True:
                # 1. hand chunks to idle actors, as far as the replay ratio allows. Serial: one chunk
                #    per round, actors in turn, so acting and learning interleave as in the paper
                busy = set(inflight.values())
                start = self.dispatched
                for k in range(len(actors)):
                    i = (start + k) % len(actors)
                    if i in busy:
                        continue
                    # never past the next checkpoint: the run drains there (nothing in flight) and saves
                    n = min(cfg.chunk_steps, cfg.total_steps - self.committed, self.next_checkpoint - self.committed)
                    if n <= 0 or not self.limiter.may_collect(self.committed + n, learner.updates):
                        break
                    # the reference travels with every call (an actor restarted by Ray has no weights);
                    # the actor reads them only when the version is new to it
                    fut = backend.call(actors[i], "collect", n, self._shared_weights(), learner.version,
                                       self.committed)
                    inflight[fut] = i
                    self.committed += n
                    self.dispatched += 1
                    if not backend.concurrent:
                        break
                self.max_inflight = max(self.max_inflight, len(inflight))
                # 2. the updates the ratio asks for now; target copies and evaluations fall due
                #    on the learner's clock, exactly after the update that step count owes
                updated = 0
                self._milestones(eval_futures)
                while self.limiter.may_update(learner.updates, self.env_steps):
                    t_wait = time.perf_counter()
                    batch = self._next_batch(prefetched, batches)
                    t_update = time.perf_counter()
                    metrics = learner.update(batch)
                    window.add_update(metrics)
                    self._check_finite(metrics["loss"])
                    self.clock.learner(t_update - t_wait, time.perf_counter() - t_update)
                    updated += 1
                    if learner.updates % cfg.publish_every == 0:
                        learner.version += 1  # a new version; shared when someone asks for it
                    self._milestones(eval_futures)
                    if updated >= HARVEST_EVERY and inflight and backend.concurrent:
                        break  # harvest between bursts: actors do not idle, and data lags ≤ a few versions
                # 3. results: finished chunks and evaluations
                for fut in backend.ready(eval_futures, block=False):
                    eval_futures.remove(fut)
                    self._record_eval(backend.get(fut), logger)
                if not inflight:
                    if self.env_steps >= cfg.total_steps and not self.limiter.may_update(
                            learner.updates, self.env_steps):
                        self._milestones(eval_futures)
                        self.clock.stop(self.env_steps, learner.updates)
                        break
                    if self.env_steps >= self.next_checkpoint and not self.limiter.may_update(
                            learner.updates, self.env_steps):
                        for fut in eval_futures:  # evaluations started so far belong to this checkpoint
                            self._record_eval(backend.get(fut), logger)
                        eval_futures.clear()
                        self._save_checkpoint()
                        self.next_checkpoint += cfg.checkpoint_every
                    continue
                t_idle = time.perf_counter()
                done = backend.ready(list(inflight), block=not updated)
                if not updated:
                    self.clock.idle += time.perf_counter() - t_idle
                for fut in done:
                    i = inflight.pop(fut)
                    stats = backend.get(fut)
                    self.clock.chunk()
                    self.env_steps += stats["steps"]
                    self.shard_inserted[shard_of(i, cfg.replay_shards)] += stats["steps"]
                    self.episodes += len(stats["episodes"])
                    if "visits" in stats:
                        self.visits += stats["visits"]
                    self.arm_episodes += sum(ep["arm"] is not None for ep in stats["episodes"])
                    if self.parts["arm_local"]:  # the bandit hears from the actors; a local arm's copy from here
                        for ep in stats["episodes"]:
                            if ep["arm"] is not None:
                                self.parts["arm_source"].report(ep["arm"], ep["return"], 0.0)
                    seen = self.actor_versions[i]
                    seen[0] = stats["version"] if seen[0] < 0 else seen[0]
                    seen[1] = stats["version"]
                    window.add_chunk(stats, learner.version - stats["version"])
                    self.staleness[learner.version - stats["version"]] += 1
                    if self.clock.t_steady is None and self.env_steps >= self.limiter.first_update:
                        self.clock.start_steady(self.env_steps, learner.updates)
                        self.staleness.clear()  # the summary's staleness is the steady state's
                    logger.advance(stats["steps"])
                now = time.perf_counter()
                if now - last_log >= cfg.log_every:
                    peak_rss = max(peak_rss, _process_tree_rss())
                    logger.log(self._metrics(window, now - last_log, now - t0))
                    window = _Window()
                    last_log = now
            for fut in eval_futures:
                self._record_eval(backend.get(fut), logger)
            wall = time.perf_counter() - t0
            peak_rss = max(peak_rss, _process_tree_rss())
            if window.updates or window.steps:
                logger.log(self._metrics(window, time.perf_counter() - last_log, wall))
            summary = self._finish(wall, peak_rss)
            logger.close(summary)
            return summary
        except ReplayUnavailable as e:  # also as the cause of an actor's failed call (Ray re-raises it)
            try:
                for fut in eval_futures:  # evaluations do not use the replay: let them land first
                    self._record_eval(backend.get(fut), logger)
                self._save_checkpoint()  # what was harvested; a resume rewinds the replay to it
                where = f"checkpoint written at env step {self.env_steps}: continue with --resume {self.out}"
            except Exception as save_error:
                where = f"no checkpoint could be written ({type(save_error).__name__})"
            logger.close(None, failed=True)
            raise ReplayUnavailable(f"{str(getattr(e, 'cause', e)).splitlines()[0]}; {where}") from None
        except BaseException:
            logger.close(None, failed=True)
            raise
        finally:
            learner.close()
            self._shutdown()

    def _check_finite(self, loss: torch.Tensor) -> None:
        """Stop at a NaN or infinite loss (every update on CPU; on a GPU every `publish_every` updates, to
        spare a device sync per update)."""
        if self.learner.device.type != "cpu" and self.learner.updates % self.cfg.publish_every:
            return
        value = float(loss)
        if not math.isfinite(value):
            self._stop_nonfinite(f"the loss became {value}")

    def _stop_nonfinite(self, what: str) -> None:
        """checkpoint.pt keeps the last good state; the failing one goes to checkpoint-nonfinite.pt."""
        learner = self.learner
        torch.save({"learner": learner.state_dict(), "config": public(self.cfg)}, self.out / "checkpoint-nonfinite.pt")
        last = "checkpoint.pt is the last good one" if (self.out / "checkpoint.pt").exists() else "no checkpoint yet"
        raise NonFiniteLoss(f"{what} at update {learner.updates} (env step {self.env_steps}); "
                            f"the run stopped: {last}, the failing state is in checkpoint-nonfinite.pt")

    # ---- checkpoint and resume ----
    def _save_checkpoint(self) -> None:
        """Everything needed to continue, written atomically: the replay snapshot files first (memory
        replay; Redis keeps its own data), then checkpoint.pt (temp file + rename) naming them."""
        cfg, learner = self.cfg, self.learner
        if not all(bool(torch.isfinite(p).all()) for p in learner.nets.parameters()):  # a GPU checks loss sparsely
            self._stop_nonfinite("the network parameters became non-finite")
        replay_files = None
        if self.redis is None:
            (self.out / "replay").mkdir(exist_ok=True)
            states = self.backend.get([self.backend.call(h, "state_dict") for h in self.parts["shards"]])
            replay_files = []
            for s, state in enumerate(states):
                name = f"replay/shard{s}-{self.env_steps}.npz"
                with open(self.out / (name + ".tmp"), "wb") as f:
                    np.savez(f, **state)
                os.replace(self.out / (name + ".tmp"), self.out / name)
                replay_files.append(name)
        checkpoint = {
            "format": CHECKPOINT_FORMAT,
            "config": public(cfg),
            "learner": learner.state_dict(),
            "counters": {"env_steps": self.env_steps, "updates": learner.updates, "episodes": self.episodes,
                         "arm_episodes": self.arm_episodes, "dispatched": self.dispatched,
                         "generation": self.generation},
            "visits": None if self.visits is None else self.visits.tolist(),
            "arm_source": self._arm("state_dict"),
            "evals": [self.evals[k] for k in sorted(self.evals) if self.evals[k] is not None],
            "target_syncs": [list(t) for t in self.target_syncs],
            # an evaluation still running is started again after a resume
            "next": {"target": self.next_target,
                     "eval": min([k for k, v in self.evals.items() if v is None] + [self.next_eval])},
            "split_rng": self.split_rng.bit_generator.state,
            "shard_inserted": self.shard_inserted.tolist(),
            "replay_files": replay_files,
            "wandb_id": self.wandb_id,
        }
        tmp = self.out / "checkpoint.pt.tmp"
        torch.save(checkpoint, tmp)
        os.replace(tmp, self.out / "checkpoint.pt")
        for old in (self.out / "replay").glob("*.npz") if replay_files else []:
            if str(old.relative_to(self.out)) not in replay_files:
                old.unlink()

    def _restore(self, ckpt: dict) -> None:
        """Continue from a checkpoint: the learner, counters, clocks, rng, bandit window, replay.

        Episodes that were running when the checkpoint was written are not continued (their transitions
        are in the replay): actors start new episodes, from fresh rng streams (the resume generation is
        part of their seed), and the bandit forgets the arms those episodes held (`pending`)."""
        self.learner.load_state_dict(ckpt["learner"])
        c = ckpt["counters"]
        self.env_steps = self.committed = int(c["env_steps"])
        self.episodes, self.arm_episodes = int(c["episodes"]), int(c["arm_episodes"])
        self.dispatched = int(c["dispatched"])
        if ckpt.get("visits") is not None:
            self.visits = np.asarray(ckpt["visits"], dtype=np.int64)
        self.evals = {int(e["env_steps"]): e for e in ckpt["evals"]}
        self.target_syncs = [tuple(t) for t in ckpt["target_syncs"]]
        self.next_target, self.next_eval = int(ckpt["next"]["target"]), int(ckpt["next"]["eval"])
        self.split_rng.bit_generator.state = ckpt["split_rng"]
        self.shard_inserted = np.asarray(ckpt["shard_inserted"], dtype=np.int64)
        self.next_checkpoint = self.env_steps + self.cfg.checkpoint_every
        arm_state = dict(ckpt["arm_source"])
        if "pending" in arm_state:
            arm_state["pending"] = [0] * len(arm_state["pending"])
        self._arm("load_state_dict", arm_state)
        if ckpt["replay_files"] is not None:
            for shard, name in zip(self.parts["shards"], ckpt["replay_files"], strict=True):
                with np.load(self.out / name, allow_pickle=False) as data:
                    state = {k: data[k] for k in data.files}
                self.backend.get(self.backend.call(shard, "load_state_dict", state))
        else:
            for shard, inserted, stats in zip(self.redis.shards, self.shard_inserted, self.redis.stats(), strict=True):
                if stats["inserted"] > inserted:
                    shard.rewind(int(inserted))
            have = np.array([st["inserted"] for st in self.redis.stats()], dtype=np.int64)
            if (have < self.shard_inserted).any():
                print(f"warning: the Redis replay holds {int(have.sum())} of the {int(self.shard_inserted.sum())} "
                      "transitions inserted before the checkpoint; continuing with what it has", file=sys.stderr)
                self.shard_inserted = np.minimum(have, self.shard_inserted)

    def _arm(self, method: str, *args):
        """Call the run's arm source: the bandit's Ray actor (β-DQN), or the run's own copy of the arm that
        every actor holds locally (the other methods)."""
        source = self.parts["arm_source"]
        if self.parts["arm_local"]:
            return getattr(source, method)(*args)
        return self.backend.get(self.backend.call(source, method, *args))

    def _due(self, at: int) -> bool:
        """Env step `at` is reached and the learner has done every update owed at `at`."""
        return self.env_steps >= at and self.learner.updates >= self.limiter.owed(at)

    def _milestones(self, eval_futures: list) -> None:
        """Copy the target every `target_update` env steps and evaluate every `eval_every` (and at the
        end), each on the learner's clock."""
        cfg = self.cfg
        while self._due(self.next_target):
            self.learner.sync_target()
            self.target_syncs.append((self.next_target, self.learner.updates))
            self.next_target += cfg.target_update
        while self.next_eval <= cfg.total_steps and self._due(self.next_eval):
            self._start_eval(self.next_eval, eval_futures)
            if self.next_eval == cfg.total_steps:
                self.next_eval += 1  # done: the final evaluation is started
            else:
                self.next_eval = min(self.next_eval + cfg.eval_every, cfg.total_steps)

    def _shared_weights(self):
        """The current version's weights, shared (put in Ray's object store) at most once per version
        and only when an actor or the evaluator needs them: a version every `publish_every` updates can
        come faster than actors ask (a GPU learner does ~1,500 updates/s), and a share costs ~1 ms."""
        if self.shared_version != self.learner.version:
            self.shared = self.backend.put(self.learner.weights())
            self.shared_version = self.learner.version
        return self.shared

    def _start_eval(self, at: int, futures: list) -> None:
        """Evaluate the current weights (a new version) as those of env step `at`."""
        self.learner.version += 1
        futures.append(self.backend.call(self.parts["evaluator"], "evaluate", self._shared_weights(), at))
        self.evals[at] = None

    def _record_eval(self, result: dict, logger: RunLogger) -> None:
        self.evals[result["env_steps"]] = result
        logger.log_eval(result)

    def _metrics(self, window: _Window, seconds: float, wall: float) -> dict:
        cfg = self.cfg
        row = {"env_steps": self.env_steps, "updates": self.learner.updates, "episodes": self.episodes,
               "wall_seconds": round(wall, 2),
               "env_steps_per_s": window.steps / max(seconds, 1e-9),
               "updates_per_s": window.updates / max(seconds, 1e-9),
               "replay_ratio": achieved_ratio(self.learner.updates, self.env_steps, cfg.learning_starts),
               **window.summary()}
        if self.redis is not None:  # records the learner rejected so far (by kind), as in the summary
            row["replay_rejected"] = dict(sum((Counter(s.codec.rejected) for s in self.redis.shards), Counter()))
        bandit = self._bandit() if self.acting.central else None  # one call: N(π), μ(π), b(π)
        if self.acting.logs_arms:  # policies / heads per episode
            if bandit is not None:
                plays = np.asarray(bandit["plays"], dtype=float)
                props = plays / max(plays.sum(), 1.0)
            else:
                props = self._arm("proportions")
            row["arm_proportions"] = [round(float(p), 4) for p in props]
        if self.acting.arm_groups is not None:
            for g in ("cov", "cor", "cor0"):
                row[f"arms_{g}"] = float(sum(p for p, gg in zip(props, self.acting.arm_groups, strict=True)
                                             if gg == g))
        if bandit is not None:
            row["arm_mu"], row["arm_bonus"] = bandit["mu"], bandit["bonus"]
        return row

    def _bandit(self) -> dict:
        """β-DQN's meta-controller now: per arm N(π), μ(π) and b(π) over its window [eq:policy select]."""
        plays, mu, bonus = self._arm("statistics")
        return {"plays": [int(n) for n in plays], "mu": [round(float(m), 4) for m in mu],
                "bonus": [round(float(b), 4) for b in bonus]}

    def _finish(self, wall: float, peak_rss: float) -> dict:
        cfg, learner = self.cfg, self.learner
        final = self.evals.get(cfg.total_steps) or {}
        shard_stats = (self.redis.stats() if self.redis is not None else
                       [self.backend.get(self.backend.call(h, "stats")) for h in self.parts["shards"]])
        self._save_checkpoint()
        summary = {
            "env": cfg.env, "algo": cfg.algo, "seed": cfg.seed, "runtime": cfg.runtime, "actors": cfg.actors,
            "env_steps": self.env_steps, "updates": learner.updates, "episodes": self.episodes,
            "arm_episodes": self.arm_episodes, "weight_versions": learner.version,
            "target_updates": len(self.target_syncs),
            "replay_inserted": sum(st["inserted"] for st in shard_stats),
            "replay_size": sum(st["size"] for st in shard_stats),
            "replay_rejected": dict(sum((Counter(st.get("rejected", {})) for st in shard_stats), Counter())),
            "replay_ratio": achieved_ratio(learner.updates, self.env_steps, cfg.learning_starts),
            "wall_seconds": wall, "env_steps_per_s": self.env_steps / wall, "peak_rss_gb": peak_rss,
            "device": str(learner.device),
            "throughput": self.clock.summary(self.env_steps, learner.updates, self.staleness),
            "placement": getattr(self, "placement", None),
            # CliffWalk: training env steps taken in each of the 4×12 cells (row-major), for the report
            "state_visits": None if self.visits is None else self.visits.tolist(),
            # β-DQN: the meta-controller's window at the end (what the report's selection tables show)
            "bandit": self._bandit() if self.acting.central else None,
            "commit": _commit(),
            "final_eval": {k: _json_number(final.get(k))
                           for k in ("env_steps", "return_mean", "return_std", "success_rate")},
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        return summary


class _Clock:
    """Where the time goes: startup (to every actor constructed, to the first transition), the steady
    state (from the first update on), and the learner's share of it.

    `wait` is the learner blocked on a replay sample it needs now; `update` its gradient steps; `idle`
    the loop blocked on actors while no update is owed (the rate limiter holding the learner back).
    """

    def __init__(self):
        self.t_created = time.perf_counter()
        self.t_first_chunk = self.t_all_actors = self.t_steady = None
        self.steady_from = (0, 0)  # (env steps, updates) when the steady state began
        self.wait = self.update = self.idle = 0.0
        self.end: tuple[float, int, int] | None = None  # (time, env steps, updates) when the loop ended

    def stop(self, env_steps: int, updates: int) -> None:
        self.end = (time.perf_counter(), env_steps, updates)

    def actors_ready(self) -> None:
        self.t_all_actors = time.perf_counter()

    def chunk(self) -> None:
        if self.t_first_chunk is None:
            self.t_first_chunk = time.perf_counter()

    def start_steady(self, env_steps: int, updates: int) -> None:
        self.t_steady = time.perf_counter()
        self.steady_from = (env_steps, updates)
        self.wait = self.update = self.idle = 0.0

    def learner(self, wait: float, update: float) -> None:
        self.wait += wait
        self.update += update

    def summary(self, env_steps: int, updates: int, staleness: Counter) -> dict:
        now, env_steps, updates = self.end or (time.perf_counter(), env_steps, updates)

        def since(t):
            return None if t is None else round(t - self.t_created, 3)

        steady = now - self.t_steady if self.t_steady is not None else 0.0
        out = {"first_transition_s": since(self.t_first_chunk), "all_actors_ready_s": since(self.t_all_actors),
               "steady_seconds": round(steady, 3)}
        if steady > 0:
            out.update({
                "steady_env_steps_per_s": (env_steps - self.steady_from[0]) / steady,
                "steady_updates_per_s": (updates - self.steady_from[1]) / steady,
                "learner_update_fraction": self.update / steady,
                "learner_wait_fraction": self.wait / steady,
                "learner_idle_fraction": self.idle / steady,
                "update_ms": 1e3 * self.update / max(updates - self.steady_from[1], 1),
            })
        if staleness:
            values = np.repeat(list(staleness), list(staleness.values()))
            out["staleness_median"] = float(np.median(values))
            out["staleness_p95"] = float(np.percentile(values, 95))
            out["staleness_max"] = int(values.max())
        return out


class _Window:
    """Metrics gathered between two log lines."""

    def __init__(self):
        self.steps = 0
        self.updates = 0
        self.sums: dict[str, torch.Tensor] = {}
        self.staleness: list[int] = []
        self.returns: list[float] = []
        self.successes: list[bool] = []

    def add_update(self, metrics: dict) -> None:
        self.updates += 1
        for k, v in metrics.items():
            self.sums[k] = self.sums[k] + v if k in self.sums else v.clone()

    def add_chunk(self, stats: dict, staleness: int) -> None:
        self.steps += stats["steps"]
        self.staleness.append(staleness)
        for ep in stats["episodes"]:
            self.returns.append(ep["return"])
            if ep["success"] is not None:
                self.successes.append(ep["success"])

    def summary(self) -> dict:
        row = {k: float(v) / self.updates for k, v in self.sums.items()} if self.updates else {}
        if self.staleness:
            row["staleness_mean"] = float(np.mean(self.staleness))
            row["staleness_p95"] = float(np.percentile(self.staleness, 95))
        if self.returns:
            row["train_return_mean"] = float(np.mean(self.returns))
            row["train_episodes"] = len(self.returns)
        if self.successes:
            row["train_success_rate"] = float(np.mean(self.successes))
        return row


def train(cfg, spec, resume: dict | None = None) -> dict:
    return Run(cfg, spec, resume).run()
