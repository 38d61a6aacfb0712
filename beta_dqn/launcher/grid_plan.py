"""A grid's plan: its runs, one per combination of the axes (the flags given as lists) and the seeds, each
with its name and run directory (`expand`), and the packs of seeds that share one learner (`packs`)."""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

from beta_dqn.configuration.config_file import Section, for_run
from beta_dqn.configuration.flags import (
    FIELDS,
    MAX_GRID_RUNS,
    PER_SEED,
    Config,
    ConfigError,
    cli_name,
    flag_text,
    parse_seeds,
    reads,
    run_name,
    settled_runtime,
)

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
    sizes = [*((name, len(values)) for name, values in axes), ("seeds", len(seeds))]
    total = math.prod(n for _, n in sizes)
    if total > MAX_GRID_RUNS:  # before planning: a plan costs time and memory a run (about 2 KB)
        product = " × ".join(f"{n:,} {cli_name(name)[2:]}" for name, n in sizes)
        raise ConfigError(max(sizes, key=lambda s: s[1])[0], f"the grid is {product} = {total:,} combinations; a "
                          f"grid or search holds at most {MAX_GRID_RUNS:,}: split it into grids of their own")
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
               "variant": ",".join(f"{cli_name(name)[2:]}={flag_text(value)}" for name, value in chosen.items()
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
            Config.of(**run)  # validates; environments are checked by `resolve` below
            runs[name] = run
    for name, _ in axes:
        if not any(reads(r["algo"], name, r) for r in runs.values()):
            raise ConfigError(name, f"is a list, but no method of the grid reads it (read by "
                                    f"{', '.join(FIELDS[name].algos)})")
    return list(runs.values())


def packs(runs: list[dict], size: int) -> list[list[dict]]:
    """The runs in packs of up to `size` seeds of one configuration (everything but the seed and the names
    alike), in the grid's order; a pack of one is a solo run."""
    same: dict[str, list[dict]] = {}
    for run in runs:
        key = json.dumps({k: v for k, v in run.items() if k not in PER_SEED}, sort_keys=True, default=str)
        same.setdefault(key, []).append(run)
    return [group[i:i + size] for group in same.values() for i in range(0, len(group), size)]
