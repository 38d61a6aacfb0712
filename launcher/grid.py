"""Grids: every (env, algo, seed) of `python -m learner.main --algo a,b --env e,f --seeds 0-9`, in parallel.

Each run declares what it needs — its learner (`--learner-cpus`, `--learner-gpus`, and one unit of a
`learner` resource when the cluster defines one: the nodes that host learners) and one bundle of
`--actor-cpus` per actor — as a Ray placement group. Ray's scheduler packs the groups onto the cluster
and holds back the ones that do not fit until others finish: the queue is Ray's, not ours. A run is one
Ray task whose process drives an ordinary run (`driver.run`) inside its group.

This module keeps the grid's book: `GRID_DIR/grid.json` (what was asked), one run directory per
combination, `grid_summary.json` (each run's status, attempts, score, speed and where it ran), one
progress line for all runs, a run that crashed started again from its checkpoint (`--retries`), and
`--resume GRID_DIR`, which runs only what has no `summary.json` yet (from its checkpoint where it has one).

Ray is imported where a grid runs, and the training side (torch) where a run is made, not at the top: Ray costs
1.3 s and 70 MB to import (measured with `python -X importtime`) and torch seconds, which a grid's report and a
mistyped flag need not pay.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from configuration.cli import GRID_FILE, build_parser
from configuration.config_file import Section, for_run
from configuration.flags import (
    FIELDS,
    GRID_RESUME_MAY_CHANGE,
    LEGACY,
    PER_SEED,
    Config,
    ConfigError,
    OutputError,
    fit_warning,
    flag,
    flag_text,
    no_update_error,
    parse_seeds,
    public,
    reads,
    replay_backend,
    resolve,
    restore_password,
    run_name,
    settled_runtime,
)
from driver.cluster import cluster_to_start
from driver.outputs import RUN_FILES, NonFiniteLoss, write_whole
from driver.preflight import preflight
from driver.runtime import RayBackend
from driver.signals import interrupt_behind, sigterm_interrupts
from replay_service.backends import masked
from replay_service.contract import BackendError
from replay_service.redis_shard import ReplayDamaged
from reporting.results import column_label, metric

GRID_FORMAT = 2  # 2: an axis is a JSON list (1: --algo and --env as comma-separated text)
GRID_ACTOR_CPUS = 0.25  # an actor's CPUs in a grid unless --actor-cpus says otherwise (4 actors + 1 learner = 2)


def expand(args: dict, grid_dir: Path, sections: tuple[Section, ...] = ()) -> list[dict]:
    """One run's arguments per combination of the axes (the flags given as lists) and the seeds; a flag that a
    combination's method does not read keeps its default there (so DQN does not run once per value of a
    β-DQN flag); `--config`'s sections for the combination's environment and method set what they name
    (`config_file.for_run`). Every combination is validated first: a mistake in any is one line before
    anything starts."""
    axes = [(name, value) for name, value in args.items() if isinstance(value, list)]
    for name, values in axes:
        if not values:
            raise ConfigError(name, "an empty list")
    seeds = parse_seeds(args["seeds"]) if args.get("seeds") else [args["seed"]]
    runs: dict[str, dict] = {}
    for combination in itertools.product(*(values for _, values in axes)):
        chosen = {name: value for (name, _), value in zip(axes, combination, strict=True)}
        algo = chosen.get("algo", args["algo"])
        # what the method reads may hang on a flag of its own (`reads`), which a section may set
        combined = for_run({**args, **chosen}, sections)
        one = {**combined, "seeds": "", "resume": "", "grid": grid_dir.name, "progress": False,
               "pack_seeds": 1,  # a run's own config is a solo run's: packing is the grid's business
               # every actor declares its share (0 would mean "whatever the cluster has" for one run)
               "actor_cpus": args["actor_cpus"] or GRID_ACTOR_CPUS,
               **{name: value if name in ("env", "algo") or reads(algo, name, combined) else FIELDS[name].default
                  for name, value in chosen.items()},
               "variant": ",".join(f"{flag(name)[2:]}={flag_text(value)}" for name, value in chosen.items()
                                   if name not in ("env", "algo") and reads(algo, name, combined))}
        # (grid_from_args settles a new grid's auto; one written while grid.json kept it is settled here alike)
        one["runtime"] = settled_runtime(one["runtime"], True, bool(args["address"] or os.environ.get("RAY_ADDRESS")))
        for seed in seeds:
            run = {**one, "seed": seed}
            run["out"] = str(grid_dir / run_name(run["env"], run["algo"], seed, run["variant"]))
            name = Path(run["out"]).name
            if args.get("run_id"):  # a namespace of its own for each run's replay on a shared Redis
                run["run_id"] = f"{args['run_id']}-{name}"
            if name in runs:
                if runs[name] != run:
                    raise ConfigError("env", f"two values in the lists name the same run ({name})")
                continue  # the same run from a flag its method does not read
            Config(**run)  # validates; environments are checked by `resolve` below
            runs[name] = run
    for name, _ in axes:
        if not any(reads(r["algo"], name, r) for r in runs.values()):
            raise ConfigError(name, f"is a list, but no method of the grid reads it (read by "
                                    f"{', '.join(FIELDS[name].metadata['algos'])})")
    return list(runs.values())


def _prepare(args: dict):
    """A run's configuration, and its checkpoint when its directory has one to continue (on the node it runs
    on: a restart after a crash, or a resumed grid)."""
    out = Path(args["out"])
    if (out / "checkpoint.pt").is_file() and not _made_by_a_grid(out):
        raise ConfigError("out", f"{out} holds a run that is not this grid's: give the grid another --out")
    if (out / "checkpoint.pt").is_file() and _resumable(args):
        from driver.resume import resume_config  # (torch: imported where a run is made, see the docstring)

        # the grid's Redis URLs again: a password given inline was not saved with the run
        again = ["--replay", args["replay"]] if masked(args["replay"]) != args["replay"] else []
        config, ckpt = resume_config(["--resume", args["out"], "--progress", "false", *again])
    else:  # an earlier attempt of this grid's run that died before its first checkpoint is started over
        config, ckpt = Config(**{**args, "overwrite": args["overwrite"] or _made_by_a_grid(out)}), None
    cfg, spec = resolve(config)
    return cfg, spec, ckpt


def _run_unit(runs: list[dict]) -> list[dict]:
    """A Ray task: one run, or the seeds of a pack (`driver.pack`), each continued from its checkpoint where it
    has one. Each run's outcome, in order: {"summary": ...} (with where it ran), or {"error": ...} for a packed
    seed whose loss diverged.

    A seed that finished in an earlier attempt of its pack is not run again. A pack's seeds are updated in
    lockstep, so they continue together only from checkpoints at one update count (those of one moment
    always are); seeds whose checkpoints differ (the pack was stopped between two seeds' checkpoints)
    continue in one pack per update count, one after the other. When one seed's loss diverges the pack
    cannot go on: every seed of it that has not finished continues alone from its checkpoint, as it would
    have run solo (the diverging seed stops again or not, on its own)."""
    import ray  # (lazy: see the docstring)

    from driver.pack import train_pack
    from driver.run import train

    started = time.time()
    outcomes: dict[int, dict] = {}

    def finished(i: int) -> bool:
        out = Path(runs[i]["out"])
        if (out / "summary.json").is_file() and _made_by_a_grid(out):
            outcomes.setdefault(i, {"summary": json.loads((out / "summary.json").read_text())})
            return True
        return False

    todo = [i for i in range(len(runs)) if not finished(i)]
    if len(runs) == 1:
        outcomes[0] = {"summary": train(*_prepare(runs[0]))} if todo else outcomes[0]
    else:
        prepared = {i: _prepare(runs[i]) for i in todo}
        groups: dict[int, list[int]] = {}
        for i in todo:
            ckpt = prepared[i][2]
            groups.setdefault(0 if ckpt is None else int(ckpt["learner"]["updates"]), []).append(i)
        if len(groups) > 1:
            print(f"grid: the pack of {', '.join(Path(runs[i]['out']).name for i in todo)} continues as "
                  f"{len(groups)} packs, one per update count of their checkpoints", file=sys.stderr)
        for members in groups.values():
            try:
                done = train_pack([prepared[i][0] for i in members], prepared[members[0]][1],
                                  [prepared[i][2] for i in members])
                outcomes.update({i: {"summary": summary} for i, summary in zip(members, done, strict=True)})
            except NonFiniteLoss:
                for i in members:
                    if finished(i):
                        continue
                    try:
                        outcomes[i] = {"summary": train(*_prepare(runs[i]))}
                    except NonFiniteLoss as e:
                        outcomes[i] = {"error": _reason(e)}
    task = {"node": ray.get_runtime_context().get_node_id(), "started": started, "ended": time.time(),
            "pack": [Path(r["out"]).name for r in runs] if len(runs) > 1 else None}
    for outcome in outcomes.values():
        if "summary" in outcome:
            outcome["summary"]["grid_task"] = task
    return [outcomes[i] for i in range(len(runs))]


def packs(runs: list[dict], size: int) -> list[list[dict]]:
    """The runs in packs of up to `size` seeds of one configuration (everything but the seed and the names
    alike), in the grid's order; a pack of one is a solo run."""
    same: dict[str, list[dict]] = {}
    for run in runs:
        key = json.dumps({k: v for k, v in run.items() if k not in PER_SEED}, sort_keys=True, default=str)
        same.setdefault(key, []).append(run)
    return [group[i:i + size] for group in same.values() for i in range(0, len(group), size)]


def _resumable(args: dict) -> bool:
    """Whether a run's checkpoint can be continued: not when its replay died with it (its backend's
    `cannot_resume`: redis-local servers without --replay-persist); such a run starts over."""
    return not replay_backend(args["replay"]).cannot_resume(args)


def _made_by_a_grid(out: Path) -> bool:
    """Whether `out` holds a run a grid made (its config.json names a grid: this one, also under an older name
    of its directory), not a single run that someone put there."""
    try:
        made_by = json.loads((out / "config.json").read_text()).get("grid")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(made_by, str) and bool(made_by)


class Grid:
    def __init__(self, args: dict, grid_dir: Path, sections: tuple[Section, ...] = ()):
        self.args, self.dir, self.sections = args, grid_dir, sections
        if args.get("pack_seeds", 1) < 1:
            raise ConfigError("pack_seeds", f"must be >= 1, got {args['pack_seeds']}")
        self.runs = expand(args, grid_dir, sections)

        warnings, asked = [], set()
        for run in self.runs:  # unknown environments, unreachable Redis: one line before anything starts
            cfg = resolve(Config(**run))[0]
            needs = (cfg.device, cfg.replay, cfg.replay_password_file)
            if needs not in asked:  # (each Redis asked once, whatever the number of runs on it)
                preflight(cfg)
                asked.add(needs)
            warning = fit_warning(cfg)
            if warning and warning not in warnings:  # each once, whatever the number of runs it concerns
                warnings.append(warning)
        for warning in warnings:
            print(f"grid: {warning}", file=sys.stderr)
        for run in self.runs:
            # a password given off the command line (a file, REDIS_PASSWORD) is read here, where the grid is
            # started: the nodes that run the runs need not have it (grid.json and run files keep it masked)
            try:
                run["replay"] = replay_backend(run["replay"]).fill_secrets(run["replay"], run["replay_password_file"])
            except BackendError as e:
                raise ConfigError(e.name, e.message) from None
        self.status = {Path(r["out"]).name: "queued" for r in self.runs}
        self.attempts = {name: 0 for name in self.status}
        self.results: dict[str, dict] = {}
        self.groups: dict = {}  # name -> its placement group while it runs or waits for room

    # ---- the grid's book ----
    def write_spec(self) -> None:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError.of(self.dir, e) from None
        args = public({k: v for k, v in self.args.items() if k != "resume"})  # no password on disk
        spec = {"format": GRID_FORMAT, "args": args,
                # --config's sections as the grid read them: a resume runs what the grid ran, whatever the file is now
                "sections": [section.as_json() for section in self.sections],
                "runs": [{k: r[k] for k in ("env", "algo", "variant", "seed", "out")} for r in self.runs]}
        write_whole(self.dir / GRID_FILE, json.dumps(spec, indent=2) + "\n")

    def _summary(self, wall: float) -> dict:
        rows = []
        for run in self.runs:
            name = Path(run["out"]).name
            row = {"name": name, "env": run["env"], "algo": run["algo"], "variant": run["variant"],
                   "seed": run["seed"], "status": self.status[name], "attempts": self.attempts[name]}
            result = self.results.get(name)
            if result and "summary" in result:
                s = result["summary"]
                row.update(env_steps=s["env_steps"], env_steps_per_s=round(s["env_steps_per_s"], 1),
                           final_eval=s["final_eval"], placement=s.get("placement"), task=s.get("grid_task"))
            elif result:
                row["error"] = result["error"]
            rows.append(row)
        done = sum(self.status[n] in ("done", "done before") for n in self.status)
        return {"grid": self.dir.name, "runs": rows, "done": done, "failed": sum(
            s == "failed" for s in self.status.values()), "total": len(rows), "wall_seconds": round(wall, 1)}

    def _progress(self) -> int:
        """Env steps done over all runs, from each run's metrics.jsonl (a finished run counts in full)."""
        total = 0
        for run in self.runs:
            name = Path(run["out"]).name
            if self.status[name] in ("done", "done before"):
                total += run["total_steps"]
                continue
            try:  # the last line of metrics.jsonl (read from the end: the file grows all run long)
                with open(Path(run["out"]) / "metrics.jsonl", "rb") as f:
                    f.seek(max(0, f.seek(0, 2) - 4096))
                    last = f.read().rstrip().rsplit(b"\n", 1)[-1]
                total += int(json.loads(last)["env_steps"]) if last else 0
            except (OSError, ValueError, KeyError):
                pass
        return total

    # ---- running it ----
    def run(self) -> dict:
        t0 = time.perf_counter()
        self._check_fits_this_machine()
        backend = RayBackend(self.args["address"], envs=sorted({run["env"] for run in self.runs}))

        def gone() -> None:  # a SIGTERM to the process group ended Ray's processes too: the book, then the end
            for names, _ in getattr(self, "inflight", {}).values():
                for name in names:
                    self.status[name] = "interrupted"
            write_whole(self.dir / "grid_summary.json",
                        json.dumps(self._summary(time.perf_counter() - t0), indent=2) + "\n")

        # after Ray's start, which installs a SIGTERM handler of its own (it aborts)
        with sigterm_interrupts(lambda: grid_interrupted_line(self.dir), gone):
            return self._run(backend, t0)

    def _run(self, backend, t0: float) -> dict:
        import ray  # (lazy: see the docstring)

        self.learner_bundle, self.learner_gpus = self._learner_bundle(ray.cluster_resources())
        try:
            self._check_fits(self.learner_bundle, ray.nodes())
            self.write_spec()  # once the grid can start: a refused one leaves nothing behind
        except (ConfigError, OutputError):
            backend.shutdown()
            raise
        self.remote = ray.remote(_run_unit)
        self.inflight: dict = {}  # future -> (names, placement group)
        self.by_name = {Path(r["out"]).name: r for r in self.runs}
        todo = []
        for name, run in self.by_name.items():
            if (Path(run["out"]) / "summary.json").is_file() and _made_by_a_grid(Path(run["out"])):
                self.status[name] = "done before"  # --resume: finished in an earlier invocation
                self.results[name] = {"summary": json.loads((Path(run["out"]) / "summary.json").read_text())}
            else:
                if (Path(run["out"]) / "checkpoint.pt").is_file() and not _resumable(run):
                    print(f"grid: {name} starts again from the start: "
                          f"{replay_backend(run['replay']).cannot_resume(run)}, so its checkpoint cannot be "
                          "continued", file=sys.stderr)
                todo.append(run)
        for unit in packs(todo, self.args["pack_seeds"]):
            self._launch(unit)
        bar = self._bar()
        try:
            while self.inflight:
                done, _ = ray.wait(list(self.inflight), num_returns=1, timeout=1.0)
                for future in done:
                    self._land(future)
                self._update_bar(bar)
        except BaseException as stop:
            if interrupt_behind(stop) is None:  # (or an error the interrupt raised where it landed)
                raise
            gone = backend.cluster_gone()  # a signal to the process group ended Ray's processes too: ask nothing
            for future, (names, pg) in self.inflight.items():
                if not gone:
                    ray.cancel(future, force=True)
                    self._remove(pg)
                for name in names:
                    self.status[name] = "interrupted"
            try:
                self._close(bar, t0)
            except OutputError as e:  # the interrupt is what the user is told about; this a warning beside it
                print(f"warning: {e}", file=sys.stderr)
            finally:
                backend.shutdown()
            raise
        try:
            return self._close(bar, t0)
        finally:
            backend.shutdown()

    def _learner_bundle(self, resources: dict) -> tuple[dict, float]:
        """What each run's learner declares (`--learner-cpus`, `--learner-gpus`; a `learner` resource where
        the cluster names its learner nodes), and its GPUs."""
        gpus = self.args["learner_gpus"]
        if gpus < 0:  # auto: a quarter GPU per learner where the cluster has GPUs
            gpus = 0.25 if resources.get("GPU", 0) > 0 else 0.0
        bundle = {"CPU": self.args["learner_cpus"]}
        if gpus > 0:
            bundle["GPU"] = gpus
        if resources.get("learner", 0) > 0:  # the cluster names its learner nodes (deploy/*.yaml)
            bundle["learner"] = 1
        return bundle, gpus

    def _launch(self, unit: list[dict]) -> None:
        """A run, or a pack of seeds (one learner), as one Ray task inside a placement group of its own (Ray
        queues it until it fits): the learner's bundle and every seed's actors."""
        from ray.util.placement_group import placement_group  # (lazy: see the docstring)
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        names, bundle = [Path(run["out"]).name for run in unit], self.learner_bundle
        # a serial run is one process: its learner's bundle holds the whole run
        bundles = [dict(bundle)] + [{"CPU": run["actor_cpus"]} for run in unit for _ in range(_actor_bundles(run))]
        pg = placement_group(bundles, strategy="PACK", name=f"{self.dir.name}/{'+'.join(names)}")
        options = {"num_cpus": bundle["CPU"], "num_gpus": self.learner_gpus,
                   "resources": {k: v for k, v in bundle.items() if k not in ("CPU", "GPU")},
                   "max_retries": 0, "scheduling_strategy": PlacementGroupSchedulingStrategy(
                       pg, placement_group_bundle_index=0, placement_group_capture_child_tasks=True)}
        self.inflight[self.remote.options(**options).remote(unit)] = (names, pg)
        for name in names:
            self.groups[name] = pg
            self.attempts[name] += 1
            self.status[name] = "running" if self.attempts[name] == 1 else f"retry {self.attempts[name] - 1}"

    def _land(self, future) -> None:
        """A task ended: its runs' outcomes, or its failure. A failed task's runs that had finished keep their
        summaries; the others start again from their checkpoints when worth it (a pack as a whole)."""
        import ray  # (lazy: see the docstring)

        names, pg = self.inflight.pop(future)
        self._remove(pg)
        try:
            outcomes = ray.get(future)
        except Exception as e:  # noqa: BLE001 - every failure is recorded; some are retried
            reason, unfinished = _reason(e), []
            for name in names:
                summary = Path(self.by_name[name]["out"]) / "summary.json"
                if summary.is_file():  # a seed of a pack that ended before the failure
                    self.results[name] = {"summary": json.loads(summary.read_text())}
                    self.status[name] = "done"
                else:
                    self.results[name] = {"error": reason}
                    unfinished.append(name)
            if not unfinished:
                return
            label = " + ".join(unfinished)
            if _retryable(e) and self.attempts[unfinished[0]] <= self.args["retries"]:
                where = ("from its checkpoint" if _resumable(self.by_name[unfinished[0]])
                         else "from the start (its replay died with it)")
                print(f"grid: {label} failed ({reason}); starting it again {where}", file=sys.stderr)
                self._launch([self.by_name[name] for name in unfinished])
                return
            for name in unfinished:
                self.status[name] = "failed"
            print(f"grid: {label} failed: {reason}", file=sys.stderr)
            return
        for name, outcome in zip(names, outcomes, strict=True):
            self.results[name] = outcome
            self.status[name] = "done" if "summary" in outcome else "failed"
            if "error" in outcome:
                print(f"grid: {name} failed: {outcome['error']}", file=sys.stderr)

    @staticmethod
    def _remove(pg) -> None:
        from ray.util.placement_group import remove_placement_group  # (lazy: see the docstring)

        remove_placement_group(pg)

    def _check_fits(self, learner_bundle: dict, nodes: list[dict]) -> None:
        """A run whose placement group no node set of this cluster can hold would wait forever: refuse it
        (a cluster joined with --address or RAY_ADDRESS may grow: then only warn)."""
        problem = self._fit_problem(learner_bundle, [n["Resources"] for n in nodes if n.get("Alive")])
        if problem and not (self.args["address"] or os.environ.get("RAY_ADDRESS")):  # (RayBackend joins either)
            raise ConfigError("actors", problem)
        if problem:
            print(f"grid: warning: {problem}; runs wait until the cluster grows", file=sys.stderr)

    def _check_fits_this_machine(self) -> None:
        """A grid that will start a Ray cluster of this machine (no --address or RAY_ADDRESS to join, none started
        in this process) is refused before the cluster starts (its start is the slow part) when a run's CPUs
        could never fit the machine's, which RayBackend gives Ray; what else a run declares (GPUs) is checked
        once the cluster is there."""
        cpus = cluster_to_start(self.args["address"])
        if cpus is None:
            return
        problem = self._fit_problem({"CPU": self.args["learner_cpus"]}, [{"CPU": float(cpus)}])
        if problem:
            raise ConfigError("actors", problem)

    def _fit_problem(self, learner_bundle: dict, alive: list[dict]) -> str | None:
        """What keeps the grid's largest run (or pack) from ever fitting these nodes' resources, or None."""
        unit = max(packs(self.runs, self.args["pack_seeds"]),
                   key=lambda u: sum(_actor_bundles(r) * r["actor_cpus"] for r in u))
        run = unit[0]
        need = learner_bundle["CPU"] + sum(_actor_bundles(r) * r["actor_cpus"] for r in unit)
        have = sum(n.get("CPU", 0) for n in alive)
        learner_fits = any(all(n.get(k, 0) >= v for k, v in learner_bundle.items()) for n in alive)
        problem = None
        if not learner_fits:
            largest = max(alive, key=lambda n: n.get("CPU", 0)) if alive else {}
            problem = (f"no node has the learner's {learner_bundle} (--learner-cpus, --learner-gpus); the "
                       f"largest has {({k: largest.get(k, 0) for k in learner_bundle})}")
        elif need > have:
            seeds = f"{len(unit)} seeds × " if len(unit) > 1 else ""
            what = "a pack (--pack-seeds)" if len(unit) > 1 else "a run"
            problem = (f"{what} needs {need:g} CPUs (--learner-cpus {learner_bundle['CPU']:g} + {seeds}--actors "
                       f"{run['actors']} × --actor-cpus {run['actor_cpus']:g}) but the cluster has {have:g}")
        return problem

    def _bar(self):
        if not self.args["progress"]:
            return None

        total = sum(r["total_steps"] for r in self.runs)
        return tqdm(total=total, unit="step", unit_scale=True, dynamic_ncols=True, file=sys.stderr,
                    desc=f"grid {self.dir.name}", mininterval=1.0)

    def _update_bar(self, bar) -> None:
        if bar is None:
            return
        from ray.util import placement_group_table  # (lazy: see the docstring)

        bar.n = self._progress()
        counts = {s: list(self.status.values()).count(s) for s in ("done", "done before", "failed")}
        active = [n for n, s in self.status.items() if s == "running" or s.startswith("retry")]
        # a run whose placement group is not created yet waits for room on the cluster
        placed = sum(placement_group_table(self.groups[n]).get("state") == "CREATED" for n in active)
        bar.set_postfix_str(f"{counts['done'] + counts['done before']}/{len(self.status)} done, {placed} running, "
                            f"{len(active) - placed} queued, {counts['failed']} failed", refresh=False)
        bar.refresh()

    def _close(self, bar, t0: float) -> dict:
        self._update_bar(bar)
        if bar is not None:
            bar.close()
        summary = self._summary(time.perf_counter() - t0)
        write_whole(self.dir / "grid_summary.json", json.dumps(summary, indent=2) + "\n")
        return summary


def grid_interrupted_line(grid_dir: Path) -> str:
    """What an interrupted grid says on stderr."""
    return f"python -m learner.main: grid interrupted; continue it with --resume {grid_dir}"


def _actor_bundles(run: dict) -> int:
    """Placement bundles of a run's actors: one each on Ray; none for a serial run (they share its process)."""
    return 0 if run["runtime"] == "serial" else run["actors"]


def _reason(e: BaseException) -> str:
    cause = getattr(e, "cause", None) or e
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[-1] if text else ''}".strip()


