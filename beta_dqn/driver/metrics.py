"""What a run says of itself (`RunMetrics`, a part of `beta_dqn.driver.run.Run`): a row of metrics every `--log-every`
seconds (`beta_dqn.driver.outputs.RunLogger` writes it), and at the end summary.json, with the last checkpoint.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter

import numpy as np

from beta_dqn.configuration.flags import epsilon_plan
from beta_dqn.driver.outputs import Window, cpu_model, git_commit, package_versions, process_tree_rss, write_whole
from replay_service.client import achieved_ratio


def _json_number(value):
    """NaN (no notion of success, e.g. MinAtar) is written as null: JSON has no NaN."""
    return None if isinstance(value, float) and math.isnan(value) else value


class RunMetrics:
    """`Run`'s logs and summary: they read the run's own attributes (`Run.__init__` sets them)."""

    def _bandit(self) -> dict:
        """β-DQN's meta-controller now: per arm N(π), μ(π) and b(π) over its window [eq:policy select], and
        how many episodes late its arms were chosen (`lag`: median, p95, max)."""
        return self._arm("summary")

    def _log_when_due(self) -> None:
        now = time.perf_counter()
        if now - self.last_log >= self.cfg.log_every:
            self.peak_rss = max(self.peak_rss, process_tree_rss())
            self.logger.log(self._metrics(now - self.last_log, self._wall()))
            self.window = Window()
            self.last_log = now

    def _metrics(self, seconds: float, wall: float) -> dict:
        st, window = self.state, self.window
        row = {"env_steps": st.env_steps, "updates": self.learner.updates, "episodes": st.episodes,
               "wall_seconds": round(wall, 2),
               "env_steps_per_s": window.steps / max(seconds, 1e-9),
               "updates_per_s": window.updates / max(seconds, 1e-9),
               "replay_ratio": achieved_ratio(self.learner.updates, st.env_steps, self.cfg.learning_starts),
               **window.summary()}
        rejected = self.replay.rejected()  # records the learner refused so far (by kind), as in the summary
        if rejected is not None:
            row["replay_rejected"] = rejected
        bandit = self._bandit() if self.acting.central else None  # one call: N(π), μ(π), b(π), lag
        if bandit is not None:
            plays = np.asarray(bandit["plays"], dtype=float)
            props = plays / max(plays.sum(), 1.0)
        elif self.acting.logs_arms or self.acting.arm_groups is not None:
            props = self._arm("proportions")
        if self.acting.logs_arms:  # policies / heads per episode
            row["arm_proportions"] = [round(float(p), 4) for p in props]
        if self.acting.arm_groups is not None:
            for g in self.acting.group_labels:
                row[f"arms_{g}"] = float(sum(p for p, gg in zip(props, self.acting.arm_groups, strict=True)
                                             if gg == g))
        if bandit is not None:
            row["arm_mu"], row["arm_bonus"] = bandit["mu"], bandit["bonus"]
            if bandit["lag"]:
                row["arm_lag_median"], row["arm_lag_p95"] = bandit["lag"]["median"], bandit["lag"]["p95"]
        return row

    def _finish(self) -> dict:
        cfg, st, learner = self.cfg, self.state, self.learner
        self._settle_reports()  # the last logs, the summary and the checkpoint see every episode in the bandit
        wall = self._wall()
        self.peak_rss = max(self.peak_rss, process_tree_rss())
        if self.window.updates or self.window.steps:
            self.logger.log(self._metrics(time.perf_counter() - self.last_log, wall))
        final = st.evals.get(cfg.total_steps) or {}
        shard_stats = self.replay.stats()
        self._save_checkpoint()
        summary = {
            "env": cfg.env, "algo": cfg.algo, "seed": cfg.seed, "runtime": cfg.runtime, "actors": cfg.actors,
            "env_steps": st.env_steps, "updates": learner.updates, "episodes": st.episodes,
            "arm_episodes": st.arm_episodes, "weight_versions": learner.version,
            "target_updates": len(st.target_syncs),
            "replay_inserted": sum(s["inserted"] for s in shard_stats),
            "replay_size": sum(s["size"] for s in shard_stats),
            "replay_rejected": dict(sum((Counter(s.get("rejected", {})) for s in shard_stats), Counter())),
            "replay_ratio": achieved_ratio(learner.updates, st.env_steps, cfg.learning_starts),
            "wall_seconds": wall, "env_steps_per_s": st.env_steps / wall, "peak_rss_gb": self.peak_rss,
            "device": str(learner.device),
            "throughput": self.clock.summary(st.env_steps, learner.updates, self.staleness, cfg.actors),
            "placement": self.placement,
            "replay_servers": self.replay.locations(),  # Redis: where the shards lived (no password)
            # one-hot grids (CliffWalk): training env steps taken in each cell (row-major), for the report
            "state_visits": None if st.visits is None else st.visits.tolist(),
            # β-DQN: the meta-controller's window at the end (what the report's selection tables show)
            "bandit": self._bandit() if self.acting.central else None,
            "commit": git_commit(), "cpu": cpu_model(), "versions": package_versions(),
            "epsilon": epsilon_plan(cfg),  # the ε schedule it acted by (None: its method acts on none)
            "final_eval": {k: _json_number(final.get(k))
                           for k in ("env_steps", "return_mean", "return_std", "success_rate")},
        }
        self.written.add("summary.json")
        write_whole(self.out / "summary.json", json.dumps(summary, indent=2, allow_nan=False) + "\n")
        return summary
