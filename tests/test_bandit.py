"""The meta-controller [eq:policy select] on hand-built episode streams."""

import numpy as np
import pytest

from meta_controller.bandit import SlidingWindowBandit


def test_unplayed_arms_first_in_index_order_counting_pending():
    b = SlidingWindowBandit(n_arms=4, window=10, seed=0)
    # four concurrent episodes start before any finishes: they spread over the four arms
    assert [b.select() for _ in range(4)] == [0, 1, 2, 3]
    # a fifth concurrent request: every arm is handed out and none finished -> least pending
    assert b.select() == 0
    assert b.pending.tolist() == [2, 1, 1, 1]


def test_argmax_of_normalised_return_plus_bonus():
    b = SlidingWindowBandit(n_arms=3, window=10, seed=0, returns="minmax")
    for arm, ret, bonus in [(0, 0.0, 0.0), (1, 10.0, 0.0), (2, 5.0, 0.3)]:
        b.report(arm, ret, bonus)
    plays, mu, bonus = b.statistics()
    # normalised by the window's min 0 and max 10: μ = [0, 1, 0.5]; b = [0, 0, 0.3]
    np.testing.assert_allclose(mu, [0.0, 1.0, 0.5])
    np.testing.assert_allclose(bonus, [0.0, 0.0, 0.3])
    assert b.select() == 1  # 1.0 > 0.8
    b.report(2, 5.0, 0.9)  # arm 2: μ = 0.5, b = 0.6 -> 1.1 > 1.0
    assert b.select() == 2


def test_normalisation_is_one_half_when_all_returns_are_equal():
    b = SlidingWindowBandit(n_arms=2, window=10, seed=0, returns="minmax")
    b.report(0, 3.0, 0.0)
    b.report(1, 3.0, 0.2)
    _, mu, _ = b.statistics()
    np.testing.assert_allclose(mu, [0.5, 0.5])
    assert b.select() == 1


def test_raw_returns_enter_mu_as_they_came():
    """`returns="raw"` (the published text, the default): the same window as above, μ = [0, 10, 5], so the
    bonus barely counts next to a return of 10."""
    b = SlidingWindowBandit(n_arms=3, window=10, seed=0)
    for arm, ret, bonus in [(0, 0.0, 0.0), (1, 10.0, 0.0), (2, 5.0, 0.3), (2, 5.0, 0.9)]:
        b.report(arm, ret, bonus)
    _, mu, bonus = b.statistics()
    np.testing.assert_allclose(mu, [0.0, 10.0, 5.0])
    np.testing.assert_allclose(bonus, [0.0, 0.0, 0.6])
    assert b.select() == 1  # 10 > 5.6 (normalised, arm 2 would win: 0.5 + 0.6 > 1.0)
    with pytest.raises(ValueError, match="returns='mean'"):
        SlidingWindowBandit(3, 10, returns="mean")


def test_window_forgets_old_episodes_and_the_arm_becomes_unplayed_again():
    b = SlidingWindowBandit(n_arms=3, window=3, seed=0)
    b.report(0, 1.0, 0.0)
    for _ in range(3):
        b.report(1, 2.0, 0.0)
    plays, _, _ = b.statistics()
    assert plays.tolist() == [0, 3, 0]  # arm 0's episode left the window
    assert b.select() == 0  # unplayed again, lowest index first
    assert b.select() == 2


def test_ties_are_broken_by_the_seeded_rng():
    picks = []
    for seed in range(40):
        b = SlidingWindowBandit(n_arms=3, window=10, seed=seed)
        for arm in range(3):
            b.report(arm, 1.0, 0.1)
        picks.append(b.select())
    assert set(picks) == {0, 1, 2}
    b1, b2 = SlidingWindowBandit(3, 10, seed=5), SlidingWindowBandit(3, 10, seed=5)
    for b in (b1, b2):
        for arm in range(3):
            b.report(arm, 1.0, 0.1)
    assert [b1.select() for _ in range(10)] == [b2.select() for _ in range(10)]


def test_report_releases_the_pending_assignment():
    b = SlidingWindowBandit(n_arms=2, window=10, seed=0)
    arm = b.select()
    assert b.pending[arm] == 1
    b.report(arm, 1.0, 0.5)
    assert b.pending[arm] == 0
    with pytest.raises(ValueError):
        b.report(5, 0.0, 0.0)


