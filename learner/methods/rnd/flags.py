"""RND's flag (spec §7); LESSON reads it too, for its intrinsic Q."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.flags import choice, flag, non_negative

RND_BONUSES = ("std", "centred")  # how the prediction error becomes the bonus (`learning.intrinsic_reward`)


@dataclass(frozen=True)
class Flags:
    rnd_scale: float = flag(10.0, "RND: intrinsic reward scale in Q's target; LESSON: in the intrinsic Q's",
                            also=("lesson",))
    rnd_bonus: str = flag("std", "RND's bonus from its prediction error e: std (e over the running std of the "
                                 "errors, spec §7) or centred ((e − running mean) / running std, as LESSON's code "
                                 "has it); LESSON's too", also=("lesson",))

    def check(self) -> None:
        non_negative(self, "rnd_scale")
        choice(self, "rnd_bonus", RND_BONUSES)
