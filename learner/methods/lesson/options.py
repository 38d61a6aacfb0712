"""LESSON's options (Kim et al. 2023; spec §7) at one state: the option choice and one step of the running
option. Numpy only: the actors run them; the learning module reads the constants."""

from __future__ import annotations

import numpy as np

from learner.methods.exploration import argmax_random_tie

LESSON_OPTIONS = ("random", "repeat", "intrinsic", "greedy")  # option index -> what it does
TERMINATION_CLIP = (0.1, 0.9)  # LESSON's reference code clips β_ω when acting and in its target
OPTION_PROB_CLIP = (0.05, 0.95)  # and the option probabilities (every option keeps a floor)


def option_probabilities(option_q: np.ndarray, tau: float) -> np.ndarray:
    """LESSON's option choice: softmax of Q_Ω(s,·)/τ, the temperature scaled by max(max_ω Q_Ω, 1) as in
    the reference code (so it does not depend on the reward's scale), probabilities clipped to
    [0.05, 0.95] and renormalised."""
    scale = max(float(option_q.max()), 1.0)
    z = option_q / (tau * scale)
    p = np.exp(z - z.max())
    p = np.clip(p / p.sum(), *OPTION_PROB_CLIP)
    return p / p.sum()


def lesson_act(q: np.ndarray, q_int: np.ndarray, option_q: np.ndarray, termination: np.ndarray,
               rng: np.random.Generator, tau: float, state: tuple[int, int] | None) -> tuple[int, tuple[int, int]]:
    """One LESSON step at state s. `state` = (option, its repeated action), None at an episode's start.
    The running option ends with probability clip(β_ω(s), 0.1, 0.9); then (or at the start) a new one is
    drawn from `option_probabilities`, with a new random action for the repeat option. Options: uniform
    random each step; repeat one random action; greedy on the intrinsic Q; greedy on the task Q.
    Returns (action, the state for the next step)."""
    if state is None or rng.random() < float(np.clip(termination[state[0]], *TERMINATION_CLIP)):
        option = int(rng.choice(len(option_q), p=option_probabilities(option_q, tau)))
        state = (option, int(rng.integers(q.shape[0])))
    option, repeated = state
    if option == 0:
        action = int(rng.integers(q.shape[0]))
    elif option == 1:
        action = repeated
    elif option == 2:
        action = argmax_random_tie(q_int, rng)
    else:
        action = argmax_random_tie(q, rng)
    return action, state
