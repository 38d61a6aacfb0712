"""β-DQN's ablation switches (paper, "Ablation study"), each changing exactly what it says: two Q functions,
the policy-set size, and the basic policies evaluated beside the main evaluation."""


import numpy as np
import pytest
import torch

from actors.evaluator import Evaluator, EvaluatorSettings
from beta_dqn.configuration.flags import Config, ConfigError, method_settings, resolve, settings
from beta_dqn.driver.runtime import SerialBackend, build
from learner.methods.beta_dqn import learning as beta_dqn
from learner.methods.beta_dqn.policies import act_beta_dqn, pi_cor, policy_set, pure_exploitation
from learner.methods.dqn import learning as dqn
from learner.methods.numpy_net import unflatten
from tests.test_actor import FakeReplay
from tests.test_learner import solo


def _learner(**kw):
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", wandb="disabled", **kw))
    return solo(cfg, spec)


def test_two_q_adds_an_unconstrained_q_with_its_own_target_and_nothing_else():
    one, two = _learner(), _learner(two_q=True)
    assert set(one.nets) == {"q", "beta"} and set(two.nets) == {"q", "beta", "q_full"}
    assert set(one.frozen) == {"q"} and set(two.frozen) == {"q", "q_full"}
    assert set(unflatten(two.weights())) == {"q", "beta", "q_full"}  # the actors get it for π_cor
    # same seed: the in-sample Q and β start identical, q_full is an extra network
    for name in ("q", "beta"):
        for a, b in zip(one.nets[name].parameters(), two.nets[name].parameters(), strict=True):
            assert torch.equal(a, b)
    # the loss is the in-sample TD loss + L_β + q_full's DQN loss [eq:bellman]
    rng = np.random.default_rng(0)
    obs = torch.as_tensor(np.eye(48, dtype=np.float32)[rng.integers(0, 48, 8)])
    batch = {"obs": obs, "next_obs": obs.roll(1, 1), "action": torch.as_tensor(rng.integers(0, 4, 8)),
             "reward": torch.randn(8), "terminated": torch.zeros(8, dtype=torch.bool)}
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="beta_dqn", wandb="disabled", two_q=True))
    total, metrics = beta_dqn.loss(two.nets, two.frozen, batch, 0.9, method_settings(cfg))
    one_q = method_settings(cfg.replaced(two_q=False))
    base, base_metrics = beta_dqn.loss(two.nets, two.frozen, batch, 0.9, one_q)
    full, _ = dqn.q_loss(two.nets["q_full"], two.frozen["q_full"], batch, batch["reward"], 0.9, cfg.loss)
    torch.testing.assert_close(total, base + full)
    torch.testing.assert_close(metrics["loss_q_full"], full.detach())
    assert metrics["loss_q"] == base_metrics["loss_q"]


def test_two_q_changes_only_pi_cors_optimistic_term():
    rng = np.random.default_rng(0)
    q = np.array([1.0, 2.0, 5.0, 0.0])  # in-sample Q; β supports actions 0 and 1 only
    beta = np.array([0.5, 0.45, 0.03, 0.02])
    q_full = np.array([0.0, 0.0, 0.0, 9.0])  # the unconstrained Q prefers action 3
    assert pi_cor(q, beta, 1.0, 0.05, rng) == 2  # one Q: argmax Q
    assert pi_cor(q, beta, 1.0, 0.05, rng, q_full) == 3  # two Q: argmax of the optimistic one
    # α = 0 (pure exploitation) and π_cov do not look at it
    assert pi_cor(q, beta, 0.0, 0.05, rng, q_full) == pure_exploitation(q, beta, 0.05, rng) == 1
    arms = policy_set("13")
    for seed in range(20):
        a = act_beta_dqn(arms[0], q, beta, 0.05, np.random.default_rng(seed), None, "off")
        b = act_beta_dqn(arms[0], q, beta, 0.05, np.random.default_rng(seed), None, "off", q_full)
        assert a == b


def test_two_q_is_refused_for_other_algorithms():
    with pytest.raises(ConfigError, match="--two-q: is a β-DQN ablation; --algo is dqn"):
        Config.of(algo="dqn", two_q=True)


