"""The episode loop: a few environments stepped together, one batched forward per step.

Plain Python and numpy (no torch, no Ray): `beta_dqn.driver.runtime` hosts it in-process or as a Ray actor.
The actor talks to two ports: the replay (`insert(chunk)`) once per `collect`, and an arm source (the
bandit for β-DQN) through `exchange(reports, n)`: finished episodes in, arms for new episodes out. How often
is `--arm-exchange`:
* `episode`: when an episode ends, one call reports it and brings the arm of its env's next episode
  (asynchronously when the port offers it: that env waits while the others step);
* `chunk` (a central source): the episodes that end in a `collect` are reported together at its end, in one
  call that also gives back the arms no episode took and asks fresh arms for the actor's next episodes (one
  more than began in this chunk); they arrive while the actor waits for its next `collect`, and a new
  episode takes the oldest. An arm is thus chosen at most a chunk before its episode begins (unless the
  actor runs out and asks, waiting); the bandit measures how late (`SlidingWindowBandit.lag`).
"""

from __future__ import annotations

import os
import secrets
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from actors.envs import make_env
from learner.methods import acting, extras
from learner.methods.contracts import MethodSettings
from learner.methods.numpy_net import NumpyNet, unflatten
from replay_service.buffer import make_packer
from replay_service.schema import CORE, RECORD_ONLY, Schema


@dataclass
class Episode:
    """State of one running episode in one environment."""

    arm: int | None = None  # None until the run passes learning_starts (uniformly random until then)
    ret: float = 0.0
    length: int = 0
    arm_steps: int = 0  # steps acted under the arm
    memory: Any = None  # the method's own state of the episode (`Acting.act` keeps it)
    arm_request: Future | None = None  # the arm on its way from the arm source (the env waits for it)
    stamp: int = -1  # the arm source's stamp of the arm (handed back with the episode's report)
    id: int = -1  # this actor's count of episodes begun (with the actor id, names the episode)


@dataclass(frozen=True)
class ActorSettings:
    """What an actor reads of the run's configuration (`beta_dqn.configuration.settings.settings(ActorSettings,
    cfg)`)."""

    seed: int
    envs_per_actor: int
    learning_starts: int  # uniformly random actions (no arm) before it
    arm_exchange: str  # "episode" or "chunk" (settled by `beta_dqn.configuration.resolution.resolve`)
    method: MethodSettings  # what the method's acting reads


