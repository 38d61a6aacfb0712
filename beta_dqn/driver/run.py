"""The run: the loop that wires actors, replay, learner, arm source and evaluator, in named phases.

    collect     hand chunks to idle actors, as far as the replay ratio allows
    update      the learner's owed updates; each may `publish` a weights version; target copies and
                evaluations fall due on the learner's clock
    harvest     finished chunks: counters, the replay's shard sizes, staleness, the logs
    evaluate    record evaluations that have finished
    checkpoint  when nothing is in flight at a checkpoint step: everything needed to continue

Written once against `beta_dqn.driver.runtime`'s backend and `replay_service.client.ReplaySampler`, so the serial
and the Ray runner, memory and Redis replay, are the same loop. The run is composed of parts, each given what it
reads: its directory (`beta_dqn.driver.state.RunDirectory`: checked, locked, its record), the backend and the
parts it wired (`beta_dqn.driver.runtime.Parts`), the learner, the replay, the checkpoints
(`beta_dqn.driver.checkpoints.Checkpointer`: writing one, reading one back on a resume, the stop at a non-finite
loss) and what it says of itself (`beta_dqn.driver.metrics.RunReport`: the logs' rows and summary.json).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections import Counter
from pathlib import Path

import torch

from beta_dqn.configuration.flags import Config, method_settings, public, replay_backend, settings
from beta_dqn.driver.checkpoints import Checkpointer
from beta_dqn.driver.metrics import RunReport
from beta_dqn.driver.outputs import Clock, RunLogger, Window, process_tree_rss, write_whole
from beta_dqn.driver.preflight import check_memory, check_room, preflight
from beta_dqn.driver.runtime import Backend, build, make_backend, make_replay
from beta_dqn.driver.signals import sigterm_interrupts, stall_watch
from beta_dqn.driver.state import RunDirectory, RunState, check_run_dir, interrupted_line
from learner.learner import Learner, LearnerSettings, pick_device
from learner.methods import acting
from replay_service.client import RateLimiter, shard_of
from replay_service.redis_shard import ReplayDamaged, ReplayUnavailable

HARVEST_EVERY = 8  # Ray: updates in a burst before finished chunks are harvested (16 doubled the p95 staleness)


class Run:
    def __init__(self, cfg: Config, spec, resume: dict | None = None, learner=None):
        """`resume`: a checkpoint (`beta_dqn.driver.resume.resume_config` reads it) to continue from. `learner`:
        this seed's `Learner` in a pack (`learner.packed.PackedLearner.seats`; `beta_dqn.driver.pack` updates it),
        else the run makes its own.

        The run's parts are made in order, each undone if a later one cannot be made (`ExitStack`): a run that
        cannot start leaves no Ray actors, servers, learner thread, lock or run behind (the same command,
        corrected, goes ahead)."""
        self.cfg, self.spec, self.resumed = cfg, spec, resume
        self.state = RunState.new(cfg, spec) if resume is None else RunState.from_checkpoint(resume)
        self.acting = acting(method_settings(cfg))
        self.clock = Clock()  # startup, steady-state rates and where the learner's time goes
        self.out = Path(cfg.out)
        check_run_dir(self.out, resume is not None, cfg.overwrite)  # a run there is never replaced by accident
        preflight(cfg)  # a CUDA device where asked for, what the replay needs (a server that answers)
        check_memory(cfg, spec)  # a run that could never fit, refused before anything starts
        check_room(cfg)  # actors a cluster of this machine could never place, refused before it starts
        with contextlib.ExitStack() as undo:
            self.backend: Backend = make_backend(cfg)  # first: a cluster that cannot be joined leaves nothing behind
            undo.callback(self.backend.shutdown)
            self.directory = RunDirectory.claim(self.out, resume is not None, cfg.overwrite)  # one writer
            undo.callback(self.directory.release)
            undo.callback(self.directory.discard)  # (its record: before the lock is let go)
            undo.callback(self.backend.shutdown)  # (again: no part of it left when the lock is let go; a no-op then)
            # what the replay makes in the run directory (redis-local's servers' files): this run's to remove if
            # it cannot start
            own = [e for e in replay_backend(cfg.replay).run_dir_entries(cfg)
                   if resume is None and not (self.out / e).exists()]
            self.directory.record("ray_warnings.log", *own)
            torch.set_num_threads(cfg.learner_threads)
            if learner is None:
                learner = Learner.solo(settings(LearnerSettings, cfg), spec, pick_device(cfg.device))
                undo.callback(learner.close)  # (β's thread ends)
            self.learner = learner
            undo.callback(_remove, [self.out / e for e in own])
            self.replay = make_replay(cfg, spec, self.backend, self.out, resume)
            # a run that could not start lets go of its Redis run id (a resumed one keeps it)
            undo.callback(self.replay.close, started=resume is not None)
            self.parts = build(cfg, spec, self.backend, self.replay.ports, self.state.generation)
            written = public(cfg)  # the configuration as config.json and every checkpoint hold it
            self.checkpoints = Checkpointer(self.out, written, self.learner, self.replay, self.state, self._arm,
                                            self.directory, "success_rate" if spec.has_success else "return_mean")
            self.report = RunReport(cfg, spec, self.state, self.learner, self.replay, self.acting, self._arm)
            if resume is not None:
                self.checkpoints.restore(resume)
            # last: a run that could not start leaves no run there (the same command, corrected, goes ahead)
            write_whole(self.out / "config.json", json.dumps(written, indent=2) + "\n")
            self.directory.record("config.json")
            undo.pop_all()  # started: its parts are the run's to shut down (`_shutdown`)
        self.limiter = RateLimiter(cfg.replay_ratio, cfg.learning_starts, cfg.batch_size,
                                   cfg.chunk_steps * cfg.actors)
        self.committed = self.state.env_steps  # env steps harvested + in flight
        self.next_checkpoint = self.state.env_steps + cfg.checkpoint_every
        self.evaluated: dict[int, dict] = {}  # the weights of each evaluation in flight, by its env step
        # what the loop measures but does not keep across a resume
        self.max_inflight = 0  # most chunks collected at once (all actors busy: == actors)
        self.actor_versions = [[-1, -1] for _ in range(cfg.actors)]  # [first, last] weights used
        self.staleness: Counter = Counter()  # versions behind -> chunks
        self.placement: dict | None = None
        self.shared, self.shared_version = None, -1  # the weights in the object store, and their version
        self.inflight: dict = {}  # future -> actor index
        self.eval_futures: list = []
        self.window = Window()  # metrics since the last log line
        self.peak_rss = 0.0

    def _shutdown(self, started: bool = True) -> None:
        """No Ray actors or cluster, no Redis servers left behind; the run directory free for another process.
        A pack's seed that could not start (`started=False`) lets go of its Redis run id."""
        self.backend.shutdown()
        self.replay.close(started=started or self.resumed is not None)
        self.directory.release()

    # ---- the loop ----
    def run(self) -> dict:
        # `kill`, `timeout`, a scheduler: as Ctrl-C (KeyboardInterrupt); not in a grid's Ray task (Ray's process)
        with sigterm_interrupts(lambda: interrupted_line(self.out)) if self.backend.owned else contextlib.nullcontext():
            return self._run()

    def _run(self) -> dict:
        self.open()
        try:
            self._start()
            with stall_watch(lambda: (self.state.env_steps, self.learner.updates, len(self.state.evals))):
                while True:
                    self._collect()
                    if self._round(self._update()):
                        break
            return self.finish()
        except BaseException as e:
            error = self.failed(e)
            if error is e:
                raise
            raise error from None
        finally:
            self._close()

    def _close(self) -> None:
        """The learner closed (β's thread ended), then the run's parts shut down, even if the first is
        interrupted (a second Ctrl-C)."""
        try:
            self.learner.close()
        finally:
            self._shutdown()

    def open(self) -> None:
        """The run's logs (continued on a resume); a run that cannot open them closes its learner and shuts its
        parts down."""
        st = self.state
        try:
            self.logger = RunLogger(self.cfg, self.out, self.cfg.total_steps, None if self.resumed is None else {
                "env_steps": st.env_steps, "evals": st.finished_evals(), "wandb_id": st.wandb_id})
            st.wandb_id = self.logger.wandb_id
            self.directory.record(*self.logger.created())
            self.logger.advance(st.env_steps)
        except BaseException:
            self._close()
            raise
        self.t0 = self.last_log = time.perf_counter()

    def _round(self, updated: int, block: bool = True) -> bool:
        """The rest of a round of the loop, after its chunks were handed out and `updated` updates done:
        evaluations, the end or a checkpoint when nothing is in flight, else finished chunks (waiting for one
        when `block` and nothing was updated) and the logs. True when the run is over."""
        self._record_evals(wait=False)
        if not self.inflight:
            if self._owes_nothing_at(self.cfg.total_steps):
                self._milestones()
                self.clock.stop(self.state.env_steps, self.learner.updates)
                return True
            if self._owes_nothing_at(self.next_checkpoint):
                self._checkpoint()
            return False
        self._harvest(block=block and not updated)
        self._log_when_due()
        return False

    def finish(self) -> dict:
        """Every evaluation in, the summary and the last checkpoint written, the logs closed."""
        self._record_evals(wait=True)
        summary = self._summary()
        self.logger.close(summary)
        return summary

    def failed(self, e: BaseException) -> BaseException:
        """The logs closed as failed; what to raise. The replay gone or damaged (`ReplayUnavailable`): the
        evaluations in flight recorded and a checkpoint of what was harvested written first (a resume rewinds
        the replay to it), and the error is one line saying where to continue."""
        if not isinstance(e, ReplayUnavailable):  # ReplayDamaged too; also as an actor call's cause
            self.logger.close(None, failed=True)
            return e
        st = self.state
        try:
            self._record_evals(wait=True)  # evaluations do not use the replay: let them land first
            self.checkpoints.save(self._wall())
            where = f"checkpoint written at env step {st.env_steps}: continue with --resume {self.out}"
        except Exception as save_error:
            where = f"no checkpoint could be written ({type(save_error).__name__})"
        self.logger.close(None, failed=True)
        kind = ReplayDamaged if isinstance(e, ReplayDamaged) else ReplayUnavailable
        return kind(f"{str(getattr(e, 'cause', e)).splitlines()[0]}; {where}")

    def _start(self) -> None:
        """Every actor up before the first chunk: a process that starts while the learner is already updating
        starts slowly on a busy machine and then acts on weights that are long out of date."""
        backend, actors = self.backend, self.parts.actors
        if self.resumed is not None:
            self.checkpoints.settle_best()
        backend.get([backend.call(a, "ready") for a in actors])
        self.clock.actors_ready()
        if backend.concurrent:  # where the parts run (a grid on a cluster reports it)
            self.placement = {"learner": backend.node(), "actors": backend.nodes(actors)}
        self.t0 = time.perf_counter()

    def _collect(self) -> None:
        """Hand chunks to idle actors, as far as the replay ratio allows. Serial: one chunk per round, actors
        in turn, so acting and learning interleave as in the paper."""
        cfg, actors, busy = self.cfg, self.parts.actors, set(self.inflight.values())
        start = self.state.dispatched
        for k in range(len(actors)):
            i = (start + k) % len(actors)
            if i in busy:
                continue
            # never past the next checkpoint: the run drains there (nothing in flight) and saves
            n = min(cfg.chunk_steps, cfg.total_steps - self.committed, self.next_checkpoint - self.committed)
            if n <= 0 or not self.limiter.may_collect(self.committed + n, self.learner.updates):
                break
            # the reference travels with every call (an actor restarted by Ray has no weights); the actor
            # reads them only when the version is new to it
            future = self.backend.call(actors[i], "collect", n, self._shared_weights(), self.learner.version,
                                       self.committed)
            self.inflight[future] = i
            self.committed += n
            self.state.dispatched += 1
            if not self.backend.concurrent:
                break
        self.max_inflight = max(self.max_inflight, len(self.inflight))

    def _update(self) -> int:
        """The updates the ratio owes now (Ray: at most HARVEST_EVERY while chunks are in flight, so actors do
        not idle and data lags a few versions at most); target copies and evaluations fall due on the
        learner's clock, exactly after the update that step count owes. Returns the updates done."""
        updated = 0
        self._milestones()
        while self.limiter.may_update(self.learner.updates, self.state.env_steps):
            t_wait = time.perf_counter()
            batch = self.replay.next_batch()
            t_update = time.perf_counter()
            self._updated(self.learner.update(batch), t_wait, t_update)
            updated += 1
            if updated >= HARVEST_EVERY and self.inflight and self.backend.concurrent:
                break
        return updated

    def _updated(self, metrics: dict, t_wait: float, t_update: float) -> None:
        """After an update of this run's learner (alone, or with its pack): its metrics, the clock, a weights
        version when due, and the target copies and evaluations that update makes due."""
        self.window.add_update(metrics)
        self.checkpoints.check_finite(metrics["loss"], self.cfg.publish_every)
        self.clock.learner(t_update - t_wait, time.perf_counter() - t_update)
        self._publish()
        self._milestones()

    def _publish(self) -> None:
        """A new weights version every `publish_every` updates; shared when someone asks (`_shared_weights`)."""
        if self.learner.updates % self.cfg.publish_every == 0:
            self.learner.version += 1

    def _shared_weights(self):
        """The current version's weights, shared (put in Ray's object store) at most once per version
        and only when an actor or the evaluator needs them: a version every `publish_every` updates can
        come faster than actors ask (a GPU learner does ~1,500 updates/s), and a share costs ~1 ms."""
        if self.shared_version != self.learner.version:
            self.shared = self.backend.put(self.learner.weights())
            self.shared_version = self.learner.version
        return self.shared

    def _harvest(self, block: bool) -> None:
        """Finished chunks (waiting for one when `block`: no update was owed)."""
        t_idle = time.perf_counter()
        done = self.backend.ready(list(self.inflight), block=block)
        if block:
            self.clock.idle += time.perf_counter() - t_idle
        for future in done:
            i = self.inflight.pop(future)
            self._account(i, self.backend.get(future))

    def _account(self, i: int, stats: dict) -> None:
        """Actor i's chunk is in the replay: count it, and tell a local arm source its finished episodes."""
        st, episodes = self.state, stats["episodes"]
        self.clock.chunk()
        self.clock.actor(stats)
        st.env_steps += stats["steps"]
        self.replay.added(shard_of(i, self.cfg.replay_shards), stats["steps"])
        st.episodes += len(episodes)
        if "visits" in stats:
            st.visits += stats["visits"]
        st.arm_episodes += sum(ep["arm"] is not None for ep in episodes)
        if self.parts.arm_local:  # the bandit hears from the actors; a local arm's copy from here
            for ep in episodes:
                if ep["arm"] is not None:
                    self.parts.arm_source.report(ep["arm"], ep["return"], 0.0)
        seen = self.actor_versions[i]
        seen[0] = stats["version"] if seen[0] < 0 else seen[0]
        seen[1] = stats["version"]
        behind = self.learner.version - stats["version"]
        self.window.add_chunk(stats, behind)
        self.staleness[behind] += 1
        if self.clock.t_steady is None and st.env_steps >= self.limiter.first_update:
            self.clock.start_steady(st.env_steps, self.learner.updates)
            self.staleness.clear()  # the summary's staleness is the steady state's
        self.logger.advance(stats["steps"])

    def _owes_nothing_at(self, at: int) -> bool:
        """Env step `at` is harvested and no update is owed: the run may stop or checkpoint there."""
        return self.state.env_steps >= at and not self.limiter.may_update(self.learner.updates,
                                                                          self.state.env_steps)

    def _due(self, at: int) -> bool:
        """Env step `at` is reached and the learner has done every update owed at `at`."""
        return self.state.env_steps >= at and self.learner.updates >= self.limiter.owed(at)

    def _milestones(self) -> None:
        """Copy the target every `target_update` env steps and evaluate every `eval_every` (and at the
        end), each on the learner's clock."""
        cfg, st = self.cfg, self.state
        while self._due(st.next_target):
            self.learner.sync_target()
            st.target_syncs.append((st.next_target, self.learner.updates))
            st.next_target += cfg.target_update
        while st.next_eval <= cfg.total_steps and self._due(st.next_eval):
            self._start_eval(st.next_eval)
            if st.next_eval == cfg.total_steps:
                st.next_eval += 1  # done: the final evaluation is started
            else:
                st.next_eval = min(st.next_eval + cfg.eval_every, cfg.total_steps)

    # ---- checkpoints, logs and the summary ----
    def _checkpoint(self) -> None:
        """A checkpoint at `next_checkpoint` (nothing in flight): the evaluations started so far and every episode
        the run counted belong to it."""
        self._record_evals(wait=True)
        self._settle_reports()
        self.checkpoints.save(self._wall())
        self.next_checkpoint += self.cfg.checkpoint_every

    def _wall(self) -> float:
        """The run's seconds so far: this sitting's, and earlier sittings' up to the checkpoint it resumed from
        (the steps after that checkpoint were taken again in this one)."""
        return self.state.wall_before + time.perf_counter() - self.t0

    def _settle_reports(self) -> None:
        """Every episode the run counted is in the bandit before its state is saved: the actors (idle now)
        wait for the answers to the reports they sent. (Not on the way out of a failed run: an actor that
        died with a report on its way cannot be waited for, and its report may be lost.)"""
        if self.acting.central and self.backend.concurrent:
            self.backend.get([self.backend.call(a, "settle") for a in self.parts.actors])

    def _log_when_due(self) -> None:
        now = time.perf_counter()
        if now - self.last_log >= self.cfg.log_every:
            self.peak_rss = max(self.peak_rss, process_tree_rss())
            self.logger.log(self.report.row(self.window, now - self.last_log, self._wall()))
            self.window = Window()
            self.last_log = now

    def _summary(self) -> dict:
        """The last metrics row, the last checkpoint and summary.json (every evaluation recorded)."""
        self._settle_reports()  # the last logs, the summary and the checkpoint see every episode in the bandit
        wall = self._wall()
        self.peak_rss = max(self.peak_rss, process_tree_rss())
        if self.window.updates or self.window.steps:
            self.logger.log(self.report.row(self.window, time.perf_counter() - self.last_log, wall))
        self.checkpoints.save(wall)
        summary = self.report.summary(wall, self.peak_rss, self.clock, self.staleness, self.placement)
        self.directory.record("summary.json")
        write_whole(self.out / "summary.json", json.dumps(summary, indent=2, allow_nan=False) + "\n")
        return summary

    # ---- evaluate ----
    def _start_eval(self, at: int) -> None:
        """Evaluate the current weights (a new version) as those of env step `at`."""
        self.learner.version += 1
        self.eval_futures.append(self.backend.call(self.parts.evaluator, "evaluate", self._shared_weights(), at))
        self.state.evals[at] = None
        self.evaluated[at] = self.learner.weights()  # (a copy: best.pt's, should it score best)

    def _record_evals(self, wait: bool) -> None:
        """Record the evaluations that have finished (every one started, when `wait`)."""
        done = list(self.eval_futures) if wait else self.backend.ready(self.eval_futures, block=False)
        for future in done:
            self.eval_futures.remove(future)
            result = self.backend.get(future)
            self.state.evals[result["env_steps"]] = result
            self.logger.log_eval(result)
            weights = self.evaluated.pop(result["env_steps"], None)  # (every evaluation this sitting started has them)
            if weights is not None:
                self.checkpoints.keep_best(result, weights)

    # ---- the arm source ----
    def _arm(self, method: str, *args):
        """Call the run's arm source: the bandit's Ray actor (β-DQN), or the run's own copy of the arm that
        every actor holds locally (the other methods)."""
        source = self.parts.arm_source
        if self.parts.arm_local:
            return getattr(source, method)(*args)
        return self.backend.get(self.backend.call(source, method, *args))


def train(cfg: Config, spec, resume: dict | None = None) -> dict:
    return Run(cfg, spec, resume).run()


def _remove(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
