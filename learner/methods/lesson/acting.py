"""LESSON's acting (Kim et al. 2023; spec §7): an option (random, repeat, intrinsic greedy, task greedy) runs
until the option network's termination ends it, then a new one is drawn from Q_Ω's softmax
(`learner.methods.lesson.options.lesson_act`). Per episode it keeps the running option and its repeated action; every
transition is stored with its option (the option values' target needs it)."""

from __future__ import annotations

import numpy as np

from learner.methods.contracts import BaseActing, Episode
from learner.methods.lesson.options import LESSON_OPTIONS, lesson_act
from learner.methods.numpy_net import NumpyNet, acting_values
from replay_service.schema import Field


class Lesson(BaseActing):
    extras = (Field("option", "int8", 0, len(LESSON_OPTIONS) - 1),)  # the option each step was taken under
    def outputs(self, nets: dict[str, NumpyNet], obs: np.ndarray,
                arms: list[int | None] | None = None) -> dict[str, np.ndarray]:
        """The option network's one torso, two heads: Q_Ω(s,·) and the termination probabilities β_ω(s)."""
        out = acting_values(nets, obs)
        option = out.pop("option")
        half = option.shape[-1] // 2
        out["option_q"], out["termination"] = option[..., :half], 0.5 * (1.0 + np.tanh(0.5 * option[..., half:]))
        return out

    def act(self, ep: Episode, obs: np.ndarray, values: dict[str, np.ndarray], step: int,
            rng: np.random.Generator) -> int:
        action, ep.memory = lesson_act(values["q"], values["q_int"], values["option_q"], values["termination"],
                                       rng, self.cfg.flags.lesson_tau, ep.memory)
        return action

    def step_extras(self, ep: Episode) -> tuple[int]:
        return (0 if ep.memory is None or ep.arm is None else ep.memory[0],)
