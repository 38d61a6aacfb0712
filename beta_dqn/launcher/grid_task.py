"""What one Ray task of a grid does on the node it runs on: one run, or the seeds of a pack, each continued
from its checkpoint where it has one (`_run_unit`); what it asks of a run directory there (whether a grid made
it, whether its checkpoint can be continued); and the one line a run's failure reads as (`_reason`).

Ray is imported inside the task, and the training side (torch) where a run is made, not at the top: Ray costs
1.3 s and 70 MB to import (measured with `python -X importtime`) and torch seconds, which a grid's report and a
mistyped flag need not pay.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from beta_dqn.configuration.flags import Config, ConfigError, replay_backend, resolve
from beta_dqn.driver.outputs import NonFiniteLoss
from replay_service.backends import masked


def _prepare(args: dict):
    """A run's configuration, and its checkpoint when its directory has one to continue (on the node it runs
    on: a restart after a crash, or a resumed grid)."""
    out = Path(args["out"])
    if (out / "checkpoint.pt").is_file() and not _made_by_a_grid(out):
        raise ConfigError("out", f"{out} holds a run that is not this grid's: give the grid another --out")
    if (out / "checkpoint.pt").is_file() and _resumable(args):
        from beta_dqn.driver.resume import resume_config  # (torch: imported where a run is made, see the docstring)

        # the grid's Redis URLs again: a password given inline was not saved with the run
        again = ["--replay", args["replay"]] if masked(args["replay"]) != args["replay"] else []
        config, ckpt = resume_config(["--resume", args["out"], "--progress", "false", *again])
    else:  # an earlier attempt of this grid's run that died before its first checkpoint is started over
        config, ckpt = Config.of(**{**args, "overwrite": args["overwrite"] or _made_by_a_grid(out)}), None
    cfg, spec = resolve(config)
    return cfg, spec, ckpt


def _run_unit(runs: list[dict]) -> list[dict]:
    """A Ray task: one run, or the seeds of a pack (`beta_dqn.driver.pack`), each continued from its checkpoint where it
    has one. Each run's outcome, in order: {"summary": ...} (with where it ran), or {"error": ...} for a packed
    seed whose loss diverged.

    A seed that finished in an earlier attempt of its pack is not run again. A pack's seeds are updated in
    lockstep, so they continue together only from checkpoints at one update count (those of one moment
    always are); seeds whose checkpoints differ (the pack was stopped between two seeds' checkpoints)
    continue in one pack per update count, one after the other. When one seed's loss diverges the pack
    cannot go on: every seed of it that has not finished continues alone from its checkpoint, as it would
    have run solo (the diverging seed stops again or not, on its own)."""
    import ray  # (lazy: see the docstring)

    from beta_dqn.driver.pack import train_pack
    from beta_dqn.driver.run import train

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


def _reason(e: BaseException) -> str:
    cause = getattr(e, "cause", None) or e
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[-1] if text else ''}".strip()
