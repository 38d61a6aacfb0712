"""Run outputs: metrics.jsonl, evals.csv, W&B (same metrics), and the progress bar."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from pathlib import Path

from learner.config import public

EVAL_FIELDS = ("env_steps", "return_mean", "return_std", "success_rate")


def eval_fields(cfg) -> tuple[str, ...]:
    """evals.csv's columns: the evaluation policy's scores, then β-DQN's basic policies' (`--eval-basic`)."""
    if cfg.algo != "beta_dqn" or not cfg.eval_basic:
        return EVAL_FIELDS
    from actors.evaluator import BASIC

    return EVAL_FIELDS + tuple(f"{p}_{k}" for p in BASIC for k in EVAL_FIELDS[1:])


def wandb_mode(cfg) -> str:
    return cfg.wandb or os.environ.get("WANDB_MODE", "") or "offline"


class RunLogger:
    def __init__(self, cfg, out: Path, total_steps: int, resume: dict | None = None):
        """`resume` ({"env_steps", "evals", "wandb_id"} of a checkpoint): the files are cut back to what
        the checkpoint had seen, then continued; the W&B run with that id is resumed."""
        self.out = out
        kept: list[str] = []
        if resume is not None and (out / "metrics.jsonl").exists():
            kept = [line for line in (out / "metrics.jsonl").read_text().splitlines()
                    if line.strip() and json.loads(line)["env_steps"] <= resume["env_steps"]]
        self.metrics_file = open(out / "metrics.jsonl", "w")
        self.metrics_file.writelines(line + "\n" for line in kept)
        self.evals_file = open(out / "evals.csv", "w", newline="")
        self.evals_csv = csv.writer(self.evals_file, lineterminator="\n")
        self.fields = eval_fields(cfg)
        self.evals_csv.writerow(self.fields)
        for result in (resume or {}).get("evals", []):
            self.evals_csv.writerow([result[k] for k in self.fields])
        self.evals_file.flush()
        self.wandb = None
        self.wandb_id = (resume or {}).get("wandb_id")
        mode = wandb_mode(cfg)
        if mode != "disabled":
            import wandb

            self.wandb = wandb.init(
                project=cfg.wandb_project, mode=mode, dir=str(out), name=out.name,
                id=self.wandb_id, resume="allow" if self.wandb_id else None,
                group=f"{cfg.env}/{cfg.algo}" + (f"/{cfg.variant}" if cfg.variant else ""), job_type="train",
                tags=[cfg.env, cfg.algo, f"seed{cfg.seed}", *([f"grid:{cfg.grid}"] if cfg.grid else []),
                      *(cfg.variant.split(",") if cfg.variant else [])],
                config=public(cfg),
                # no command line in W&B's metadata: it can hold a Redis password (config is redacted)
                settings=wandb.Settings(x_disable_meta=True))
            # evaluations finish out of order with training logs: plot both against env_steps
            self.wandb.define_metric("env_steps")
            self.wandb.define_metric("train/*", step_metric="env_steps")
            self.wandb.define_metric("eval/*", step_metric="env_steps")
            self.wandb_id = self.wandb.id
        self.bar = None
        if cfg.progress:
            from tqdm import tqdm

            self.bar = tqdm(total=total_steps, unit="step", unit_scale=True, dynamic_ncols=True, mininterval=1.0,
                            file=sys.stderr, desc=f"{cfg.env} {cfg.algo} s{cfg.seed}")

    def log(self, row: dict) -> None:
        self.metrics_file.write(json.dumps(row) + "\n")
        self.metrics_file.flush()
        if self.wandb is not None:
            self.wandb.log({"env_steps": row["env_steps"], **{f"train/{k}": v for k, v in row.items()}})

    def log_eval(self, result: dict) -> None:
        self.evals_csv.writerow([result[k] for k in self.fields])
        self.evals_file.flush()
        if self.wandb is not None:
            self.wandb.log({"env_steps": result["env_steps"],
                            **{f"eval/{k}": v for k, v in result.items() if k != "env_steps"}})
        if self.bar is not None:
            text = f"{result['return_mean']:.2f}"
            if not math.isnan(result["success_rate"]):
                text += f" (success {result['success_rate']:.2f})"
            self.bar.set_postfix_str(f"eval@{result['env_steps']}: {text}", refresh=False)

    def advance(self, steps: int) -> None:
        if self.bar is not None:
            self.bar.update(steps)

    def close(self, summary: dict | None = None, failed: bool = False) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.wandb is not None:
            if summary:
                self.wandb.summary.update({k: v for k, v in summary.items() if not isinstance(v, dict)})
            self.wandb.finish(exit_code=1 if failed else 0)
            self.wandb = None
        self.metrics_file.close()
        self.evals_file.close()
