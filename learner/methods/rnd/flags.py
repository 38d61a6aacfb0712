"""RND's flag (spec §7); LESSON reads it too, for its intrinsic Q."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.flags import flag, non_negative


@dataclass(frozen=True)
class Flags:
    rnd_scale: float = flag(10.0, "RND: intrinsic reward scale in Q's target; LESSON: in the intrinsic Q's",
                            also=("lesson",))

    def check(self) -> None:
        non_negative(self, "rnd_scale")
