"""εz-greedy's flag (spec §7)."""

from __future__ import annotations

from dataclasses import dataclass

from learner.methods.flags import FlagError, flag


@dataclass(frozen=True)
class Flags:
    ez_mu: float = flag(2.0, "εz-greedy: exponent μ of the Zeta duration (> 1)")

    def check(self) -> None:
        if not self.ez_mu > 1.0:
            raise FlagError("ez_mu", f"must be > 1 (a Zeta distribution), got {self.ez_mu}")
