"""The run's checkpoints (`RunCheckpoints`, a part of `beta_dqn.driver.run.Run`): one written when nothing is in flight
at
a checkpoint step (the evaluations started so far recorded, the bandit's reports settled, the replay's files
first), the stop at a non-finite loss or network (its state in checkpoint-nonfinite.pt), and a checkpoint read
back into the learner, the arm source and the replay on a resume.
"""

from __future__ import annotations

import math
import time
import zipfile

import torch

from beta_dqn.configuration.flags import ConfigError, OutputError, public
from beta_dqn.driver.outputs import NonFiniteLoss
from beta_dqn.driver.state import CHECKPOINT_FORMAT, write_checkpoint


class RunCheckpoints:
    """`Run`'s checkpoint methods: they read and write the run's own attributes (`Run.__init__` sets them)."""

    def _restore(self, ckpt: dict) -> None:
        """The learner, the arm source and the replay as the checkpoint left them (the counters are `state`).

        Episodes that were running when the checkpoint was written are not continued (their transitions
        are in the replay): actors start new episodes, from fresh rng streams (the resume generation is
        part of their seed), and the bandit forgets the arms those episodes held (`pending`)."""
        try:
            self.learner.load_state_dict(ckpt["learner"])
            arm_state = dict(ckpt["arm_source"])
            if "pending" in arm_state:
                arm_state["pending"] = [0] * len(arm_state["pending"])
            self._arm("load_state_dict", arm_state)
        except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as e:  # shapes, keys, another method's
            reason = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
            raise ConfigError("resume", f"{self.out / 'checkpoint.pt'} does not fit this run's {self.cfg.algo} "
                                        f"networks or arm source ({type(e).__name__}: {reason})") from None
        try:
            self.replay.load_state_dict(ckpt, self.out)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:  # a snapshot file damaged or gone
            e = getattr(e, "cause", None) or e  # a shard's own error, where a Ray actor raised it (RayTaskError)
            raise ConfigError("resume", f"the replay snapshot of {self.out / 'checkpoint.pt'} cannot be read "
                                        f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); the run "
                                        "cannot continue exactly without it") from None

    def _checkpoint(self) -> None:
        self._record_evals(wait=True)  # evaluations started so far belong to this checkpoint
        self._settle_reports()
        self._save_checkpoint()
        self.next_checkpoint += self.cfg.checkpoint_every

    def _wall(self) -> float:
        """The run's seconds so far: this sitting's, and earlier sittings' up to the checkpoint it resumed from
        (the steps after that checkpoint were taken again in this one)."""
        return self.state.wall_before + time.perf_counter() - self.t0

    def _settle_reports(self) -> None:
        """Every episode the run counted is in the bandit before its state is saved: the actors (idle now)
        wait for the answers to the reports they sent. (Not on the way out of a failed run: an actor that
        died with a report on its way cannot be waited for, and its report may be lost.)"""
        if self.acting.central and self.backend.concurrent:
            self.backend.get([self.backend.call(a, "settle") for a in self.parts["actors"]])

    def _save_checkpoint(self) -> None:
        """Everything needed to continue: the replay's files first (memory replay; Redis keeps its own data),
        then checkpoint.pt naming them, written atomically."""
        learner = self.learner
        if not all(bool(torch.isfinite(p).all()) for p in learner.nets.parameters()):  # a GPU checks loss sparsely
            self._stop_nonfinite("the network parameters became non-finite")
        try:
            self.written.add(*self.replay.snapshot_files(self.state.env_steps))  # before they exist: a kill mid-write
            replay = self.replay.state_dict(self.out, self.state.env_steps)  # leaves no file the record does not name
        except OSError as e:  # the snapshot's own files; the last checkpoint names older ones, still there
            raise OutputError.of(self.out / "replay", e) from None
        self.written.add("checkpoint.pt")
        write_checkpoint(self.out, {"format": CHECKPOINT_FORMAT, "config": public(self.cfg),
                                    "learner": learner.state_dict(),
                                    **self.state.to_checkpoint(learner.updates, self._wall()),
                                    "arm_source": self._arm("state_dict"), **replay})
        self.written.forget(*self.replay.checkpoint_written(self.out, replay))

    def _check_finite(self, loss: torch.Tensor) -> None:
        """Stop at a NaN or infinite loss (every update on CPU; on a GPU every `publish_every` updates, to
        spare a device sync per update)."""
        if self.learner.device.type != "cpu" and self.learner.updates % self.cfg.publish_every:
            return
        value = float(loss)
        if not math.isfinite(value):
            self._stop_nonfinite(f"the loss became {value}")

    def _stop_nonfinite(self, what: str) -> None:
        """checkpoint.pt keeps the last good state; the failing one goes to checkpoint-nonfinite.pt."""
        learner = self.learner
        self.written.add("checkpoint-nonfinite.pt")
        write_checkpoint(self.out, {"learner": learner.state_dict(), "config": public(self.cfg)},
                         "checkpoint-nonfinite.pt")
        last = "checkpoint.pt is the last good one" if (self.out / "checkpoint.pt").exists() else "no checkpoint yet"
        raise NonFiniteLoss(f"{what} at update {learner.updates} (env step {self.state.env_steps}); "
                            f"the run stopped: {last}, the failing state is in checkpoint-nonfinite.pt")