@pytest.mark.parametrize("name,size", [("13", 13), ("8", 8), ("23", 23), ("cov", 1), ("cor0", 1), ("cor1", 1)])
def test_policy_set_size_is_the_bandits_and_the_actors_arm_count(name, size):
    cfg, spec = resolve(Config.of(env="CliffWalk", policy_set=name, actors=1, wandb="disabled"))
    parts = build(cfg, spec, SerialBackend(), [None])
    assert parts.arm_source.n_arms == size
    assert len(parts.actors[0].acting.arms) == size
    assert parts.arm_source.select() in range(size)


def _values(q, beta):
    return {"q": np.asarray(q, dtype=np.float64), "beta": np.asarray(beta)}


def test_basic_policies_are_argmin_beta_pure_exploitation_and_argmax_q():
    cfg, spec = resolve(Config.of(env="CliffWalk", wandb="disabled"))
    ev = Evaluator(settings(EvaluatorSettings, cfg), spec, seed=0)
    v, rng = _values([1.0, 2.0, 5.0, 0.0], [0.5, 0.45, 0.03, 0.02]), np.random.default_rng(0)
    assert ev.acting.evaluate("argmin_beta", v, rng) == 3
    assert ev.acting.evaluate("main", v, rng) == 1  # pure exploitation: the best supported action
    assert ev.acting.evaluate("argmax_q", v, rng) == 2
    two_q = {**v, "q_full": np.array([0.0, 0, 0, 9])}
    assert ev.acting.evaluate("argmax_q", two_q, rng) == 3  # two Q: the optimistic one


@pytest.mark.parametrize("eval_basic", [True, False])
def test_basic_policy_evaluation_is_recorded_beside_the_main_one(eval_basic):
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", wandb="disabled", eval_basic=eval_basic,
                               eval_episodes=2))
    learner = solo(cfg, spec)
    ev = Evaluator(settings(EvaluatorSettings, cfg), spec, seed=0)
    result = ev.evaluate(learner.weights(), 100)
    basic = {f"{p}_{k}" for p in ("argmin_beta", "argmax_q") for k in ("return_mean", "return_std", "success_rate")}
    assert basic <= set(result) if eval_basic else not basic & set(result)
    assert result["episodes"] == 2


def test_dqn_evaluation_has_no_basic_policies():
    cfg, spec = resolve(Config.of(env="CliffWalk", algo="dqn", eval_episodes=1, wandb="disabled"))
    result = Evaluator(settings(EvaluatorSettings, cfg), spec, seed=0).evaluate(solo(cfg, spec).weights(), 10)
    assert not any(k.startswith(("argmin", "argmax")) for k in result)


def test_two_q_actor_acts_with_the_optimistic_q():
    """End to end in one actor: π_cor(1) under two Q follows q_full's preference."""
    from actors.actor import Actor, ActorSettings
    from tests.test_actor import FakeArms, biased_net

    cfg, spec = resolve(Config.of(env="CliffWalk", two_q=True, learning_starts=0, envs_per_actor=1,
                               policy_set="cor1", wandb="disabled"))
    replay = FakeReplay()
    actor = Actor(settings(ActorSettings, cfg), spec, 0, FakeArms(0), replay)
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0), "q_full": biased_net(spec, 1)}
    actor.collect(20, weights, 0, 0)
    assert set(replay.chunks[0]["action"]) == {1}


def test_the_main_evaluation_is_the_same_with_or_without_the_basic_policies():
    """Each evaluated policy has its own environment and rng: switching --eval-basic changes nothing else."""
    results = {}
    for flag in (True, False):
        cfg, spec = resolve(Config.of(env="CliffWalk", eval_basic=flag, eval_episodes=6, eval_epsilon=0.5,
                                   wandb="disabled"))
        ev, weights = Evaluator(settings(EvaluatorSettings, cfg), spec, seed=0), solo(cfg, spec).weights()
        results[flag] = [ev.evaluate(weights, step) for step in (1, 2)]
    main = ("return_mean", "return_std", "success_rate")
    for with_basic, without in zip(results[True], results[False], strict=True):
        assert [with_basic[k] for k in main] == pytest.approx([without[k] for k in main], nan_ok=True)
    assert results[True][0]["return_std"] > 0 or results[True][1]["return_std"] > 0  # episodes differ: a real check
