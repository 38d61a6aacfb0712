"""What a run says of itself (`RunReport`, one part of `beta_dqn.driver.run.Run`, given what it reads): a row of
metrics every `--log-every` seconds (`beta_dqn.driver.outputs.RunLogger` writes it), and at the end the summary
(summary.json).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from actors.envs import EnvSpec
from beta_dqn.configuration.flags import Config, epsilon_plan, method_settings
from beta_dqn.driver.host import cpu_capability, cpu_kernels, cpu_model
from beta_dqn.driver.outputs import Clock, Window, git_commit, package_versions
from beta_dqn.driver.state import RunState
from learner.methods import algorithm
from learner.methods.contracts import Acting
from replay_service.client import ReplaySampler, achieved_ratio


def _json_number(value):
    """NaN (no notion of success, e.g. MinAtar) is written as null: JSON has no NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value


def observations(cfg: Config, spec: EnvSpec) -> dict:
    """The observations as the run's networks read them (`learner.methods.reading.Reading`: network, layout,
    pixels, how the layout was chosen) and each trained network's parameters, counted on modules built on torch's
    meta device (no memory)."""
    import torch

    try:
        with torch.device("meta"):
            nets = algorithm(cfg.algo).networks(spec, method_settings(cfg))
        sizes = {name: sum(p.numel() for p in net.parameters()) for name, net in nets.items()}
    except Exception:  # noqa: BLE001 - a method of the user's whose networks cannot be built there: no count
        sizes = None
    return {"shape": list(spec.obs_shape), "dtype": spec.obs_dtype, **spec.reading.summary(), "parameters": sizes}


class RunReport:
    """A run's metrics rows and summary. `arm(method, *args)` calls the run's arm source (`Run._arm`)."""

    def __init__(self, cfg: Config, spec: EnvSpec, state: RunState, learner: Any, replay: ReplaySampler,
                 acting: Acting, arm: Callable[..., Any]):
        self.cfg, self.spec, self.state, self.learner, self.replay = cfg, spec, state, learner, replay
        self.acting, self.arm = acting, arm

    def bandit(self) -> dict | None:
        """β-DQN's meta-controller now: per arm N(π), μ(π) and b(π) over its window [eq:policy select], and
        how many episodes late its arms were chosen (`lag`: median, p95, max); None for a method without one."""
        return self.arm("summary") if self.acting.central else None

    def row(self, window: Window, seconds: float, wall: float) -> dict:
        """The metrics of the last `seconds` (`window`: what the loop counted in them) at `wall` seconds."""
        st, acting = self.state, self.acting
        row = {"env_steps": st.env_steps, "updates": self.learner.updates, "episodes": st.episodes,
               "wall_seconds": round(wall, 2),
               "env_steps_per_s": window.steps / max(seconds, 1e-9),
               "updates_per_s": window.updates / max(seconds, 1e-9),
               "replay_ratio": achieved_ratio(self.learner.updates, st.env_steps, self.cfg.learning_starts),
               **window.summary()}
        rejected = self.replay.rejected()  # records the learner refused so far (by kind), as in the summary
        if rejected is not None:
            row["replay_rejected"] = rejected
        bandit = self.bandit()  # one call: N(π), μ(π), b(π), lag
        if bandit is not None:
            plays = np.asarray(bandit["plays"], dtype=float)
            props = plays / max(plays.sum(), 1.0)
        elif acting.logs_arms or acting.arm_groups is not None:
            props = self.arm("proportions")
        if acting.logs_arms:  # policies / heads per episode
            row["arm_proportions"] = [round(float(p), 4) for p in props]
        if acting.arm_groups is not None:
            for g in acting.group_labels:
                row[f"arms_{g}"] = float(sum(p for p, gg in zip(props, acting.arm_groups, strict=True) if gg == g))
        if bandit is not None:
            row["arm_mu"], row["arm_bonus"] = bandit["mu"], bandit["bonus"]
            if bandit["lag"]:
                row["arm_lag_median"], row["arm_lag_p95"] = bandit["lag"]["median"], bandit["lag"]["p95"]
        return row

    def summary(self, wall: float, peak_rss: float, clock: Clock, staleness: Counter,
                placement: dict | None) -> dict:
        """summary.json's content at the run's end (every evaluation recorded, the bandit's reports settled)."""
        cfg, st, learner = self.cfg, self.state, self.learner
        final = st.evals.get(cfg.total_steps) or {}
        shard_stats = self.replay.stats()
        return {
            "env": cfg.env, "algo": cfg.algo, "seed": cfg.seed, "runtime": cfg.runtime, "actors": cfg.actors,
            "env_steps": st.env_steps, "updates": learner.updates, "episodes": st.episodes,
            "arm_episodes": st.arm_episodes, "weight_versions": learner.version,
            "target_updates": len(st.target_syncs),
            "replay_inserted": sum(s["inserted"] for s in shard_stats),
            "replay_size": sum(s["size"] for s in shard_stats),
            "replay_rejected": dict(sum((Counter(s.get("rejected", {})) for s in shard_stats), Counter())),
            "replay_ratio": achieved_ratio(learner.updates, st.env_steps, cfg.learning_starts),
            "wall_seconds": wall, "env_steps_per_s": st.env_steps / wall, "peak_rss_gb": peak_rss,
            "device": str(learner.device),
            "throughput": clock.summary(st.env_steps, learner.updates, staleness, cfg.actors),
            "placement": placement,
            "replay_servers": self.replay.locations(),  # Redis: where the shards lived (no password)
            # one-hot grids (CliffWalk): training env steps taken in each cell (row-major), for the report
            "state_visits": None if st.visits is None else st.visits.tolist(),
            # β-DQN: the meta-controller's window at the end (what the report's selection tables show)
            "bandit": self.bandit(),
            "commit": git_commit(), "cpu": cpu_model(), "cpu_capability": cpu_capability(),
            "cpu_kernels": cpu_kernels(),
            "versions": package_versions(),
            "epsilon": epsilon_plan(cfg),  # the ε schedule it acted by (None: its method acts on none)
            "observations": observations(cfg, self.spec),  # how its networks read them, and their sizes
            "final_eval": {k: _json_number(final.get(k))
                           for k in ("env_steps", "return_mean", "return_std", "success_rate")},
        }
