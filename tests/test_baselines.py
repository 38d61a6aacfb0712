"""The baselines' defining mechanisms on hand-built inputs (spec §7): Bootstrapped DQN's 1/K torso
gradient, per-head targets and vote; εz-greedy's Zeta durations and hold; RND's normalisation and its
effect on the target; LESSON's option choice, termination and targets."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from actors.actor import Actor, ActorSettings
from beta_dqn.configuration.flags import Config, method_settings, resolve, settings
from learner.methods import acting
from learner.methods.bootstrapped_dqn import learning as bootstrapped_dqn
from learner.methods.bootstrapped_dqn.acting import majority_vote
from learner.methods.dqn import learning as dqn
from learner.methods.ez_greedy.acting import ez_greedy, zeta_duration
from learner.methods.lesson import learning as lesson
from learner.methods.lesson.options import OPTION_PROB_CLIP, lesson_act, option_probabilities
from learner.methods.networks import HeadsNet, RunningMeanStd, flat_weights
from learner.methods.numpy_net import NumpyNet, acting_values, unflatten
from learner.methods.rnd import learning as rnd
from learner.methods.td import td_loss
from meta_controller.bandit import UniformArm
from tests.test_actor import FakeReplay
from tests.test_learner import solo


def _cfg(algo: str):
    """What method `algo` reads, as a run gives it (the MSE loss, the default flags: --rnd-scale 10)."""
    return method_settings(Config.of(algo=algo, loss="mse"))


# ---- Bootstrapped DQN ----

def test_heads_share_the_torso_and_its_gradient_is_scaled_by_one_over_k():
    torch.manual_seed(0)
    k, obs = 4, (torch.rand(5, 6, 6, 3) < 0.3)
    net = HeadsNet((6, 6, 3), n_out=3, heads=k)
    out = net(obs)
    assert out.shape == (5, k, 3)
    # the same computation by hand, head by head, without the scaling
    x = torch.relu(net.conv(obs.float().permute(0, 3, 1, 2).contiguous())).flatten(1)
    for h in range(k):
        hidden = torch.relu(x @ net.fc1.weight[h * 128:(h + 1) * 128].T + net.fc1.bias[h * 128:(h + 1) * 128])
        torch.testing.assert_close(out[:, h], hidden @ net.out_weight[h].T + net.out_bias[h])
    # gradients: the torso's is 1/K of the unscaled one, the heads' are unchanged
    target = torch.randn(5, k, 3)
    ((out - target) ** 2).sum().backward()
    scaled_conv, scaled_fc1 = net.conv.weight.grad.clone(), net.fc1.weight.grad.clone()
    net.zero_grad()
    x = torch.relu(net.conv(obs.float().permute(0, 3, 1, 2).contiguous())).flatten(1)
    hidden = torch.relu(net.fc1(x)).view(5, k, 128)
    unscaled = torch.einsum("nkh,kah->nka", hidden, net.out_weight) + net.out_bias
    ((unscaled - target) ** 2).sum().backward()
    torch.testing.assert_close(scaled_conv, net.conv.weight.grad / k)
    torch.testing.assert_close(scaled_fc1, net.fc1.weight.grad)


def test_each_head_learns_from_its_own_target_and_the_losses_are_summed():
    torch.manual_seed(0)
    k = 3
    online, target = HeadsNet((8,), 2, k), HeadsNet((8,), 2, k)
    batch = {"obs": torch.rand(6, 8), "next_obs": torch.rand(6, 8), "action": torch.tensor([0, 1, 1, 0, 1, 0]),
             "reward": torch.randn(6), "terminated": torch.tensor([False, True, False, False, False, True])}
    loss, metrics = bootstrapped_dqn.loss({"q": online}, {"q": target}, batch, 0.9, _cfg("bootstrapped_dqn"))
    expected = 0.0
    for h in range(k):  # head h is DQN with Q = head h and Q⁻ = target head h
        def head(net, h=h):
            return lambda obs: net(obs)[:, h]
        expected += dqn.q_loss(head(online), head(target), batch, batch["reward"], 0.9, "mse")[0]
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(metrics["loss_q"], expected / k)


def test_majority_vote_and_its_ties():
    rng = np.random.default_rng(0)
    q = np.array([[0, 0, 1.0], [0, 0, 1.0], [0, 0, 1.0], [1.0, 0, 0], [1.0, 0, 0]])
    assert {majority_vote(q, rng) for _ in range(50)} == {2}
    tie = np.array([[1.0, 0, 0], [0, 1.0, 0]])  # one vote each: broken at random
    assert {majority_vote(tie, rng) for _ in range(100)} == {0, 1}


def test_uniform_head_per_episode_is_seeded_and_counts_plays():
    a, b = UniformArm(10, [0, 1]), UniformArm(10, [0, 1])
    draws = [a.select() for _ in range(2000)]
    assert draws == [b.select() for _ in range(2000)]
    assert set(draws) == set(range(10)) and max(np.bincount(draws)) < 260  # ~200 each
    arms, _ = a.exchange([(3, 1.0, 0.0, -1)], 2)  # the actor's one call: an episode reported, two heads drawn
    assert a.proportions()[3] == 1.0 and arms == [b.select() for _ in range(2)]


# ---- εz-greedy ----

def test_zeta_durations_follow_the_pmf():
    rng = np.random.default_rng(0)
    n = np.array([zeta_duration(2.0, rng) for _ in range(100_000)])
    zeta2 = math.pi ** 2 / 6
    for k in range(1, 6):  # P(n = k) = k^-2 / ζ(2): 0.608, 0.152, 0.068, 0.038, 0.024
        assert abs(np.mean(n == k) - k ** -2 / zeta2) < 0.005, k
    assert abs(np.mean(n > 5) - (1 - sum(k ** -2 for k in range(1, 6)) / zeta2)) < 0.005
    assert n.min() == 1


def test_ez_greedy_holds_a_random_action_for_its_duration():
    rng = np.random.default_rng(1)
    q = np.array([0.0, 5.0, 0.0, 0.0])
    assert ez_greedy(q, 0.0, 2.0, rng, (0, 0)) == (1, (0, 0))  # ε = 0: greedy, nothing held
    action, hold = ez_greedy(q, 1.0, 2.0, rng, (0, 0))
    assert hold[0] == action
    for left in range(hold[1], 0, -1):  # repeated whatever ε and Q say now
        action2, hold = ez_greedy(q, 0.0, 2.0, rng, hold)
        assert action2 == action and hold == (action, left - 1)
    assert ez_greedy(q, 0.0, 2.0, rng, hold)[0] == 1  # the hold is over


def test_ez_greedy_takes_the_drawn_action_on_the_drawing_step_and_n_more(monkeypatch):
    """Algorithm 1 of Dabney et al. and spec §7 ("start a random action and repeat it for n steps"): a drawn
    n = 3 is 4 steps of the action, so even the shortest hold (n = 1, 61% of draws at μ = 2) lasts 2 steps."""
    from learner.methods.ez_greedy import acting as ez

    for n in (1, 3):
        monkeypatch.setattr(ez, "zeta_duration", lambda mu, rng, n=n: n)
        rng, q = np.random.default_rng(0), np.array([0.0, 5.0, 0.0, 0.0])
        action, hold = ez.ez_greedy(q, 1.0, 2.0, rng, (0, 0))
        taken = [action]
        while hold[1] > 0:
            action, hold = ez.ez_greedy(q, 0.0, 2.0, rng, hold)
            taken.append(action)
        assert taken == [taken[0]] * (n + 1)


def test_the_hold_survives_chunk_boundaries_and_ends_with_the_episode():
    """ε = 1 and μ = 1.01 (holds of hundreds of steps, longer than a CliffWalk episode): inside an episode
    the action never changes, even across `collect` calls of 7 steps; a new episode draws a new one."""
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="ez_greedy", learning_starts=0, envs_per_actor=1,
                               eps_start=1.0, eps_end=1.0, ez_mu=1.01, wandb="disabled"))
    replay = FakeReplay()
    actor = Actor(settings(ActorSettings, cfg), spec, 0, UniformArm(1), replay)
    weights = flat_weights({"q": solo(cfg, spec).nets["q"]})
    for _ in range(120):
        actor.collect(7, weights, 0, 0)
    actions = np.concatenate([c["action"] for c in replay.chunks])
    episodes = np.concatenate([c["episode"] for c in replay.chunks])
    per_episode = [set(actions[episodes == e]) for e in np.unique(episodes)[:-1]]  # finished ones
    assert len(per_episode) >= 10
    single = sum(len(s) == 1 for s in per_episode)
    assert single >= 0.8 * len(per_episode)  # a hold shorter than the episode is rare at μ = 1.01
    firsts = [next(iter(s)) for s in per_episode if len(s) == 1]
    assert len(set(firsts)) > 1  # each episode drew its own action: holds end at the episode's end


# ---- RND ----

def test_running_mean_std_equals_the_whole_streams_moments():
    rng = np.random.default_rng(0)
    stats = RunningMeanStd((3,))
    data = [rng.normal(2.0, 3.0, size=(n, 3)) for n in (1, 5, 32, 7)]
    for x in data:
        stats.update(torch.as_tensor(x))
    everything = np.concatenate(data)
    np.testing.assert_allclose(stats.mean.numpy(), everything.mean(0), rtol=1e-10)
    np.testing.assert_allclose(stats.var.numpy(), everything.var(0), rtol=1e-10)
    assert stats.count.item() == len(everything)


class _Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return self.factor * x.flatten(1)


def test_rnd_bonus_normalises_observations_clips_them_and_divides_by_the_errors_std():
    frozen = {"rnd_target": _Scale(1.0), "obs_norm": RunningMeanStd((2,)), "bonus_norm": RunningMeanStd(())}
    predictor = _Scale(2.0)  # prediction error per sample = mean over features of x²
    first = torch.as_tensor(np.random.default_rng(0).normal(0.0, 1.0, (100, 2)))
    rnd.intrinsic_reward(predictor, frozen, first)
    outlier = torch.tensor([[1.0, 1.0], [1001.0, 1.0]], dtype=torch.float64)
    bonus, loss = rnd.intrinsic_reward(predictor, frozen, outlier)
    seen = torch.cat([first, outlier]).double()
    x = ((outlier - seen.mean(0)) / (seen.var(0, unbiased=False) + 1e-8).sqrt()).clamp(-5, 5)
    assert x.abs().max() == 5.0  # the outlier was clipped
    error = x.square().mean(1)
    errors_seen = torch.cat([(((first - first.mean(0)) / (first.var(0, unbiased=False) + 1e-8).sqrt())
                              .clamp(-5, 5)).square().mean(1), error])
    expected = error / (errors_seen.var(unbiased=False) + 1e-8).sqrt()
    torch.testing.assert_close(bonus.double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(loss.double(), error.mean(), rtol=1e-5, atol=1e-6)


def test_rnd_bonus_centred_subtracts_the_errors_running_mean_and_averages_zero():
    """--rnd-bonus centred (LESSON's code): (e − running mean) / running std; the spec's bonus is e / running std,
    always positive. Both from the same statistics."""
    sides = {}
    for centred in (False, True):
        torch.manual_seed(0)
        frozen = {"rnd_target": _Scale(1.0), "obs_norm": RunningMeanStd((2,)), "bonus_norm": RunningMeanStd(())}
        batches = [torch.as_tensor(np.random.default_rng(i).normal(0.0, 1.0, (64, 2))) for i in range(20)]
        sides[centred] = torch.cat([rnd.intrinsic_reward(_Scale(2.0), frozen, b, centred)[0] for b in batches])
        stats = frozen["bonus_norm"]
    assert sides[False].min() > 0 and sides[True].min() < 0 < sides[True].max()
    # the last batch's bonus: the same error, less the running mean over the std in the centred one
    last_std, last_mean = stats.std().item(), stats.mean.item()
    torch.testing.assert_close(sides[True][-64:].double(), sides[False][-64:].double() - last_mean / last_std,
                               rtol=1e-5, atol=1e-5)
    assert abs(sides[True].mean().item()) < 0.2 < sides[False].mean().item()


@pytest.mark.parametrize("algo", ["rnd", "lesson"])
def test_rnd_bonus_flag_reaches_the_bonus_of_rnd_and_lesson(monkeypatch, algo):
    seen = []

    def bonus(predictor, frozen, next_obs, centred):
        seen.append(centred)
        raise StopIteration  # the loss's first step: nothing more is needed

    monkeypatch.setattr(rnd, "intrinsic_reward", bonus)
    module = rnd if algo == "rnd" else lesson
    for value in ("std", "centred"):
        cfg = method_settings(Config.of(algo=algo, loss="mse", rnd_bonus=value))
        with pytest.raises(StopIteration):
            module.loss({"rnd_predictor": None}, {}, {"obs": torch.zeros(1, 2), "next_obs": None,
                                                      "option": torch.zeros(1, dtype=torch.int64)}, 0.9, cfg)
    assert seen == [False, True]


def test_rnd_adds_the_scaled_bonus_to_the_reward_of_the_td_target(monkeypatch):
    torch.manual_seed(0)
    q, target = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    batch = {"obs": torch.rand(3, 4), "next_obs": torch.rand(3, 4), "action": torch.tensor([0, 1, 0]),
             "reward": torch.tensor([1.0, 0.0, -1.0]), "terminated": torch.tensor([False, False, True])}
    bonus = torch.tensor([0.5, 2.0, 1.0])
    monkeypatch.setattr(rnd, "intrinsic_reward",
                        lambda predictor, frozen, next_obs, centred: (bonus, torch.tensor(0.25)))
    loss, metrics = rnd.loss({"q": q, "rnd_predictor": None}, {"q": target}, batch, 0.9, _cfg("rnd"))
    with torch.no_grad():
        q_sa = q(batch["obs"]).gather(1, batch["action"][:, None]).squeeze(1)
        y = batch["reward"] + 10.0 * bonus + 0.9 * torch.tensor([1.0, 1.0, 0.0]) * target(batch["next_obs"]).amax(1)
    torch.testing.assert_close(metrics["loss_q"], ((q_sa - y) ** 2).mean())
    torch.testing.assert_close(loss.detach(), metrics["loss_q"] + 0.25)


# ---- LESSON ----

def test_option_probabilities_are_a_tempered_softmax_with_a_floor():
    p = option_probabilities(np.array([0.0, 0.02, 0.0, 0.0]), 0.02)  # max Q_Ω ≤ 1: temperature τ
    np.testing.assert_allclose(p, np.array([1, math.e, 1, 1]) / (3 + math.e))
    p = option_probabilities(np.array([3.0, 0.0, 0.0, 0.0]), 0.02)  # greedy, but every option keeps a floor
    np.testing.assert_allclose(p, np.array([0.95, 0.05, 0.05, 0.05]) / 1.1)
    # the temperature scales with max Q_Ω: Q and 10·Q choose alike
    np.testing.assert_allclose(option_probabilities(np.array([2.0, 2.04, 1.9, 2.0]), 0.02),
                               option_probabilities(np.array([20.0, 20.4, 19.0, 20.0]), 0.02))
    assert p.min() >= OPTION_PROB_CLIP[0] / 1.1


def test_lesson_chooses_options_by_their_probabilities_and_ends_them_by_termination():
    rng = np.random.default_rng(0)
    q, q_int = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    option_q = np.array([0.0, 0.02, 0.0, 0.01])
    chosen = np.bincount([lesson_act(q, q_int, option_q, np.zeros(4), rng, 0.02, None)[1][0]
                          for _ in range(20_000)], minlength=4) / 20_000
    np.testing.assert_allclose(chosen, option_probabilities(option_q, 0.02), atol=0.01)
    # what each option does while it runs (β = 0 still ends it with probability 0.1: those steps are skipped)
    for state, expected in (((2, 1), {0}), ((3, 1), {2}), ((1, 1), {1}), ((0, 1), {0, 1, 2})):
        runs = [lesson_act(q, q_int, option_q, np.zeros(4), rng, 0.02, state) for _ in range(300)]
        actions = {a for a, kept in runs if kept == state}
        assert actions == expected, state  # greedy on Q_I, greedy on Q, the repeated action, uniform
    # termination: β_ω(s) clipped to [0.1, 0.9] is the chance the running option ends at s
    for beta, rate in ((0.0, 0.1), (0.5, 0.5), (1.0, 0.9)):
        termination = np.full(4, beta)
        ended = 0
        for _ in range(10_000):
            # an ended option draws again; option 1 with action 1 is redrawn as (1, 1) with probability < 0.3
            state = lesson_act(q, q_int, np.array([0.0, 0.0, 0.0, 1.0]), termination, rng, 0.02, (1, 1))[1]
            ended += state != (1, 1)
        # after an ending, the draw prefers option 3 (p = 0.95/1.1), so state != (1, 1) is the ending
        assert abs(ended / 10_000 - rate * (1 - (0.05 / 1.1) / 3)) < 0.02, beta


def test_option_value_target_is_option_critics_u():
    reward, terminated = torch.tensor([1.0, 1.0]), torch.tensor([False, True])
    option = torch.tensor([0, 1])
    beta_next = torch.tensor([[0.5, 0.0], [0.95, 0.95]])  # β′ = 0.5 for the first, clipped to 0.9 for the second
    q_next = torch.tensor([[2.0, 4.0], [1.0, 3.0]])
    g = lesson.option_value_target(reward, terminated, option, beta_next, q_next, 0.9)
    # first: 1 + 0.9 (0.5·2 + 0.5·4) = 3.7; second: terminal -> 1
    torch.testing.assert_close(g, torch.tensor([3.7, 1.0]))


def test_termination_loss_ends_worse_than_average_options():
    q_s = torch.tensor([[1.0, 3.0], [3.0, 1.0]])  # option 0 is the worse one in state 0, the best in state 1
    option = torch.tensor([0, 0])
    logits = torch.zeros(2, 2, requires_grad=True)
    loss = lesson.termination_loss(torch.sigmoid(logits), option, q_s, torch.tensor([False, False]))
    loss.backward()
    # advantages −2 and 0, centred: −1 and +1 -> minimising raises β where the option is worse, lowers it
    # where it is better
    assert logits.grad[0, 0] < 0 < logits.grad[1, 0]
    assert logits.grad[:, 1].abs().sum() == 0  # only the running option's termination learns


def test_lesson_loss_uses_the_stored_option():
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="lesson", wandb="disabled"))
    learner = solo(cfg, spec)
    rng = np.random.default_rng(0)
    obs = np.eye(48, dtype=np.uint8)[rng.integers(0, 48, 16)]
    batch = {"obs": learner.packer.pack(obs), "next_obs": learner.packer.pack(np.roll(obs, 1, axis=1)),
             "action": rng.integers(0, 4, 16), "reward": rng.standard_normal(16).astype(np.float32),
             "terminated": np.zeros(16, dtype=bool)}
    losses = []
    for option in (0, 3):
        tensors = learner.path.batches.on_device({**batch, "option": np.full(16, option)})
        frozen = {k: v for k, v in learner.frozen.items()}
        frozen["obs_norm"], frozen["bonus_norm"] = RunningMeanStd((48,)), RunningMeanStd(())
        losses.append(lesson.loss(learner.nets, frozen, tensors, 0.9, learner.settings.method)[1])
    assert losses[0]["loss_q"] == losses[1]["loss_q"]
    assert losses[0]["loss_option"] != losses[1]["loss_option"]


def test_lessons_option_value_loss_is_half_the_squared_error_whatever_the_td_loss():
    """LESSON's code (spec §7: its losses) trains Q_Ω by ½·MSE; `--loss huber` is the Q functions'. With an error
    of 3 on every row: ½ · 9 = 4.5, where Huber would give 2.5."""
    q, g = torch.full((8,), 3.0), torch.zeros(8)
    assert lesson.option_value_loss(q, g).item() == pytest.approx(4.5)
    assert lesson.option_value_loss(torch.tensor([1.0, -0.5]), torch.zeros(2)).item() == pytest.approx(0.3125)


# ---- every algorithm: checkpointed state, acting outputs ----

@pytest.mark.parametrize("algo", ["bootstrapped_dqn", "ez_greedy", "rnd", "lesson"])
def test_learner_state_round_trip_continues_identically(algo):
    """The checkpoint has everything an update reads: RND's normalisation statistics and fixed target too."""
    cfg, spec = resolve(Config.of(env="MinAtar/Breakout", algo=algo, wandb="disabled"))
    rng = np.random.default_rng(0)

    def batch():
        return {"obs": rng.random((32, 10, 10, 4)) < 0.2, "next_obs": rng.random((32, 10, 10, 4)) < 0.2,
                "action": rng.integers(0, 6, 32), "reward": rng.standard_normal(32).astype(np.float32),
                "terminated": rng.random(32) < 0.1, "option": rng.integers(0, 4, 32)}

    a = solo(cfg, spec)
    for _ in range(3):
        b = batch()
        a.update({**b, "obs": a.packer.pack(b["obs"]), "next_obs": a.packer.pack(b["next_obs"])})
    state = a.state_dict()
    if algo in ("rnd", "lesson"):
        assert state["frozen"]["obs_norm.count"].item() == 3 * 32
    other = solo(dataclasses.replace(cfg, seed=5), spec)
    other.load_state_dict(state)
    b = batch()
    packed = {**b, "obs": a.packer.pack(b["obs"]), "next_obs": a.packer.pack(b["next_obs"])}
    ma, mb = a.update(packed), other.update(packed)
    assert {k: float(v) for k, v in ma.items()} == {k: float(v) for k, v in mb.items()}


@pytest.mark.parametrize("algo,shapes", [
    ("bootstrapped_dqn", {"q": (3, 10, 4)}),
    ("lesson", {"q": (3, 4), "q_int": (3, 4), "option_q": (3, 4), "termination": (3, 4)}),
    ("rnd", {"q": (3, 4)}),
])
def test_actors_get_the_acting_networks_and_their_numpy_forward_equals_torch(algo, shapes):
    cfg, spec = resolve(Config.of(env="CliffWalk", algo=algo, wandb="disabled"))
    learner = solo(cfg, spec)
    nets = {n: NumpyNet(p) for n, p in unflatten(learner.weights()).items()}
    obs = np.eye(48, dtype=np.uint8)[[0, 5, 47]]
    values = acting(learner.settings.method).outputs(nets, obs)  # as the method's acting reads them
    assert {k: v.shape for k, v in values.items()} == shapes
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(values["q"]), learner.nets["q"](torch.as_tensor(obs)),
                                   rtol=1e-5, atol=1e-5)
        if algo == "bootstrapped_dqn":  # an actor asks for one head per row: the same numbers
            rows = acting_values(nets, obs, heads=[0, 3, 9])["q"]
            expected = learner.nets["q"](torch.as_tensor(obs))[[0, 1, 2], [0, 3, 9]]
            torch.testing.assert_close(torch.as_tensor(rows), expected, rtol=1e-5, atol=1e-5)
        if algo == "lesson":
            q_opt, beta = lesson.split_option_output(learner.nets["option"](torch.as_tensor(obs)))
            torch.testing.assert_close(torch.as_tensor(values["termination"]), beta, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(torch.as_tensor(values["option_q"]), q_opt, rtol=1e-5, atol=1e-5)


def test_td_loss_kinds():
    assert td_loss(torch.tensor([0.0]), torch.tensor([3.0]), "huber").item() == 2.5
    assert td_loss(torch.tensor([0.0]), torch.tensor([3.0]), "mse").item() == 9.0


def test_a_bootstrapped_actor_acts_greedily_on_its_episodes_head():
    from tests.test_actor import FakeArms

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="bootstrapped_dqn", boot_heads=4, boot_epsilon=False,
                               learning_starts=0, envs_per_actor=2, wandb="disabled"))
    learner = solo(cfg, spec)
    with torch.no_grad():  # head h prefers action h, whatever the state
        learner.nets["q"].out_weight.zero_()
        learner.nets["q"].out_bias.copy_(10.0 * torch.eye(4))
    for head in range(4):
        replay = FakeReplay()
        Actor(settings(ActorSettings, cfg), spec, 0, FakeArms(head), replay).collect(30, learner.weights(), 0, 0)
        assert set(replay.chunks[0]["action"]) == {head}


