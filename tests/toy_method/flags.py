"""The toy method's flag."""

from dataclasses import dataclass

from learner.methods.flags import FlagError, flag


@dataclass(frozen=True)
class Flags:
    toy_period: int = flag(2, "toy: the period of the per-step phase it stores (2 to 100)")

    def check(self) -> None:
        if not 2 <= self.toy_period <= 100:
            raise FlagError("toy_period", f"must be in [2, 100], got {self.toy_period}")
