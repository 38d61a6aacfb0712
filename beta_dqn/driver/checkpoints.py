"""A run's checkpoints (`Checkpointer`, one part of `beta_dqn.driver.run.Run`, given what it reads and writes): one
written when the run asks (nothing in flight, the evaluations so far recorded, the bandit's reports settled: the
run's to see to), the replay's files first; the stop at a non-finite loss or network (its state in
checkpoint-nonfinite.pt); a checkpoint read back into the learner, the arm source and the replay on a resume; and
best.pt, the networks of the best evaluation so far (`keep_best`), which checkpoint.pt carries too, so a resume
puts back the best of the evaluations it keeps.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from beta_dqn.configuration.compat import CHECKPOINT_FORMAT
from beta_dqn.configuration.flags import ConfigError, OutputError
from beta_dqn.driver.outputs import NonFiniteLoss
from beta_dqn.driver.state import BEST, BEST_STATE, RunDirectory, RunState, write_checkpoint
from beta_dqn.files import Written
from learner.methods.numpy_net import unflatten
from replay_service.client import ReplaySampler


class Checkpointer:
    """Writes and reads back a run's checkpoints. `config`: the run's configuration as written (`public`);
    `arm(method, *args)` calls the run's arm source (`Run._arm`); `directory` records each file before it is
    written."""

    def __init__(self, out: Path, config: dict, learner: Any, replay: ReplaySampler, state: RunState,
                 arm: Callable[..., Any], directory: RunDirectory, metric: str):
        self.out, self.config, self.learner, self.replay = out, config, learner, replay
        self.state, self.arm, self.directory = state, arm, directory
        self.metric = metric  # the evaluation's score that `keep_best` compares: success_rate or return_mean
        self.best: dict | None = None  # the best evaluation so far: env_steps, metric, score, networks (tensors)

    def keep_best(self, result: dict, weights: dict) -> bool:
        """best.pt, where the evaluation `result` (of the acting networks `weights`, `Learner.weights`' buffer)
        scores above every earlier one of the run (a tie keeps the earlier; a score that is not a number never
        counts). Whether it did."""
        score = result.get(self.metric)
        if not isinstance(score, (int, float)) or not math.isfinite(score):
            return False
        if self.best is not None and score <= self.best["score"]:
            return False
        if not np.isfinite(weights["flat"]).all():  # (`Learner.weights`: one buffer; a GPU checks the loss only every
            return False  # --publish-every updates, and non-finite weights never count)
        networks = {name: {key: torch.tensor(value) for key, value in params.items()}
                    for name, params in unflatten(weights).items()}
        self.best = {"env_steps": int(result["env_steps"]), "metric": self.metric, "score": float(score),
                     "networks": networks}
        self._write_best()
        return True

    def _write_best(self) -> None:
        self.directory.record(BEST)
        assert self.best is not None
        write_checkpoint(self.out, {"format": CHECKPOINT_FORMAT, "config": self.config,
                                    "counters": {"env_steps": self.best["env_steps"]}, BEST_STATE: self.best}, BEST)

    def restore(self, ckpt: dict) -> None:
        """The learner, the arm source and the replay as the checkpoint left them (the counters are `state`).

        Episodes that were running when the checkpoint was written are not continued (their transitions
        are in the replay): actors start new episodes, from fresh rng streams (the resume generation is
        part of their seed), and the bandit forgets the arms those episodes held (`pending`)."""
        try:
            self.learner.load_state_dict(ckpt["learner"])
            arm_state = dict(ckpt["arm_source"])
            if "pending" in arm_state:
                arm_state["pending"] = [0] * len(arm_state["pending"])
            self.arm("load_state_dict", arm_state)
        except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as e:  # shapes, keys, another method's
            reason = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
            raise ConfigError("resume", f"{self.out / 'checkpoint.pt'} does not fit this run's "
                                        f"{self.config['algo']} networks or arm source "
                                        f"({type(e).__name__}: {reason})") from None
        try:
            self.replay.load_state_dict(ckpt, self.out)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # a snapshot file damaged or gone
            e = getattr(e, "cause", None) or e  # a shard's own error, where a Ray actor raised it (RayTaskError)
            raise ConfigError("resume", f"the replay snapshot of {self.out / 'checkpoint.pt'} cannot be read "
                                        f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); the run "
                                        "cannot continue exactly without it") from None
        self.best = ckpt.get(BEST_STATE)  # the best of the evaluations the checkpoint keeps (`settle_best`)

    def settle_best(self) -> None:
        """A resumed run, as it starts: best.pt as the checkpoint left it (one written after it is of evaluations
        this resume takes again, so it goes; a checkpoint from before best.pt existed keeps none)."""
        if self.best is not None:
            self._write_best()
        elif BEST in Written.read(self.out) and (self.out / BEST).is_file():
            (self.out / BEST).unlink()

    def save(self, wall: float) -> None:
        """Everything needed to continue (`wall`: the run's seconds so far): the replay's files first (memory
        replay; Redis keeps its own data), then checkpoint.pt naming them, written atomically."""
        learner = self.learner
        if not all(bool(torch.isfinite(p).all()) for p in learner.nets.parameters()):  # a GPU checks loss sparsely
            self.stop_nonfinite("the network parameters became non-finite")
        try:
            # recorded before they exist: a kill mid-write
            self.directory.record(*self.replay.snapshot_files(self.state.env_steps))
            replay = self.replay.state_dict(self.out, self.state.env_steps)  # leaves no file the record does not name
        except OSError as e:  # the snapshot's own files; the last checkpoint names older ones, still there
            raise OutputError.of(self.out / "replay", e) from None
        self.directory.record("checkpoint.pt")
        write_checkpoint(self.out, {"format": CHECKPOINT_FORMAT, "config": self.config,
                                    "learner": learner.state_dict(),
                                    **self.state.to_checkpoint(learner.updates, wall),
                                    "arm_source": self.arm("state_dict"), **replay,
                                    **({BEST_STATE: self.best} if self.best is not None else {})})
        self.directory.forget(*self.replay.checkpoint_written(self.out, replay))

    def check_finite(self, loss: torch.Tensor, publish_every: int) -> None:
        """Stop at a NaN or infinite loss (every update on CPU; on a GPU every `publish_every` updates, to
        spare a device sync per update)."""
        if self.learner.device.type != "cpu" and self.learner.updates % publish_every:
            return
        value = float(loss)
        if not math.isfinite(value):
            self.stop_nonfinite(f"the loss became {value}")

    def stop_nonfinite(self, what: str) -> None:
        """checkpoint.pt keeps the last good state; the failing one goes to checkpoint-nonfinite.pt."""
        learner = self.learner
        self.directory.record("checkpoint-nonfinite.pt")
        write_checkpoint(self.out, {"learner": learner.state_dict(), "config": self.config},
                         "checkpoint-nonfinite.pt")
        last = "checkpoint.pt is the last good one" if (self.out / "checkpoint.pt").exists() else "no checkpoint yet"
        raise NonFiniteLoss(f"{what} at update {learner.updates} (env step {self.state.env_steps}); "
                            f"the run stopped: {last}, the failing state is in checkpoint-nonfinite.pt")
