"""The run's own state: its counters and schedules (`RunState`), and the checkpoint file that keeps them with
the learner's, the arm source's and the replay's state, so that `--resume` continues where a run stopped."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch


@dataclass
class RunState:
    """What the run counts and schedules; a checkpoint saves it and a resume restores it."""

    generation: int = 0  # resumes so far: a resumed run's actors draw from new rng streams
    env_steps: int = 0  # transitions harvested (inserted and counted)
    episodes: int = 0  # finished training episodes
    arm_episodes: int = 0  # of those, played under an arm (reported to the arm source)
    dispatched: int = 0  # chunks handed out (round-robin position)
    visits: np.ndarray | None = None  # CliffWalk: training env steps per cell (the report's heatmaps)
    evals: dict[int, dict | None] = field(default_factory=dict)  # env step -> result (None while running)
    target_syncs: list[tuple[int, int]] = field(default_factory=list)  # (env step, updates) of each target copy
    next_target: int = 0  # env step of the next target copy
    next_eval: int = 0  # env step of the next evaluation
    wandb_id: str | None = None

    @classmethod
    def new(cls, cfg, spec) -> RunState:
        visits = np.zeros(spec.obs_shape[0], dtype=np.int64) if spec.name == "CliffWalk" else None
        return cls(visits=visits, next_target=cfg.target_update, next_eval=min(cfg.eval_every, cfg.total_steps))

    @classmethod
    def from_checkpoint(cls, ckpt: dict) -> RunState:
        """The state a checkpoint saved, as the next generation."""
        c = ckpt["counters"]
        visits = ckpt.get("visits")
        return cls(generation=int(c.get("generation", 0)) + 1, env_steps=int(c["env_steps"]),
                   episodes=int(c["episodes"]), arm_episodes=int(c["arm_episodes"]), dispatched=int(c["dispatched"]),
                   visits=None if visits is None else np.asarray(visits, dtype=np.int64),
                   evals={int(e["env_steps"]): e for e in ckpt["evals"]},
                   target_syncs=[tuple(t) for t in ckpt["target_syncs"]],
                   next_target=int(ckpt["next"]["target"]), next_eval=int(ckpt["next"]["eval"]),
                   wandb_id=ckpt.get("wandb_id"))

    def to_checkpoint(self, updates: int) -> dict:
        """Plain data for checkpoint.pt; an evaluation still running is started again after a resume."""
        running = [k for k, v in self.evals.items() if v is None]
        return {"counters": {"env_steps": self.env_steps, "updates": updates, "episodes": self.episodes,
                             "arm_episodes": self.arm_episodes, "dispatched": self.dispatched,
                             "generation": self.generation},
                "visits": None if self.visits is None else self.visits.tolist(),
                "evals": self.finished_evals(),
                "target_syncs": [list(t) for t in self.target_syncs],
                "next": {"target": self.next_target, "eval": min(running + [self.next_eval])},
                "wandb_id": self.wandb_id}

    def finished_evals(self) -> list[dict]:
        return [self.evals[k] for k in sorted(self.evals) if self.evals[k] is not None]


def write_checkpoint(out: Path, checkpoint: dict, name: str = "checkpoint.pt") -> None:
    """`out/name`, written atomically (a temp file, then a rename): a crash leaves the last good one."""
    tmp = out / f"{name}.tmp"
    torch.save(checkpoint, tmp)
    os.replace(tmp, out / name)