def _retryable(e: BaseException) -> bool:
    """A process that died, a lost node, a Redis outage: worth another start. A NaN loss, a configuration
    mistake or a damaged replay would only happen again."""
    cause = getattr(e, "cause", None) or e
    return not isinstance(cause, (NonFiniteLoss, ConfigError, ReplayDamaged))


def _check_writable(grid_dir: Path) -> None:
    """A grid directory that could be made and written (nothing is made yet: a refused grid leaves nothing)."""
    try:
        if grid_dir.exists() and not grid_dir.is_dir():
            raise ConfigError("out", f"{grid_dir} exists and is not a directory")
        there = next(p for p in (grid_dir, *grid_dir.parents) if p.exists())
        if not there.is_dir():
            raise ConfigError("out", f"cannot make the grid directory {grid_dir}: {there} is not a directory")
        if not os.access(there, os.W_OK | os.X_OK):
            raise ConfigError("out", f"cannot make the grid directory {grid_dir}: {there} is not writable")
    except OSError as e:  # a directory on the way that cannot be searched
        raise ConfigError("out", f"cannot make the grid directory {grid_dir} ({e.strerror or e})") from None


def grid_from_args(args: dict, named: frozenset[str] | None = None, sections: tuple[Section, ...] = ()) -> Grid:
    """A new grid (`--out` is its directory, default runs/grid-<time>) or, with `--resume GRID_DIR`, the
    one written there (a flag given again may change only how it runs: GRID_RESUME_MAY_CHANGE). `named`: the
    flags the command line gave, so that β's thread, which a grid of serial runs turns off, stays on where
    `--beta-thread` was given (None: not known, and it stays as `args` has it); `sections`: `--config`'s
    (`configuration.cli.parse_command`)."""
    parser = build_parser()
    # what the command line gives: values off their default, and (where known) any flag it names, a default's
    # value too (`--beta-thread true` on a resume of a grid that saved false is a change, never a no-op)
    given = {k: v for k, v in args.items() if k not in ("resume", "out")
             and (v != parser.get_default(k) or (named is not None and k in named))}
    resume = args.get("resume") or ""
    if resume:
        path = Path(resume) / GRID_FILE
        try:
            saved = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError("resume", f"no {GRID_FILE} in {resume!r} (a single run's directory is resumed "
                                        "without --seeds or lists)") from None
        except (OSError, ValueError) as e:
            raise ConfigError("resume", f"{path} is not a grid file this program can read ({e})") from None
        if saved.get("format") == 1:  # --algo and --env lists were comma-separated text
            for key in ("algo", "env"):
                if "," in saved["args"][key]:
                    saved["args"][key] = [v.strip() for v in saved["args"][key].split(",") if v.strip()]
        elif saved.get("format") != GRID_FORMAT:
            raise ConfigError("resume", f"{path} has grid format {saved.get('format')}; this program reads "
                                        f"{GRID_FORMAT} and 1")
        defaults = vars(parser.parse_args([]))  # fields added since the grid was written keep their default
        # (or, for what runs made before it did, LEGACY: its runs keep what they ran with)
        saved["args"] = {**defaults, **LEGACY, **{k: v for k, v in saved["args"].items() if k in defaults}}
        for key, value in given.items():
            if key not in GRID_RESUME_MAY_CHANGE and saved["args"].get(key) != value:
                raise ConfigError(key, f"{value!r} differs from the grid being resumed "
                                       f"({saved['args'].get(key)!r}); a resumed grid keeps its configuration")
        merged = {**saved["args"], **{k: v for k, v in given.items() if k in GRID_RESUME_MAY_CHANGE}}
        try:
            parse_seeds(merged["seeds"]) if merged.get("seeds") else None
        except ConfigError:  # a grid written before a seed named twice was refused: it ran that seed once
            merged["seeds"] = ",".join(map(str, parse_seeds(merged["seeds"], repeats=True)))
        # grid.json keeps no passwords
        merged["replay"] = restore_password(merged["replay"], "grid", merged.get("replay_password_file", ""))
        return Grid(merged, Path(resume).resolve(), tuple(Section.from_json(d) for d in saved.get("sections", [])))
    grid_dir = Path(args["out"] or f"runs/grid-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    _check_writable(grid_dir)
    if (grid_dir / GRID_FILE).exists():
        raise ConfigError("out", f"{grid_dir} already holds a grid; continue it with --resume {grid_dir}")

    if any((grid_dir / name).exists() for name in RUN_FILES):
        raise ConfigError("out", f"{grid_dir} holds a run: give the grid a directory of its own")
    if isinstance(args["runtime"], list) and "auto" in args["runtime"]:
        raise ConfigError("runtime", f"{flag_text(args['runtime'])}: auto in a list would name a column for what "
                                     "it settles to; list ray and serial")
    if args["runtime"] == "auto":  # settled here, into grid.json: a resume runs what the grid ran
        runtime = settled_runtime("auto", in_grid=True,
                                  joins_cluster=bool(args["address"] or os.environ.get("RAY_ADDRESS")))
        if runtime == "serial" and named is not None and "beta_thread" not in named and args["learner_cpus"] < 2:
            # one serial run a core: β's second thread would have no core of its own (the same math)
            args = {**args, "beta_thread": False}
        args = {**args, "runtime": runtime}
    if named is not None and "learning_starts" not in named and not any("learning_starts" in s.values
                                                                         for s in sections):
        for run in expand(args, grid_dir, sections):  # a run of it that would make no update: refused, as one is
            error = no_update_error(resolve(Config(**run))[0])
            if error is not None:
                raise error
    grid = Grid(args, grid_dir, sections)
    taken = [Path(r["out"]) for r in grid.runs if any((Path(r["out"]) / n).exists() for n in RUN_FILES)]
    if taken:
        raise ConfigError("out", f"{taken[0]} already holds a run, and the new grid would write there: give the "
                                 "grid another --out")
    return grid


def describe_grid(summary: dict, grid_dir: Path) -> str:
    """A grid's table for a person: per environment and column, the seeds done and the final scores."""
    groups: dict[tuple, list[dict]] = {}
    for row in summary["runs"]:
        groups.setdefault((row["env"], row["algo"], row["variant"]), []).append(row)
    lines = [f"grid {summary['grid']}: {summary['done']} of {summary['total']} runs done, {summary['failed']} "
             f"failed, {summary['wall_seconds']:.0f} s", "",
             f"{'environment':<22} {'column':<44} {'done':>6} {'final score: mean [min, max]':>30} {'steps/s':>8}"]
    for (env, algo, variant), rows in groups.items():
        key = metric(env)
        scores = [r["final_eval"][key] for r in rows if r.get("final_eval", {}).get(key) is not None]
        rates = [r["env_steps_per_s"] for r in rows if "env_steps_per_s" in r]
        score = f"{np.mean(scores):.2f} [{min(scores):.2f}, {max(scores):.2f}]" if scores else "—"
        lines.append(f"{env:<22} {column_label((algo, variant)):<44} {len(scores):>3}/{len(rows):<2} {score:>30} "
                     f"{np.mean(rates) if rates else 0:>8,.0f}")
    failed = [f"  {r['name']}: {r.get('error', r['status'])}" for r in summary["runs"] if r["status"] == "failed"]
    if failed:
        lines += ["", "failed:", *failed]
    lines += ["", f"outputs: {grid_dir}/ (grid_summary.json; a directory per run)",
              f"report:  python -m learner.report {grid_dir}"]
    return "\n".join(lines)
