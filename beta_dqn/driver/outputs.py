"""Run outputs: metrics.jsonl, evals.csv, W&B (same metrics), and the progress bar."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psutil
from tqdm import tqdm

from beta_dqn.configuration.flags import (
    Config,
    ConfigError,
    OutputError,
    epsilon_schedule,
    method_settings,
    public,
    shorten,
)
from beta_dqn.files import open_append, write_atomically
from beta_dqn.reporting.results import ALGO_LABELS, metric, steps_text
from learner.methods import acting
from learner.methods.reading import Reading

RUN_FILES = ("config.json", "checkpoint.pt", "metrics.jsonl", "evals.csv", "summary.json")  # a run is here
EVAL_FIELDS = ("env_steps", "return_mean", "return_std", "success_rate")


class NonFiniteLoss(RuntimeError):
    """The loss became NaN or infinite: the run stops (its message is one line for the user). Here, not beside
    the learner's loop (`beta_dqn.driver.run`), so that what catches it (the command line, a grid's book) need not
    import
    torch to know it."""


def eval_fields(cfg: Config) -> tuple[str, ...]:
    """evals.csv's columns: the evaluation policy's scores, then those of the method's other evaluation
    policies (β-DQN's basic policies with `--eval-basic`)."""
    others = acting(method_settings(cfg)).eval_policies[1:]
    return EVAL_FIELDS + tuple(f"{p}_{k}" for p in others for k in EVAL_FIELDS[1:])


def wandb_mode(cfg: Config) -> str:
    return cfg.wandb or os.environ.get("WANDB_MODE", "") or "offline"


def wandb_group(cfg: Config) -> str:
    """`[<grid>/]<env>/<algo>[/<variant>]`, within W&B's 128 characters (a long name ends in a hash of itself):
    two grids on one environment and method are two groups."""
    return shorten((f"{cfg.grid}/" if cfg.grid else "") + f"{cfg.env}/{cfg.algo}"
                   + (f"/{cfg.variant}" if cfg.variant else ""), 128)


def _measured(values: dict) -> dict:
    """A row for W&B without its NaN values (a success rate where the environment scores by return: a metric the
    run does not have)."""
    return {k: v for k, v in values.items() if not (isinstance(v, float) and math.isnan(v))}


def write_whole(path: Path, text: str) -> None:
    """A whole text file (`write_atomically`); a failure is an OutputError naming the path."""
    try:
        write_atomically(path, lambda f: f.write(text))
    except OSError as e:
        raise OutputError.of(path, e) from None


def metrics_until(path: Path, env_steps: int, warn: bool = True) -> list[str]:
    """metrics.jsonl's lines up to `env_steps` (a resume continues from there). A last line cut short (the run
    was killed while writing it) is dropped; a damaged line before it is an error naming the line."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    kept = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
            steps = int(row["env_steps"])
        except (ValueError, KeyError, TypeError) as e:
            if i == len(lines) - 1:
                if warn:
                    print(f"warning: {path}'s last line was cut short (the run stopped while writing it); "
                          "it is dropped", file=sys.stderr)
                break
            raise ConfigError("resume", f"{path} line {i + 1} is damaged ({type(e).__name__}); a resume keeps "
                                        "the metrics up to its checkpoint: repair or remove that line") from None
        if steps <= env_steps:
            kept.append(line)
    return kept


class RunLogger:
    def __init__(self, cfg: Config, out: Path, total_steps: int, resume: dict | None = None):
        """`resume` ({"env_steps", "evals", "wandb_id"} of a checkpoint): the files are cut back to what
        the checkpoint had seen, then continued; the W&B run with that id is resumed."""
        self.out = out
        self.fields = eval_fields(cfg)
        kept = metrics_until(out / "metrics.jsonl", resume["env_steps"]) if resume is not None else []
        evals = io.StringIO()
        rows = csv.writer(evals, lineterminator="\n")
        rows.writerows([self.fields, *[[r[k] for k in self.fields] for r in (resume or {}).get("evals", [])]])
        # what the checkpoint had seen, each file replaced whole (a kill or a full disk keeps the old one),
        # then continued
        write_whole(out / "metrics.jsonl", "".join(line + "\n" for line in kept))
        write_whole(out / "evals.csv", evals.getvalue())
        self.metrics_file = open_append(out / "metrics.jsonl")
        self.evals_file = open_append(out / "evals.csv", newline="")
        self.evals_csv = csv.writer(self.evals_file, lineterminator="\n")
        self.wandb = None
        self.wandb_id = (resume or {}).get("wandb_id")
        mode = wandb_mode(cfg)
        if mode != "disabled":
            import wandb  # only a run that logs to W&B pays its import (1.5 s)

            self.wandb = wandb.init(
                project=cfg.wandb_project, entity=cfg.wandb_entity or None,
                mode=mode,  # type: ignore[arg-type]  # (checked: WANDB_MODES)
                dir=str(out), name=out.name,
                id=self.wandb_id, resume="allow" if self.wandb_id else None,
                group=wandb_group(cfg), job_type="train",
                tags=[cfg.env, cfg.algo, f"seed{cfg.seed}", *([f"grid:{cfg.grid}"] if cfg.grid else []),
                      *(cfg.variant.split(",") if cfg.variant else [])],
                config=public(cfg),
                # no command line in W&B's metadata: it can hold a Redis password (config is redacted)
                # a W&B run of its own for every seed of a pack (one process): wandb's default would hand the
                # second init the first seed's run
                settings=wandb.Settings(x_disable_meta=True, quiet=True, reinit="create_new"))
            # evaluations finish out of order with training logs: plot both against env_steps
            self.wandb.define_metric("env_steps")
            self.wandb.define_metric("train/*", step_metric="env_steps")
            self.wandb.define_metric("eval/*", step_metric="env_steps")
            self.wandb_id = self.wandb.id
        self.bar = None
        if cfg.progress:
            self.bar = tqdm(total=total_steps, unit="step", unit_scale=True, dynamic_ncols=True, mininterval=1.0,
                            file=sys.stderr, desc=f"{cfg.env} {cfg.algo} s{cfg.seed}")

    def created(self) -> list[str]:
        """What the logs made in the run directory, relative to it (for the run's record of its files): the two
        files, and W&B's run directory (whole) and the links W&B keeps beside it."""
        made = ["metrics.jsonl", "evals.csv"]
        if self.wandb is not None and getattr(self.wandb, "dir", None):
            run_dir = Path(self.wandb.dir).parent  # <out>/wandb/<offline-run-...>/files
            if run_dir.is_relative_to(self.out):
                made.append(str(run_dir.relative_to(self.out)) + "/")
            made += [f"wandb/{name}" for name in ("latest-run", "debug.log", "debug-internal.log")
                     if (self.out / "wandb" / name).is_symlink()]
        return made

    def log(self, row: dict) -> None:
        self._write(self.metrics_file, json.dumps(row) + "\n")
        if self.wandb is not None:
            self.wandb.log({"env_steps": row["env_steps"], **{f"train/{k}": v for k, v in _measured(row).items()}})

    def log_eval(self, result: dict) -> None:
        try:
            self.evals_csv.writerow([result[k] for k in self.fields])
            self.evals_file.flush()
        except OSError as e:
            raise OutputError.of(Path(self.evals_file.name), e) from None
        if self.wandb is not None:
            self.wandb.log({"env_steps": result["env_steps"],
                            **{f"eval/{k}": v for k, v in _measured(result).items() if k != "env_steps"}})
        if self.bar is not None:
            text = f"{result['return_mean']:.2f}"
            if not math.isnan(result["success_rate"]):
                text += f" (success {result['success_rate']:.2f})"
            self.bar.set_postfix_str(f"eval@{result['env_steps']}: {text}", refresh=False)

    @staticmethod
    def _write(f, text: str) -> None:
        """A line to a run's file, now (a full disk is one line naming the file, not a traceback)."""
        try:
            f.write(text)
            f.flush()
        except OSError as e:
            raise OutputError.of(Path(f.name), e) from None

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
        for f in (self.metrics_file, self.evals_file):
            try:
                f.close()
            except OSError:  # a full disk: already said by the write that failed
                pass


def describe_run(cfg: Config, summary: dict) -> str:
    """What a person reads at the end of a run: what ran, how fast, the evaluations, where the outputs are."""
    key = metric(summary["env"])
    layout = (f"{cfg.actors} actor{'s' * (cfg.actors > 1)} × {cfg.envs_per_actor} env"
              f"{'s' * (cfg.envs_per_actor > 1)}, {cfg.runtime} runtime")
    lines = [f"{ALGO_LABELS.get(cfg.algo, cfg.algo)} on {cfg.env}, seed {cfg.seed}: {summary['env_steps']:,} env "
             f"steps in {summary['wall_seconds']:.0f} s ({summary['env_steps_per_s']:,.0f} steps/s; {layout})"]
    seen = summary.get("observations")
    if seen and seen["network"] != "mlp":  # how the networks read a rank-3 observation (a flat one: the MLP)
        reading = Reading(seen["network"], seen["layout"], seen["pixels"], seen["layout_chosen"])
        q = (seen["parameters"] or {}).get("q")
        lines.append(f"observations: {reading.describe(tuple(seen['shape']), seen['dtype'])}"
                     + (f", {q:,} parameters" if q else ""))
    schedule = epsilon_schedule(cfg)
    if schedule:
        lines.append(f"exploration: {schedule}")
    with open(Path(cfg.out) / "evals.csv") as f:
        evals = list(csv.DictReader(f))
    if evals:
        shown = evals if len(evals) <= 10 else [evals[round(i * (len(evals) - 1) / 9)] for i in range(10)]
        name = "success" if key == "success_rate" else "return"
        lines += [f"evaluations ({cfg.eval_episodes} episodes, ε = {cfg.eval_epsilon:g}), {name} of the greedy "
                  "policy:",
                  "  env steps " + " ".join(f"{steps_text(float(e['env_steps'])):>6}" for e in shown),
                  f"  {name:<9} " + " ".join(f"{float(e[key]):>6.2f}" for e in shown)]
    final = summary["final_eval"]
    if final.get("return_mean") is not None:
        text = f"return {final['return_mean']:.2f} ± {final['return_std']:.2f}"
        if final.get("success_rate") is not None:
            text = f"success {final['success_rate']:.2f}, " + text
        lines.append(f"final: {text}")
    best = ", best.pt" if (Path(cfg.out) / "best.pt").is_file() else ""  # (the best evaluation's networks)
    lines += [f"outputs: {cfg.out}/ (summary.json, evals.csv, metrics.jsonl, checkpoint.pt{best})",
              f"report:  python -m learner.report {cfg.out}"]
    mode = wandb_mode(cfg)
    if mode == "offline":
        lines.append(f"W&B:     offline run in {cfg.out}/wandb (upload: wandb sync {cfg.out}/wandb/offline-run-*)")
    elif mode == "online":
        lines.append(f"W&B:     project {cfg.wandb_project}, group {wandb_group(cfg)}")
    return "\n".join(lines)


SOURCE = Path(__file__).resolve().parents[2]  # where this project's packages are: a checkout, or site-packages


def git_commit(root: Path = SOURCE) -> str | None:
    """The git commit that holds this project's code (with "+dirty" for uncommitted changes to it), where `root`,
    the directory its packages are in, is tracked by a git checkout: the repository itself, an editable install, or
    a repository that vendors it as a tracked folder. None otherwise: an install into site-packages inside some
    other git repository (a venv in the user's own project) is not tracked there, and that commit is the user's."""
    try:
        subprocess.run(["git", "ls-files", "--error-unmatch", "--", "beta_dqn/driver/outputs.py"], cwd=root,
                       capture_output=True, text=True, timeout=10, check=True)
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "."], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


VERSIONED = ("torch", "numpy", "gymnasium", "minigrid", "minatar", "ray")  # what a run's numbers may depend on
PROJECT = "beta-dqn"  # this project's own distribution (pyproject.toml): its version beside the commit


def package_versions() -> dict[str, str | None]:
    """Python's version, this project's (`PROJECT`) and those of the packages a run's numbers may depend on
    (`VERSIONED`; None for one not installed): what a run's summary records beside its commit and CPU, so that a
    cell of a table can be computed again on the same software."""
    from importlib import metadata

    from beta_dqn.version import __version__

    versions: dict[str, str | None] = {"python": platform.python_version(), PROJECT: __version__}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def process_tree_rss() -> float:
    """Resident memory of this process and all its descendants (Ray's too), in GB."""
    me = psutil.Process()
    total = 0
    for p in [me, *me.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e9


def actor_fractions(acting: float, inserting: float, actor_seconds: float) -> dict:
    """Of the actors' wall time together (`actor_seconds`): in `collect` but its insert, in the insert, waiting."""
    return {"actor_busy_fraction": (acting - inserting) / actor_seconds,
            "actor_insert_fraction": inserting / actor_seconds, "actor_idle_fraction": 1.0 - acting / actor_seconds}


class Clock:
    """Where the time goes: startup (to every actor constructed, to the first transition), the steady
    state (from the first update on), and the learner's share of it.

    `wait` is the learner blocked on a replay sample it needs now; `update` its gradient steps; `idle`
    the loop blocked on actors while no update is owed (the rate limiter holding the learner back).
    `acting` and `inserting` sum the actors' own clocks over their chunks (`Actor.collect`): a call's wall
    seconds and, of them, its insert's round trip to the replay; the rest of an actor's time it waits for its
    next chunk (the rate limiter, the round trip from the run's loop and back).
    """

    def __init__(self):
        self.t_created = time.perf_counter()
        self.t_first_chunk = self.t_all_actors = self.t_steady = None
        self.steady_from = (0, 0)  # (env steps, updates) when the steady state began
        self.wait = self.update = self.idle = 0.0
        self.acting = self.inserting = 0.0  # the actors' seconds in `collect` and, of them, in its insert
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
        self.acting = self.inserting = 0.0

    def learner(self, wait: float, update: float) -> None:
        self.wait += wait
        self.update += update

    def actor(self, stats: dict) -> None:
        """A chunk's own clock (`Actor.collect`'s `seconds` and `insert_seconds`; absent from other collectors)."""
        self.acting += stats.get("seconds", 0.0)
        self.inserting += stats.get("insert_seconds", 0.0)

    def summary(self, env_steps: int, updates: int, staleness: Counter, actors: int = 0) -> dict:
        """`actors`: how many actors ran (the actors' fractions are of their wall time together; 0: none given)."""
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
            if actors and self.acting:
                # of the actors' wall time: stepping and acting (with building the chunk), the insert's round
                # trip to the replay, and waiting for the next chunk (on a serial run: while the others act and
                # the learner updates)
                out.update(actor_fractions(self.acting, self.inserting, actors * steady))
        if staleness:
            values = np.repeat(list(staleness), list(staleness.values()))
            out["staleness_median"] = float(np.median(values))
            out["staleness_p95"] = float(np.percentile(values, 95))
            out["staleness_max"] = int(values.max())
        return out


class Window:
    """Metrics gathered between two log lines."""

    def __init__(self):
        self.steps = 0
        self.updates = 0
        self.sums: dict = {}  # metric -> sum of its tensors
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
