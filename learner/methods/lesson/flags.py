"""LESSON's flags (spec §7); it also reads RND's --rnd-scale."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.flags import flag, non_negative, positive


@dataclass(frozen=True)
class Flags:
    lesson_tau: float = flag(0.02, "LESSON: softmax temperature of the option choice")
    lesson_alpha: float = flag(0.0, "LESSON: weight of the intrinsic reward in the option values' reward")

    def check(self) -> None:
        positive(self, "lesson_tau")
        non_negative(self, "lesson_alpha")