def test_state_round_trip_continues_identically():
    b = SlidingWindowBandit(n_arms=3, window=5, seed=1)
    for i in range(7):
        b.report(i % 3, float(i % 2), 0.1 * (i % 3))
    b.select()
    c = SlidingWindowBandit(n_arms=3, window=5, seed=99)
    c.load_state_dict(b.state_dict())
    assert [b.select() for _ in range(5)] == [c.select() for _ in range(5)]
    assert list(b.window) == list(c.window)


def test_an_exchange_is_its_reports_then_n_selects():
    a, b = SlidingWindowBandit(n_arms=5, window=6, seed=3), SlidingWindowBandit(n_arms=5, window=6, seed=3)
    rng = np.random.default_rng(1)
    held_a: list = []
    for _ in range(8):  # an actor's chunks: the episodes that ended, and arms for the next ones
        n = int(rng.integers(0, 4))
        reports = [(arm, float(rng.integers(0, 3)), float(rng.random()), stamp) for arm, stamp in held_a]
        for arm, ret, bonus, _ in reports:
            b.report(arm, ret, bonus)
        arms, stamp = a.exchange(reports, n)
        assert arms == [b.select() for _ in range(n)]
        assert stamp == a.reported == b.reported  # the count of reports when these arms were chosen
        held_a = [(arm, stamp) for arm in arms]
    assert a.window == b.window
    np.testing.assert_array_equal(a.pending, b.pending)
    # arms handed out and given back unplayed are no longer pending (and nothing is reported of them)
    before = a.pending.copy()
    arms, _ = a.exchange([], 3)
    a.exchange([], 0, returned=arms)
    np.testing.assert_array_equal(a.pending, before)
    assert a.window == b.window
    with pytest.raises(ValueError, match="arm 9 outside"):
        a.exchange([], 0, returned=[9])


def test_lag_counts_the_episodes_heard_of_between_an_arms_choice_and_its_report():
    b = SlidingWindowBandit(n_arms=3, window=10, seed=0)
    assert b.lag() == {}
    # one actor, one env (the paper's loop): each arm is reported before the next is chosen -> lag 0
    (arm,), stamp = b.exchange([], 1)
    for _ in range(5):
        (arm,), stamp = b.exchange([(arm, 1.0, 0.0, stamp)], 1)
    assert b.lag() == {"median": 0.0, "p95": 0.0, "max": 0}
    # four arms chosen at once, reported one after the other: 0, 1, 2 and 3 episodes late
    c = SlidingWindowBandit(n_arms=3, window=10, seed=0)
    arms, stamp = c.exchange([], 4)
    c.exchange([(arm, 1.0, 0.0, stamp) for arm in arms], 0)
    assert c.lag()["max"] == 3 and c.lag()["median"] == 1.5
    c.report(0, 1.0, 0.0)  # a report without a stamp (one from before stamps) adds no lag
    assert c.lag()["max"] == 3 and c.reported == 5
    # the count of reports carries over a checkpoint; a checkpoint from before stamps counts its window
    d = SlidingWindowBandit(n_arms=3, window=10, seed=0)
    d.load_state_dict(c.state_dict())
    assert d.reported == 5
    old = {k: v for k, v in c.state_dict().items() if k != "reported"}
    d.load_state_dict(old)
    assert d.reported == len(c.window)


def test_the_arms_a_restarted_actors_old_process_held_are_no_longer_pending():
    b = SlidingWindowBandit(n_arms=4, window=10, seed=0)
    arms, stamp = b.exchange([], 3, holder=(0, "first"))  # actor 0: two running episodes and one in hand
    other, _ = b.exchange([], 1, holder=(1, "x"))
    b.exchange([(arms[0], 1.0, 0.0, stamp)], 1, returned=[arms[2]], holder=(0, "first"))
    # arm 0 reported, arm 2 given back then handed out again (unplayed), arm 1 still running, arm 3 actor 1's
    assert b.pending.tolist() == [0, 1, 1, 1]
    # actor 0's process died; its new process asks: what the old one held will never come back
    b.exchange([], 0, holder=(0, "second"))
    assert b.pending.tolist() == [0, 0, 0, 1] and other == [3]
    # the new process holds an arm; a call the old one sent before it died arrives late: nothing of the new
    # process' is released, and the dead process is handed no arm
    (arm,), _ = b.exchange([], 1, holder=(0, "second"))
    pending = b.pending.tolist()
    assert b.exchange([], 2, holder=(0, "first"))[0] == [] and b.pending.tolist() == pending
    assert b.holders[0][0] == "second" and b.holders[0][1] == {arm: 1}
    b.exchange([], 0, returned=[arm], holder=(0, "second"))
    assert b.holders[0][1] == {} and arm not in b.holders[0][1]
