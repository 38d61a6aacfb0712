"""Spec §1 on hand-built tensors: the ε-mask, the in-sample target, β's loss, DQN's target."""

import math

import pytest
import torch

from beta_dqn.configuration.flags import Config, method_settings
from learner.methods.beta_dqn import learning as beta_dqn
from learner.methods.dqn import learning as dqn
from learner.methods.td import bootstrap, td_loss

EPS = 0.05


def test_in_sample_max_ignores_unsupported_actions():
    q_next = torch.tensor([[1.0, 9.0, 3.0], [4.0, 2.0, 8.0]])
    beta_next = torch.tensor([[0.50, 0.01, 0.49], [0.04, 0.90, 0.06]])
    # row 0: action 1 (Q = 9) has β = 0.01 ≤ ε -> max over {0, 2} = 3
    # row 1: action 0 masked -> max over {1, 2} = 8
    assert beta_dqn.in_sample_max(q_next, beta_next, EPS).tolist() == [3.0, 8.0]


def test_in_sample_max_falls_back_to_the_largest_beta():
    q_next = torch.tensor([[1.0, 9.0, 3.0]])
    beta_next = torch.tensor([[0.03, 0.01, 0.04]])  # nothing passes ε = 0.05
    assert beta_dqn.in_sample_max(q_next, beta_next, EPS).tolist() == [3.0]


def test_mask_drops_argmax_counts_next_states_whose_q_argmax_is_masked():
    q_next = torch.tensor([[1.0, 9.0, 3.0], [4.0, 2.0, 8.0], [7.0, 1.0, 0.0], [1.0, 9.0, 3.0]])
    beta_next = torch.tensor([[0.50, 0.01, 0.49], [0.04, 0.90, 0.06], [0.90, 0.05, 0.05], [0.03, 0.01, 0.04]])
    # row 0: argmax 1 masked (β 0.01); row 1: argmax 2 kept; row 2: argmax 0 kept; row 3: nothing passes ε, the
    # fallback keeps only action 2 (largest β), so argmax 1 is dropped
    mask = beta_dqn.in_sample_mask(beta_next, EPS)
    assert float(beta_dqn.mask_drops_argmax(q_next, mask)) == 0.5
    # the target reads the same mask: its max is over the kept actions
    assert beta_dqn.in_sample_max(q_next, beta_next, EPS, mask).tolist() == [3.0, 8.0, 7.0, 3.0]


def test_target_bootstraps_on_truncation_but_not_on_termination():
    reward = torch.tensor([1.0, 1.0])
    terminated = torch.tensor([True, False])  # the second transition was truncated by a time limit
    q_next = torch.tensor([[2.0, 10.0], [2.0, 10.0]])
    beta_next = torch.tensor([[0.9, 0.1], [0.97, 0.03]])
    y = beta_dqn.in_sample_target(reward, terminated, q_next, beta_next, gamma=0.5, eps=EPS)
    # terminated: y = r = 1; truncated: y = 1 + 0.5 · max over {0} (action 1 masked: 0.03) = 2
    assert y.tolist() == [1.0, 2.0]


def test_dqn_target_uses_the_unconstrained_max():
    reward = torch.tensor([0.0])
    y = bootstrap(reward, torch.tensor([False]), torch.tensor([[2.0, 10.0]]).amax(1), 0.9)
    assert y.tolist() == [pytest.approx(9.0)]


def test_behaviour_loss_is_mean_negative_log_likelihood():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3]]))
    action = torch.tensor([0, 2])
    expected = -(math.log(0.5) + math.log(0.3)) / 2
    assert beta_dqn.behaviour_loss(logits, action).item() == pytest.approx(expected, rel=1e-6)


def test_td_loss_kinds():
    pred, target = torch.tensor([0.0, 0.0]), torch.tensor([0.5, 3.0])
    # huber: 0.5·0.5² = 0.125 and 3 − 0.5 = 2.5 -> mean 1.3125; mse: (0.25 + 9) / 2
    assert td_loss(pred, target, "huber").item() == pytest.approx(1.3125)
    assert td_loss(pred, target, "mse").item() == pytest.approx(4.625)


class _Table(torch.nn.Module):
    """A tabular "network": Q(s,·) is a row of a table, indexed by a one-hot observation."""

    def __init__(self, table):
        super().__init__()
        self.table = torch.nn.Parameter(torch.as_tensor(table, dtype=torch.float32))

    def forward(self, obs):
        return obs.float() @ self.table


def test_full_loss_matches_hand_computation():
    # two states, two actions; β is uniform in s0 and certain of action 0 in s1
    q = _Table([[1.0, 2.0], [3.0, 7.0]])
    beta = _Table([[0.0, 0.0], [10.0, -10.0]])
    target = _Table([[1.0, 2.0], [3.0, 7.0]])
    batch = {"obs": torch.tensor([[1, 0]]), "next_obs": torch.tensor([[0, 1]]),
             "action": torch.tensor([1]), "reward": torch.tensor([0.5]), "terminated": torch.tensor([False])}
    cfg = method_settings(Config.of(algo="beta_dqn", beta_eps=EPS, loss="mse"))
    loss, m = beta_dqn.loss({"q": q, "beta": beta}, {"q": target}, batch, 0.9, cfg)
    # y = 0.5 + 0.9 · Q⁻(s1, 0) = 3.2 (action 1 is masked in s1); Q(s0,1) = 2 -> (2 − 3.2)² = 1.44
    assert m["loss_q"].item() == pytest.approx(1.44)
    assert m["loss_beta"].item() == pytest.approx(math.log(2), rel=1e-6)
    assert loss.item() == pytest.approx(1.44 + math.log(2), rel=1e-6)
    # DQN on the same batch bootstraps from action 1: y = 0.5 + 0.9 · 7 = 6.8
    _, m = dqn.loss({"q": q}, {"q": target}, batch, 0.9, cfg)
    assert m["loss_q"].item() == pytest.approx((2 - 6.8) ** 2, rel=1e-6)
