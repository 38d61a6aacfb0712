"""Proposition 1: in-sample TD converges to the in-sample optimal values on explored pairs,
and to Q* when every action is covered — using the learner's own target function."""

import numpy as np
import torch

from learner.methods.beta_dqn.learning import in_sample_target

GAMMA, EPS = 0.9, 0.05


def random_mdp(seed, n_states=6, n_actions=3):
    rng = np.random.default_rng(seed)
    nxt = rng.integers(0, n_states, size=(n_states, n_actions))  # deterministic transitions
    reward = rng.normal(size=(n_states, n_actions)).astype(np.float32)
    terminal = np.zeros(n_states, dtype=bool)
    terminal[-1] = True
    return nxt, reward, terminal


def value_iteration(nxt, reward, terminal, allowed):
    """Optimal values of the MDP restricted to the `allowed` actions in the max."""
    q = np.zeros(reward.shape)
    for _ in range(2000):
        v = np.where(allowed, q, -np.inf).max(1)
        q = reward + GAMMA * np.where(terminal[nxt], 0.0, v[nxt])
    return q


def in_sample_td(nxt, reward, terminal, data, beta, init):
    """Tabular TD on the transitions in `data` with the masked max of [eq:in distribution td learning]."""
    q = torch.full(reward.shape, init, dtype=torch.float32)
    s = torch.tensor([d[0] for d in data])
    a = torch.tensor([d[1] for d in data])
    s2 = torch.as_tensor(nxt[s.numpy(), a.numpy()])
    r = torch.as_tensor(reward[s.numpy(), a.numpy()])
    term = torch.as_tensor(terminal[s2.numpy()])
    beta_t = torch.as_tensor(beta, dtype=torch.float32)
    for _ in range(600):
        y = in_sample_target(r, term, q[s2], beta_t[s2], GAMMA, EPS)
        q[s, a] += 0.5 * (y - q[s, a])
    return q.numpy()


def empirical_beta(data, shape):
    counts = np.zeros(shape)
    for s, a in data:
        counts[s, a] += 1
    totals = counts.sum(1, keepdims=True)
    return np.where(totals > 0, counts / np.maximum(totals, 1), 1.0 / shape[1])


def test_in_sample_td_converges_to_in_sample_optimum_on_explored_pairs():
    for seed in range(5):
        nxt, reward, terminal = random_mdp(seed)
        rng = np.random.default_rng(100 + seed)
        pairs = [(s, a) for s in range(6) for a in range(3)]
        # each state keeps at least one action; about a third of the pairs are never seen
        data = [p for p in pairs if rng.random() < 0.66 or p[1] == p[0] % 3]
        beta = empirical_beta(data, reward.shape)
        explored = np.zeros(reward.shape, dtype=bool)
        for s, a in data:
            explored[s, a] = True
        q_hat_star = value_iteration(nxt, reward, terminal, explored)
        # optimistic values on the missing pairs: the masked max must never bootstrap from them
        q = in_sample_td(nxt, reward, terminal, data, beta, init=50.0)
        np.testing.assert_allclose(q[explored], q_hat_star[explored], atol=1e-4)
        # the unconstrained max (β = 1 everywhere passes every action) bootstraps from them
        q_plain = in_sample_td(nxt, reward, terminal, data, np.ones(reward.shape), init=50.0)
        assert np.abs(q_plain[explored] - q_hat_star[explored]).max() > 1.0


def test_with_full_coverage_in_sample_td_recovers_q_star():
    for seed in range(5):
        nxt, reward, terminal = random_mdp(seed)
        data = [(s, a) for s in range(6) for a in range(3)]
        beta = empirical_beta(data, reward.shape)  # 1/3 > ε everywhere
        q = in_sample_td(nxt, reward, terminal, data, beta, init=0.0)
        q_star = value_iteration(nxt, reward, terminal, np.ones(reward.shape, dtype=bool))
        np.testing.assert_allclose(q, q_star, atol=1e-4)
