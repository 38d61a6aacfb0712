"""A grid's runs: the `Grid`, which checks and prepares every run before anything starts, keeps the grid's
book (`GRID_DIR/grid.json`, `grid_summary.json`, one progress line for all runs) and runs the runs, each
run or pack as one Ray task inside a placement group of its own (`beta_dqn.launcher.grid_task`), a crashed one started
again from its checkpoint (`--retries`) and, on `--resume`, only those without a `summary.json`.

Ray is imported where a grid runs, not at the top: Ray costs 1.3 s and 70 MB to import (measured with
`python -X importtime`), which a grid's report and a mistyped flag need not pay.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from beta_dqn.configuration.cli import GRID_FILE
from beta_dqn.configuration.compat import GRID_FORMAT
from beta_dqn.configuration.config_file import Section
from beta_dqn.configuration.flags import Config, ConfigError, OutputError, fit_warning, public, replay_backend, resolve
from beta_dqn.driver.cluster import cluster_to_start
from beta_dqn.driver.outputs import NonFiniteLoss, write_whole
from beta_dqn.driver.preflight import preflight
from beta_dqn.driver.runtime import RayBackend
from beta_dqn.driver.signals import interrupt_behind, sigterm_interrupts
from beta_dqn.launcher.grid_plan import expand, packs
from beta_dqn.launcher.grid_task import _made_by_a_grid, _reason, _resumable, _run_unit
from replay_service.contract import BackendError
from replay_service.redis_shard import ReplayDamaged


class Grid:
    def __init__(self, args: dict, grid_dir: Path, sections: tuple[Section, ...] = ()):
        self.args, self.dir, self.sections = args, grid_dir, sections
        if args.get("pack_seeds", 1) < 1:
            raise ConfigError("pack_seeds", f"must be >= 1, got {args['pack_seeds']}")
        self.runs = expand(args, grid_dir, sections)

        warnings, asked = [], set()
        for run in self.runs:  # unknown environments, unreachable Redis: one line before anything starts
            cfg = resolve(Config.of(**run))[0]
            needs = (cfg.device, cfg.replay, cfg.replays)
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
                run["replay"] = replay_backend(run["replay"]).fill_secrets(run["replay"], run)
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
        backend = RayBackend(self.args["address"], envs=sorted({run["env"] for run in self.runs}),
                                 wrappers=sorted({run.get("wrappers", "") for run in self.runs}))

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


def _retryable(e: BaseException) -> bool:
    """A process that died, a lost node, a Redis outage: worth another start. A NaN loss, a configuration
    mistake or a damaged replay would only happen again."""
    cause = getattr(e, "cause", None) or e
    return not isinstance(cause, (NonFiniteLoss, ConfigError, ReplayDamaged))
