"""LESSON's acting (Kim et al. 2023; spec §7): an option (random, repeat, intrinsic greedy, task greedy) runs
until the option network's termination ends it, then a new one is drawn from Q_Ω's softmax
(`methods.lesson.options.lesson_act`). Per episode it keeps the running option and its repeated action; every
transition is stored with its option (the option values' target needs it)."""

from __future__ import annotations

import numpy as np

from methods.contracts import BaseActing, Episode
from methods.lesson.options import lesson_act


class Lesson(BaseActing):
    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        action, ep.memory = lesson_act(values["q"], values["q_int"], values["option_q"], values["termination"],
                                       rng, self.cfg.lesson_tau, ep.memory)
        return action

    def option(self, ep: Episode) -> int:
        return 0 if ep.memory is None or ep.arm is None else ep.memory[0]
