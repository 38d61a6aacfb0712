"""Spec §2 on hand-built Q and β, with the answers worked out by hand."""

import numpy as np
import pytest

from learner.methods.beta_dqn.policies import (
    Arm,
    augmented_beta,
    masked_q,
    pi_cor,
    pi_cov,
    policy_set,
    pure_exploitation,
    supported,
)
from learner.methods.exploration import argmax_random_tie, linear_epsilon

EPS = 0.05
# action 1 has the largest Q but is unsupported (β = 0.02 ≤ ε); action 2 is the best supported one.
Q = np.array([1.0, 5.0, 3.0, -2.0])
BETA = np.array([0.40, 0.02, 0.30, 0.28])


def rng(seed=0):
    return np.random.default_rng(seed)


def test_mask_and_masked_q():
    assert supported(BETA, EPS).tolist() == [True, False, True, True]
    # Q̂ replaces the unsupported action's value by min_b Q(s,b) = −2
    assert masked_q(Q, BETA, EPS).tolist() == [1.0, -2.0, 3.0, -2.0]


def test_mask_falls_back_to_largest_beta_when_empty():
    beta = np.full(25, 0.04)
    beta[7] = 0.04 + 1e-3
    mask = supported(beta, EPS)
    assert mask.sum() == 1 and mask[7]


def test_pure_exploitation_takes_best_supported_action():
    assert pure_exploitation(Q, BETA, EPS, rng()) == 2


def test_pi_cov_explores_rare_actions_uniformly():
    # δ = 0.1: rare set {a : β ≤ 0.1} = {1}
    assert all(pi_cov(Q, BETA, 0.1, EPS, rng(s)) == 1 for s in range(20))
    # δ = 0.3: rare set = {1, 2, 3}, each drawn about a third of the time
    r = rng(1)
    draws = np.bincount([pi_cov(Q, BETA, 0.3, EPS, r) for _ in range(3000)], minlength=4)
    assert draws[0] == 0
    assert np.all(np.abs(draws[1:] / 3000 - 1 / 3) < 0.04)


def test_pi_cov_exploits_when_every_action_is_above_delta():
    beta = np.array([0.25, 0.25, 0.25, 0.25])
    assert pi_cov(Q, beta, 0.1, EPS, rng()) == 1  # all covered: argmax over supported = action 1


def test_augmented_beta_makes_repeated_actions_common_and_others_rare():
    beta = np.array([0.25, 0.25, 0.25, 0.25])
    counts = np.array([2.0, 0.0, 0.0, 0.0])
    # β̃ = (β + c) / (1 + Σc) = [2.25, .25, .25, .25] / 3
    np.testing.assert_allclose(augmented_beta(beta, counts), [0.75, 1 / 12, 1 / 12, 1 / 12])
    # with δ = 0.1 the three untaken actions are now rare; without counts none is
    picks = {pi_cov(Q, beta, 0.1, EPS, rng(s), counts, "augment") for s in range(50)}
    assert picks == {1, 2, 3}
    assert pi_cov(Q, beta, 0.1, EPS, rng(), counts, "off") == 1


def test_simple_count_variant_removes_taken_actions_from_the_rare_set():
    counts = np.array([0.0, 1.0, 0.0, 0.0])
    # β ≤ 0.1 is {1}, but action 1 was taken: rare set empty -> pure exploitation
    assert pi_cov(Q, BETA, 0.1, EPS, rng(), counts, "simple") == 2


def test_pi_cor_interpolates_between_exploitation_and_greedy():
    # α = 0: argmax Q̂ = action 2; α = 1: argmax Q = action 1
    assert pi_cor(Q, BETA, 0.0, EPS, rng()) == 2
    assert pi_cor(Q, BETA, 1.0, EPS, rng()) == 1
    # α = 0.5: 0.5 Q + 0.5 Q̂ = [1, 1.5, 3, −2] -> action 2
    assert pi_cor(Q, BETA, 0.5, EPS, rng()) == 2
    # α = 0.9: [1, 4.3, 3, −2] -> action 1
    assert pi_cor(Q, BETA, 0.9, EPS, rng()) == 1


def test_ties_are_broken_uniformly_with_the_seeded_rng():
    values = np.array([1.0, 3.0, 3.0, 0.0, 3.0])
    r = rng(3)
    counts = np.bincount([argmax_random_tie(values, r) for _ in range(3000)], minlength=5)
    assert counts[0] == counts[3] == 0
    assert np.all(np.abs(counts[[1, 2, 4]] / 3000 - 1 / 3) < 0.04)
    a = [argmax_random_tie(values, rng(9)) for _ in range(5)]
    b = [argmax_random_tie(values, rng(9)) for _ in range(5)]
    assert a == b


def test_policy_sets_match_the_paper():
    default = policy_set("13")
    assert [a.label for a in default[:3]] == ["pi_cov(0.05)", "pi_cov(0.1)", "pi_cor(0)"]
    assert [a.param for a in default[2:]] == pytest.approx([i / 10 for i in range(11)])
    assert len(policy_set("8")) == 8 and len(policy_set("23")) == 23
    assert policy_set("cov") == [Arm("cov", 0.05)]
    assert policy_set("cor0") == [Arm("cor", 0.0)] and policy_set("cor1") == [Arm("cor", 1.0)]
    assert [a.group for a in default].count("cov") == 2 and [a.group for a in default].count("cor0") == 1
    with pytest.raises(ValueError, match="allowed"):
        policy_set("7")


def test_linear_epsilon_schedule():
    assert linear_epsilon(0, 1.0, 0.01, 1000) == 1.0
    assert linear_epsilon(500, 1.0, 0.01, 1000) == pytest.approx(0.505)
    assert linear_epsilon(5000, 1.0, 0.01, 1000) == pytest.approx(0.01)