class Actor:
    def __init__(self, cfg: ActorSettings, spec, actor_id: int, arm_source, replay, generation: int = 0):
        self.cfg, self.spec, self.actor_id = cfg, spec, actor_id
        self.arm_source, self.replay = arm_source, replay
        # independent streams for the acting rng and each environment (never the same seed twice)
        # (a resumed run is a new generation: new streams, not a replay of the first run's)
        key = [cfg.seed, actor_id] + ([generation] if generation else [])
        streams = np.random.SeedSequence(key).spawn(1 + cfg.envs_per_actor)
        self.rng = np.random.default_rng(streams[0])
        self.envs = [make_env(spec.name, seed=int(ss.generate_state(1)[0]), kwargs=spec.env_kwargs,
                              wrappers=spec.wrappers)
                     for ss in streams[1:]]
        self.obs = [env.reset()[0] for env in self.envs]
        self.acting = acting(cfg.method)
        # arms chosen ahead, a chunk at a time (a central arm source: the bandit), or one per episode
        if cfg.arm_exchange not in ("episode", "chunk") and self.acting.central:
            raise ValueError(f"arm_exchange={cfg.arm_exchange!r}: beta_dqn.configuration.resolution.resolve settles it "
                             "first")
        self.per_chunk = cfg.arm_exchange == "chunk" and self.acting.central
        self.arms: deque[tuple[int, int]] = deque()  # (arm, stamp) in hand for the next episodes
        self.unreported: list[tuple] = []  # finished episodes (arm, return, bonus, stamp) to report
        self.exchange_reply: Future | None = None  # the arms on their way
        self.arms_taken = 0  # arms taken by episodes in this collect
        self.packer = make_packer(spec)
        self.schema = Schema(extras(cfg.method.algo))  # what a chunk holds per step (the method's extras too)
        # a step's row, in the order `_step` appends it: the observations, the core, the record-only fields,
        # the method's extras
        self.row = ("obs", "next_obs", *(f.name for f in CORE + RECORD_ONLY + self.schema.extras))
        self.nets: dict[str, NumpyNet] = {}
        self.version = -1
        self.episodes: list[Episode | None] = [None] * len(self.envs)
        self.episodes_begun = 0
        self.instance, self.chunks_sent = secrets.token_hex(4), 0  # a restarted process is a new instance
        # training visits per cell of a one-hot grid (the report's state-visitation heatmaps), per chunk
        self.track_visits = spec.state_grid is not None

    def ready(self) -> int:
        """Answers once the actor is constructed (the run waits for all before the first chunk)."""
        return self.actor_id

    def process_id(self) -> int:
        return os.getpid()

    def set_weights(self, weights: dict, version: int) -> None:
        self.nets = {name: NumpyNet(params, self.spec.reading) for name, params in unflatten(weights).items()}
        self.version = version

    def _act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int) -> int:
        """One action of env's episode `ep` at `obs`, given the acting networks' outputs at `obs`."""
        if ep.arm is None:  # before learning_starts: uniformly random (LESSON's option 0)
            return int(self.rng.integers(self.spec.n_actions))
        ep.arm_steps += 1
        return self.acting.act(ep, obs, values, step, self.rng)

    def _new_episode(self, **kw) -> Episode:
        self.episodes_begun += 1
        return Episode(id=self.episodes_begun - 1, **kw)

    def _exchange(self, reports: list, n: int, wait: bool, returned: list | tuple = ()) -> Future:
        """Give back unplayed arms, report finished episodes and ask for `n` arms: a future of (arms, stamp).
        A remote arm source answers later (unless `wait`), a local one now."""
        ask = None if wait else getattr(self.arm_source, "exchange_async", None)
        holder = (self.actor_id, self.instance)
        if ask is not None:
            return ask(reports, n, returned, holder)
        done: Future = Future()
        done.set_result(self.arm_source.exchange(reports, n, returned, holder))
        return done

    def _waiting(self, i: int, block: bool = False) -> bool:
        """Whether env i still waits for its next arm (taking the arm if it has come)."""
        ep = self.episodes[i]
        if ep is None or ep.arm_request is None:
            return False
        if not (block or ep.arm_request.done()):
            return True
        arms, ep.stamp = ep.arm_request.result()
        ep.arm, ep.arm_request = int(arms[0]), None
        return False

    def _take_arm(self, ep: Episode) -> None:
        """The arm of a new episode: asked now (one call), or with `chunk` the oldest in hand (asking, and
        waiting, only when none is left)."""
        if not self.per_chunk:
            arms, ep.stamp = self._exchange([], 1, wait=True).result()
            ep.arm = int(arms[0])
            return
        if not self.arms:
            self._receive_arms()
        if not self.arms:  # none in hand or on the way: ask now (the chunk's episodes wait for its end)
            self.exchange_reply = self._exchange([], max(1, self.arms_taken), wait=True)
            self._receive_arms()
        arm, ep.stamp = self.arms.popleft()
        ep.arm = int(arm)
        self.arms_taken += 1

    def _receive_arms(self) -> None:
        """The arms on their way, into hand (waiting for them)."""
        if self.exchange_reply is not None:
            arms, stamp = self.exchange_reply.result()
            self.arms.extend((int(a), stamp) for a in arms)
            self.exchange_reply = None

    def settle(self) -> None:
        """Wait for the answers to every report sent (then the arm source holds them all): before the run
        saves the bandit's state."""
        self._receive_arms()
        for i in range(len(self.envs)):
            self._waiting(i, block=True)

    def _exchange_for_next_chunk(self, reports: list) -> None:
        """`chunk`: report this chunk's finished episodes, give back the arms still in hand (chosen a chunk
        ago) and ask fresh ones for the next chunk's new episodes (one more than began in this one), without
        waiting for them."""
        self._receive_arms()
        returned = [arm for arm, _ in self.arms]
        self.arms.clear()
        self.exchange_reply = self._exchange(reports, self.arms_taken + 1, wait=False, returned=returned)
        self.arms_taken = 0

    def collect(self, n_steps: int, weights=None, version: int = -1, global_step: int = 0) -> dict:
        """Step the environments for `n_steps` env steps in all, insert them as one chunk, report stats.

        `global_step` is the run's env-step count when this call was dispatched; it drives the warm-up
        and ε schedules.
        """
        t_start = time.perf_counter()
        if weights is not None and (version != self.version or not self.nets):
            self.set_weights(weights, version)
        if not self.nets:
            raise RuntimeError("collect before any weights were set")
        rows: dict[str, list] = {name: [] for name in self.row}
        finished: list[dict] = []
        visits = np.zeros(self.spec.obs_shape[0], dtype=np.int64) if self.track_visits else None
        produced = 0
        while produced < n_steps:
            active = self._active_envs(n_steps - produced)
            if not active:
                continue
            self._begin_episodes(active, global_step + produced)
            self._step(active, global_step + produced, rows, finished, visits)
            produced += len(active)
        # `chunk`: the chunk's episodes are reported once it is in the replay (a chunk lost is not reported)
        reports, self.unreported = self.unreported, []
        chunk = self._chunk(rows)
        t_insert = time.perf_counter()
        self.replay.insert(chunk)
        t_inserted = time.perf_counter()
        if self.per_chunk:
            self._exchange_for_next_chunk(reports)
        stats = {"actor_id": self.actor_id, "steps": produced, "version": self.version, "episodes": finished,
                 # wall seconds of this call, and of them the insert (its round trip to the replay): where an
                 # actor's time goes (the run's summary, `throughput.actor_*_fraction`)
                 "seconds": time.perf_counter() - t_start, "insert_seconds": t_inserted - t_insert}
        if visits is not None:
            stats["visits"] = visits
        return stats

    def _active_envs(self, limit: int) -> list[int]:
        """The envs that step this round (at most `limit`). An env whose next arm is still on its way sits it
        out: its round trip to the arm source overlaps the other envs' steps (with none left, wait for the
        first arm, and step none this round)."""
        active = [i for i in range(len(self.envs)) if not self._waiting(i)]
        if not active:
            self._waiting(next(i for i, ep in enumerate(self.episodes) if ep and ep.arm_request), block=True)
        return active[:limit]

    def _begin_episodes(self, active: list[int], step: int) -> None:
        """An episode for every active env, and an arm for every episode from learning_starts on: at its
        start, or at the step the run passes learning_starts for an episode that began in the warm-up."""
        for j, i in enumerate(active):
            if self.episodes[i] is None:
                self.episodes[i] = self._new_episode()
            ep = self.episodes[i]
            assert ep is not None
            if ep.arm is None and step + j >= self.cfg.learning_starts:
                self._take_arm(ep)

    def _step(self, active: list[int], step: int, rows: dict[str, list], finished: list[dict],
              visits: np.ndarray | None) -> None:
        """One step of every active env, after one batched forward of the acting networks."""
        obs = np.stack([self.obs[i] for i in active])
        episodes = cast("list[Episode]", [self.episodes[i] for i in active])  # every one begun (`_begin_episodes`)
        needs_values = any(ep.arm is not None for ep in episodes)
        arms = [ep.arm for ep in episodes]
        values = self.acting.outputs(self.nets, obs, arms) if needs_values else {}
        for j, i in enumerate(active):
            ep = episodes[j]
            a = self._act(ep, self.obs[i], {k: v[j] for k, v in values.items()}, step + j)
            next_obs, reward, terminated, truncated, info = self.envs[i].step(a)
            if visits is not None:
                visits[int(np.argmax(self.obs[i]))] += 1
            for column, value in zip(rows.values(), (self.obs[i], next_obs, a, reward, terminated, truncated,
                                                     ep.id, *self.acting.step_extras(ep)), strict=True):
                column.append(value)  # (in `self.row`'s order)
            ep.ret += float(reward)
            ep.length += 1
            if terminated or truncated:
                finished.append(self._end_episode(i, ep, info))
                next_obs, _ = self.envs[i].reset()
            self.obs[i] = next_obs

    def _end_episode(self, i: int, ep: Episode, info: dict) -> dict:
        """Env i's episode ended: report it (`episode`: now, in one round trip that also asks the arm of its
        next one; `chunk`: at the chunk's end)."""
        self.episodes[i] = None
        if ep.arm is not None:
            report = (ep.arm, ep.ret, self.acting.bonus(ep), ep.stamp)
            if self.per_chunk:
                self.unreported.append(report)
            else:
                self.episodes[i] = self._new_episode(arm_request=self._exchange([report], 1, wait=False))
        success = info.get("success") if self.spec.has_success else None
        return {"return": ep.ret, "length": ep.length, "arm": ep.arm, "success": success}

    def _chunk(self, rows: dict[str, list]) -> dict:
        chunk = {
            "obs": self.packer.pack(np.stack(rows["obs"])),
            "next_obs": self.packer.pack(np.stack(rows["next_obs"])),
            # the core's and the method's columns; `truncated` and `episode` for external replays' records
            # (`replay_service.codec`): the learner's batch does not use them
            **{name: self.schema.column(name, rows[name]) for name in self.row[2:]},
            "actor": self.actor_id,
            "version": self.version,
            # names this chunk for an external replay, which stores a chunk sent twice (a retry) once
            "chunk_id": f"{self.actor_id}-{self.instance}-{self.chunks_sent}",
        }
        self.chunks_sent += 1
        return chunk
