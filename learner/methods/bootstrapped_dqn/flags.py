"""Bootstrapped DQN's flags (spec §7)."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.flags import flag, positive


@dataclass(frozen=True)
class Flags:
    boot_heads: int = flag(10, "Bootstrapped DQN: heads K")
    boot_epsilon: bool = flag(True, "Bootstrapped DQN: ε-greedy (DQN's schedule) on the episode's head; false: "
                                    "greedy on it")

    def check(self) -> None:
        positive(self, "boot_heads")