def test_lessons_stored_option_is_the_one_that_chose_the_action():
    """Task Q prefers action 2, intrinsic Q action 0: a transition stored with option 3 took action 2, one
    with option 2 took action 0; every option runs; warm-up steps are stored as option 0."""
    from tests.test_actor import FakeArms

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="lesson", learning_starts=50, envs_per_actor=2,
                               wandb="disabled"))
    learner = solo(cfg, spec)
    with torch.no_grad():
        for name, action in (("q", 2), ("q_int", 0)):
            learner.nets[name].out.weight.zero_()
            learner.nets[name].out.bias.zero_()
            learner.nets[name].out.bias[action] = 10.0
    replay = FakeReplay()
    actor = Actor(settings(ActorSettings, cfg), spec, 0, FakeArms(0), replay)
    for _ in range(20):
        actor.collect(64, learner.weights(), 0, 0 if not replay.chunks else 50 + 64 * len(replay.chunks))
    option = np.concatenate([c["option"] for c in replay.chunks])
    action = np.concatenate([c["action"] for c in replay.chunks])
    assert (option[:50] == 0).all()  # the warm-up: uniform random, stored as the random option
    later_option, later_action = option[64:], action[64:]
    assert set(later_option) == {0, 1, 2, 3}
    assert (later_action[later_option == 3] == 2).all() and (later_action[later_option == 2] == 0).all()
