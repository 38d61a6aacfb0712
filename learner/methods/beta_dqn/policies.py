"""β-DQN's policies (spec §2): the in-sample mask, π_cov(δ), π_cor(α), the policy set Π and the basic
policies, as pure functions of one state's Q(s,·) and β(·|s) (1-D arrays) and a seeded `np.random.Generator`;
ties in any argmax are broken uniformly at random with that rng. Numpy only: the actors run them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learner.methods.exploration import argmax_random_tie


def supported(beta: np.ndarray, eps: float) -> np.ndarray:
    """The in-sample action set {a : β(a|s) > ε}; when empty, the action with the largest β."""
    mask = beta > eps
    if not mask.any():
        mask = np.zeros_like(mask)
        mask[int(np.argmax(beta))] = True
    return mask


def masked_q(q: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """Q̂(s,a) = Q(s,a) if β(a|s) > ε else min_b Q(s,b)   [eq:q mask]."""
    return np.where(supported(beta, eps), q, q.min())


def pure_exploitation(q: np.ndarray, beta: np.ndarray, eps: float, rng: np.random.Generator) -> int:
    """argmax_{a : β(a|s) > ε} Q(s,a)   [eq:q mask greedy]."""
    return argmax_random_tie(np.where(supported(beta, eps), q, -np.inf), rng)


def augmented_beta(beta: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """β̃(a|s) = (β(a|s) + c(s,a)) / (1 + Σ_b c(s,b)) with c the episode's visit counts (spec §2)."""
    return (beta + counts) / (1.0 + counts.sum())


def pi_cov(q: np.ndarray, beta: np.ndarray, delta: float, eps: float, rng: np.random.Generator,
           counts: np.ndarray | None = None, count_mode: str = "augment") -> int:
    """π_cov(δ)   [eq:policy cov]: exploit if β(a|s) > δ for all a, else a ~ Unif{a : β(a|s) ≤ δ}.

    `count_mode` decides how the episode counts enter the δ test: "augment" uses β̃, "simple" removes
    already-taken actions from the rare set, "off" ignores them. The ε-mask keeps the learned β.
    """
    if counts is None or count_mode == "off":
        rare = beta <= delta
    elif count_mode == "augment":
        rare = augmented_beta(beta, counts) <= delta
    elif count_mode == "simple":
        rare = (beta <= delta) & (counts == 0)
    else:
        raise ValueError(f"count_mode {count_mode!r}; allowed: augment, simple, off")
    if not rare.any():
        return pure_exploitation(q, beta, eps, rng)
    return int(rng.choice(np.flatnonzero(rare)))


def pi_cor(q: np.ndarray, beta: np.ndarray, alpha: float, eps: float, rng: np.random.Generator,
           q_optimistic: np.ndarray | None = None) -> int:
    """π_cor(α) = argmax_a α Q(s,a) + (1 − α) Q̂(s,a)   [eq:policy cor].

    Ablation "two Q": `q_optimistic` (learned with the unconstrained target) gives the α term; Q̂ is
    always the in-sample Q masked by β."""
    if alpha == 0.0:
        # π_cor(0) is pure exploitation; argmax Q̂ alone could pick an unsupported action whose
        # Q̂ = min Q ties with the best supported one
        return pure_exploitation(q, beta, eps, rng)
    optimistic = q if q_optimistic is None else q_optimistic
    return argmax_random_tie(alpha * optimistic + (1.0 - alpha) * masked_q(q, beta, eps), rng)


def is_exploitation(action: int, q: np.ndarray, beta: np.ndarray, eps: float) -> bool:
    """Whether `action` is a pure-exploitation action (one of the maximisers of [eq:q mask greedy])."""
    mask = supported(beta, eps)
    return bool(mask[action] and q[action] == q[mask].max())


# ---- the policy set Π   [eq:policy set] ----

GROUP_LABELS = {"cov": "π_cov", "cor": "π_cor(α>0)", "cor0": "π_cor(0)"}  # the logging groups of spec §3


@dataclass(frozen=True)
class Arm:
    kind: str  # "cov" or "cor"
    param: float  # δ for cov, α for cor

    @property
    def label(self) -> str:
        return f"pi_{self.kind}({self.param:g})"

    @property
    def group(self) -> str:
        """Its logging group (`GROUP_LABELS`)."""
        if self.kind == "cov":
            return "cov"
        return "cor0" if self.param == 0.0 else "cor"


def _cor_grid(step: float) -> list[Arm]:
    n = round(1.0 / step)
    return [Arm("cor", round(i * step, 10)) for i in range(n + 1)]


POLICY_SETS = {
    "13": lambda: [Arm("cov", 0.05), Arm("cov", 0.1), *_cor_grid(0.1)],
    "8": lambda: [Arm("cov", 0.05), Arm("cov", 0.1), *_cor_grid(0.2)],
    "23": lambda: [Arm("cov", 0.05), Arm("cov", 0.1), *_cor_grid(0.05)],
    "cov": lambda: [Arm("cov", 0.05)],
    "cor0": lambda: [Arm("cor", 0.0)],
    "cor1": lambda: [Arm("cor", 1.0)],
}


def policy_set(name: str) -> list[Arm]:
    """Presets: "13" (default), "8", "23" and the single-policy sets "cov", "cor0", "cor1"."""
    if name not in POLICY_SETS:
        raise ValueError(f"policy set {name!r}; allowed: {', '.join(POLICY_SETS)}")
    return POLICY_SETS[name]()


def act_beta_dqn(arm: Arm, q: np.ndarray, beta: np.ndarray, eps: float, rng: np.random.Generator,
                 counts: np.ndarray | None, count_mode: str, q_optimistic: np.ndarray | None = None) -> int:
    if arm.kind == "cov":
        return pi_cov(q, beta, arm.param, eps, rng, counts, count_mode)
    return pi_cor(q, beta, arm.param, eps, rng, q_optimistic)


def argmin_beta(beta: np.ndarray, rng: np.random.Generator) -> int:
    """The basic policy that always takes the least-taken action, argmin_a β(a|s) (paper, "three basic
    policies"; it is π_cov(δ) for δ just above min β)."""
    return argmax_random_tie(-beta, rng)
