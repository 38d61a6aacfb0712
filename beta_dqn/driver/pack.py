"""A pack: the runs of K seeds of one configuration, trained by one learner process in lockstep.

Each seed is an ordinary run (`beta_dqn.driver.run.Run`: its own actors, replay, arm source, rate limiter,
evaluator, run directory, logs and checkpoint); only its learner is a seat of one `PackedLearner`, whose
update steps every seed at once. The loop is the run's, round by round for every seed, except the update:
the pack updates when every seed's rate limiter owes an update, so seed k's n-th update is the pack's n-th
(seeds wait for the slowest; a serial pack does exactly each solo run's updates, in the same places).
A seed's target copies, weights versions and evaluations stay on its own clock (`Run._updated`).

A seed's summary is written when it ends. A pack fails as a whole: the logs of every seed still running are
closed as failed, and each keeps its last checkpoint (`beta_dqn.launcher.grid_task` continues the others when one seed's
loss diverged).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from beta_dqn.configuration.flags import PER_SEED, Config, ConfigError, settings
from beta_dqn.driver.run import HARVEST_EVERY, Run
from beta_dqn.driver.runtime import make_backend
from beta_dqn.driver.state import check_run_dir
from learner.learner import LearnerSettings, pick_device
from learner.packed import PackedLearner


def check_packable(cfgs: list[Config]) -> None:
    """One line when the runs given cannot share a learner: different configurations, or one seed twice."""
    first = cfgs[0].flat()
    for cfg in cfgs[1:]:
        for name, value in cfg.flat().items():
            if name not in PER_SEED and value != first[name]:
                raise ConfigError(name, f"the seeds of a pack share one configuration: {value!r} and "
                                        f"{first[name]!r} cannot be packed (--pack-seeds)")
    seeds = [cfg.seed for cfg in cfgs]
    if len(set(seeds)) != len(seeds):
        raise ConfigError("seeds", f"a pack holds each seed once, got {seeds}")


class Pack:
    def __init__(self, cfgs: list[Config], spec, resumes: list[dict | None]):
        check_packable(cfgs)
        updates = sorted({0 if r is None else int(r["learner"]["updates"]) for r in resumes})
        if len(updates) > 1:  # lockstep: seed k's n-th update is the pack's n-th
            raise ConfigError("resume", f"the seeds of a pack continue together only from checkpoints at one "
                                        f"update count, got {updates}: continue them in separate packs")
        for cfg, resume in zip(cfgs, resumes, strict=True):  # every seed's directory, before anything starts
            check_run_dir(Path(cfg.out), resume is not None, cfg.overwrite)
        self.cfgs = cfgs
        # the pack's own connection first (it starts Ray if nobody has): each run's backend then joins it
        # and shuts down only its own parts
        self.backend = make_backend(cfgs[0])
        self.runs: list[Run] = []
        self.learner = None
        try:
            torch.set_num_threads(cfgs[0].learner_threads)
            self.learner = PackedLearner([settings(LearnerSettings, c) for c in cfgs], spec,
                                         pick_device(cfgs[0].device))
            for cfg, resume, seat in zip(cfgs, resumes, self.learner.seats, strict=True):
                self.runs.append(Run(cfg, spec, resume, learner=seat))
        except BaseException:
            for run in self.runs:  # the seeds made so far: as if they had not started either
                run._shutdown(started=False)
                if run.resumed is None:
                    (run.out / "config.json").unlink(missing_ok=True)
            self.backend.shutdown()
            raise

    def run(self) -> list[dict]:
        """Train every seed to the end; their summaries, in the order of `cfgs`."""
        opened, summaries = [], {}
        try:
            for run in self.runs:
                run.open()
                opened.append(run)
            for run in self.runs:
                run._start()
            active = list(self.runs)
            while active:
                for run in active:
                    run._collect()
                updated = self._update(active)
                before = sum(run.state.env_steps for run in self.runs)
                for run in list(active):
                    if run._round(updated, block=False):
                        active.remove(run)
                        summaries[id(run)] = run.finish()  # its summary now: the others owe it nothing
                # nothing updated and no chunk came in: wait for one (a seed that harvested one may update or
                # collect at once, as a solo run does)
                if active and not updated and sum(run.state.env_steps for run in self.runs) == before:
                    self._wait(active)
            return [summaries[id(run)] for run in self.runs]
        except BaseException as e:
            errors = [run.failed(e) for run in opened if id(run) not in summaries]
            error = next((x for x in errors if x is not e), e)
            if error is e:
                raise
            raise error from None
        finally:
            if self.learner is not None:
                self.learner.close()
            for run in self.runs:
                run._shutdown()
            self.backend.shutdown()

    def _update(self, active: list[Run]) -> int:
        """The updates every seed owes now, each one update of the pack (at most HARVEST_EVERY while chunks
        are in flight on Ray, as a run does)."""
        for run in active:
            run._milestones()
        updated = 0
        while len(active) == len(self.runs) and all(
                run.limiter.may_update(run.learner.updates, run.state.env_steps) for run in active):
            t_wait = time.perf_counter()
            batches = [run.replay.next_batch() for run in self.runs]
            t_update = time.perf_counter()
            assert self.learner is not None  # (made in __init__, or the pack did not start)
            for run, metrics in zip(self.runs, self.learner.update(batches), strict=True):
                run._updated(metrics, t_wait, t_update)
            updated += 1
            if updated >= HARVEST_EVERY and self.backend.concurrent and any(run.inflight for run in active):
                break
        return updated

    def _wait(self, active: list[Run]) -> None:
        """Nothing to update: wait until a chunk of any seed is in (each seed harvests its own next round)."""
        futures = [future for run in active for future in run.inflight]
        if futures:
            t_idle = time.perf_counter()
            self.backend.ready(futures, block=True)
            idle = time.perf_counter() - t_idle
            for run in active:
                run.clock.idle += idle / len(active)


def train_pack(cfgs: list[Config], spec, resumes: list[dict | None]) -> list[dict]:
    return Pack(cfgs, spec, resumes).run()
