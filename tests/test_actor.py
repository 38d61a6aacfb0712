"""The episode loop: arms per episode, the bandit's bonus B, warm-up, chunks, weight versions."""

import numpy as np
import pytest
import torch

from actors.actor import Actor, ActorSettings
from beta_dqn.configuration.flags import Config, resolve, settings
from learner.methods.beta_dqn.policies import is_exploitation
from learner.methods.networks import make_network, to_numpy


class FakeArms:
    def __init__(self, arm):
        self.arm, self.reports = arm, []

    def select(self):
        return self.arm

    def report(self, arm, ret, bonus):
        self.reports.append((arm, ret, bonus))

    def exchange(self, reports, n, returned=(), holder=None):
        for arm, ret, bonus, _stamp in reports:
            self.report(arm, ret, bonus)
        return [self.select() for _ in range(n)], len(self.reports)


class FakeReplay:
    def __init__(self):
        self.chunks = []

    def insert(self, chunk):
        self.chunks.append(chunk)
        return sum(len(c["action"]) for c in self.chunks)


def biased_net(spec, action):
    """A network whose output is dominated by a bias towards `action`, whatever the state."""
    net = make_network(spec.obs_shape, spec.n_actions)
    with torch.no_grad():
        net.out.weight.zero_()
        net.out.bias.zero_()
        net.out.bias[action] = 10.0
    return to_numpy(net)


def make_actor(arm, learning_starts=0, policy_set="13"):
    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=learning_starts, envs_per_actor=2,
                               policy_set=policy_set, wandb="disabled"))
    arms, replay = FakeArms(arm), FakeReplay()
    actor = Actor(settings(ActorSettings, cfg), spec, actor_id=0, arm_source=arms, replay=replay)
    # β is certain of action 0 (up): only "up" is supported, so pure exploitation is always "up";
    # Q prefers action 2 (down), which β does not support.
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0)}
    return actor, arms, replay, weights


def test_bonus_is_the_fraction_of_steps_off_pure_exploitation():
    # arm 12 = π_cor(1): greedy on Q -> "down" at every step, never the exploitation action
    actor, arms, replay, weights = make_actor(arm=12)
    stats = actor.collect(400, weights, version=7)
    assert stats["steps"] == 400 and stats["version"] == 7
    assert len(replay.chunks) == 1 and len(replay.chunks[0]["action"]) == 400
    assert np.all(replay.chunks[0]["action"] == 2)
    assert arms.reports and all(b == 1.0 and arm == 12 for arm, _, b in arms.reports)
    # "down" at the start stays on the start cell: 400 steps over 2 environments are four
    # 100-step episodes, all truncated with return 0
    assert len(stats["episodes"]) == 4 and all(ep["return"] == 0.0 for ep in stats["episodes"])
    # arm 2 = π_cor(0): pure exploitation at every step -> B = 0
    actor, arms, replay, weights = make_actor(arm=2)
    actor.collect(400, weights, version=0)
    assert np.all(replay.chunks[0]["action"] == 0)
    assert arms.reports and all(b == 0.0 for _, _, b in arms.reports)


def test_warm_up_episodes_are_random_and_not_reported():
    actor, arms, replay, weights = make_actor(arm=2, learning_starts=10_000)
    stats = actor.collect(600, weights, version=0, global_step=0)
    actions = replay.chunks[0]["action"]
    assert len(set(actions.tolist())) == 4  # uniform random, not the policy's constant "up"
    assert stats["episodes"] and all(ep["arm"] is None for ep in stats["episodes"])
    assert arms.reports == []


def test_chunks_carry_exact_step_counts_across_uneven_calls():
    actor, _, replay, weights = make_actor(arm=2)
    actor.collect(5, weights, version=0)  # 2 envs: 2 + 2 + 1 steps
    actor.collect(64, None, version=0)
    assert [len(c["action"]) for c in replay.chunks] == [5, 64]
    with pytest.raises(RuntimeError):
        make_actor(arm=2)[0].collect(4)  # no weights yet


class SlowFuture:
    """An arm that arrives after a few polls, like a remote answer."""

    def __init__(self, arm, polls):
        self.arm, self.polls, self.left, self.taken = arm, 0, polls, False

    def done(self):
        self.polls += 1
        self.left -= 1
        return self.left <= 0

    def result(self):
        self.taken = True
        return [self.arm], 0


class AsyncArms(FakeArms):
    def __init__(self, arm):
        super().__init__(arm)
        self.futures = []

    def exchange_async(self, reports, n, returned=(), holder=None):
        assert n == 1 and len(reports) == 1 and not returned  # --arm-exchange episode: one episode, one arm
        self.report(*reports[0][:3])
        self.futures.append(SlowFuture(self.arm, polls=5))
        return self.futures[-1]


def test_an_env_waiting_for_its_next_arm_lets_the_others_step():
    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=1, envs_per_actor=2, arm_exchange="episode",
                               wandb="disabled"))
    arms, replay = AsyncArms(12), FakeReplay()  # π_cor(1) goes down: 100-step episodes to the time limit
    actor = Actor(settings(ActorSettings, cfg), spec, actor_id=0, arm_source=arms, replay=replay)
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0)}
    stats = actor.collect(450, weights, version=0, global_step=0)
    assert stats["steps"] == 450 and len(replay.chunks[0]["action"]) == 450
    # env 0 starts in the warm-up (random, its own episode length), env 1 under the arm: their episodes
    # end at different steps, and the one that waits is polled while the other keeps stepping
    assert arms.reports and any(f.polls >= 5 for f in arms.futures)
    assert all(f.taken for f in arms.futures[:-2])  # every arm but the newest ones was taken
    assert np.all(replay.chunks[0]["action"][250:] == 2)  # and acted on (the warm-up episode is ≤ 100 steps)


def test_is_exploitation_counts_ties_as_exploitation():
    q = np.array([1.0, 3.0, 3.0])
    beta = np.array([0.4, 0.3, 0.3])
    assert is_exploitation(1, q, beta, 0.05) and is_exploitation(2, q, beta, 0.05)
    assert not is_exploitation(0, q, beta, 0.05)
    assert not is_exploitation(1, q, np.array([0.5, 0.01, 0.49]), 0.05)  # unsupported action


def test_an_episode_that_spans_learning_starts_gets_an_arm_at_the_crossing():
    # arm 12 = π_cor(1) acts "down" (action 2); random before step 150, the arm from step 150 on
    actor, arms, replay, weights = make_actor(arm=12, learning_starts=150)
    actor.collect(400, weights, version=0, global_step=0)
    actions = replay.chunks[0]["action"]
    assert len(set(actions[:100].tolist())) > 1  # uniformly random in the warm-up
    assert np.all(actions[150:] == 2)  # every step after learning_starts follows the arm
    # the episodes that crossed were reported; B counts only the steps acted under the arm
    assert arms.reports and all(arm == 12 and b == 1.0 for arm, _, b in arms.reports)


def test_actor_streams_are_independent_of_each_other():
    a, _, _, _ = make_actor(arm=2)
    # the acting rng and each environment's rng come from distinct seeds
    draws = [a.rng.random()] + [env.np_random.random() for env in a.envs]
    assert len(set(draws)) == len(draws)


class CountingArms(FakeArms):
    """Hands out arms 12 and 2 in turn (both 100-step CliffWalk episodes here); records every exchange."""

    def __init__(self):
        super().__init__(12)
        self.calls, self.handed, self.replay = [], 0, None

    def exchange(self, reports, n, returned=(), holder=None):
        for arm, ret, bonus, _stamp in reports:
            self.report(arm, ret, bonus)
        arms = [(12, 2)[self.handed + k & 1] for k in range(n)]
        self.handed += n
        self.calls.append({"reports": [r[0] for r in reports], "n": n, "returned": list(returned), "arms": arms,
                           "chunks_in_replay": len(self.replay.chunks) if self.replay else None})
        return arms, len(self.reports)


def test_chunk_exchange_is_one_call_per_collect_and_arms_are_taken_in_the_order_handed_out():
    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=0, envs_per_actor=2, arm_exchange="chunk",
                               wandb="disabled"))
    assert cfg.value("arm_exchange") == "chunk"
    arms, replay = CountingArms(), FakeReplay()
    arms.replay = replay
    actor = Actor(settings(ActorSettings, cfg), spec, actor_id=0, arm_source=arms, replay=replay)
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0)}
    actor.collect(400, weights, version=0)  # 2 envs × two 100-step episodes; nothing in hand at first
    # it asked as it went (1, 1, then 2 arms when the first 2 episodes had ended), then at its end: the
    # chunk's 4 episodes (once the chunk was in the replay), and 4 + 1 arms for the next chunk
    assert [(len(c["reports"]), c["n"], c["returned"]) for c in arms.calls] == [(0, 1, []), (0, 1, []), (0, 2, []),
                                                                               (4, 5, [])]
    assert arms.calls[-1]["chunks_in_replay"] == 1  # reported after the chunk's insert
    for _ in range(3):  # from then on: the arms in hand serve the chunk, and one call at its end
        before = arms.calls[-1]
        stats = actor.collect(400, None, version=0)
        call = arms.calls[-1]
        assert len(arms.calls) == 5 + _
        # its 4 episodes played the first 4 arms handed out a chunk ago, in order; the fifth comes back
        assert call["reports"] == before["arms"][:4] == [ep["arm"] for ep in stats["episodes"]]
        assert call["returned"] == before["arms"][4:] and call["n"] == 5


def test_chunk_exchange_keeps_the_pending_rule_across_actors():
    from meta_controller.bandit import SlidingWindowBandit

    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=0, envs_per_actor=2, arm_exchange="chunk",
                               wandb="disabled"))
    bandit = SlidingWindowBandit(13, cfg.value("bandit_window"), 0)
    handed = []
    real = bandit.exchange

    def exchange(reports, n, returned=(), holder=None):
        arms, stamp = real(reports, n, returned, holder)
        handed.extend(arms)
        return arms, stamp

    bandit.exchange = exchange
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0)}
    actors = [Actor(settings(ActorSettings, cfg), spec, i, bandit, FakeReplay()) for i in range(3)]
    for round_ in range(6):
        for actor in actors:  # each actor's episodes, and the arms it asks ahead for its next chunk
            actor.collect(100, weights if round_ == 0 else None, version=0)
            actor._receive_arms()
        # pending counts exactly the arms of running episodes and the arms held for the next ones
        running = [ep.arm for actor in actors for ep in actor.episodes if ep is not None and ep.arm is not None]
        held = [arm for actor in actors for arm, _ in actor.arms]
        assert held and bandit.pending.tolist() == np.bincount(running + held, minlength=13).tolist()
    # before any arm was played twice, the 13 arms were each handed out once (held ones count as played)
    assert handed[:13] == list(range(13))
    assert bandit.reported > 10 and bandit.lag()["max"] > 0


class LateArms(FakeArms):
    """A remote arm source whose answers come late: the report counts only once its answer is taken."""

    def __init__(self, arm):
        super().__init__(arm)
        self.futures = []

    def exchange_async(self, reports, n, returned=(), holder=None):
        arms = self

        class Late(SlowFuture):
            def result(self):
                if not self.taken:
                    for arm, ret, bonus, _stamp in reports:
                        arms.report(arm, ret, bonus)
                self.taken = True
                return [arms.arm] * n, 0

        self.futures.append(Late(self.arm, polls=10**9))  # never done by itself
        return self.futures[-1]


@pytest.mark.parametrize("arm_exchange", ["episode", "chunk"])
def test_settle_waits_for_the_answer_to_every_report_sent(arm_exchange):
    """Before the run saves the bandit's state it settles every actor: each report the actor sent is then
    answered (the bandit has it), so the checkpoint's bandit holds every episode the run counted."""
    cfg, spec = resolve(Config.of(env="CliffWalk", learning_starts=0, envs_per_actor=2, arm_exchange=arm_exchange,
                               wandb="disabled"))
    arms, replay = LateArms(12), FakeReplay()
    actor = Actor(settings(ActorSettings, cfg), spec, actor_id=0, arm_source=arms, replay=replay)
    weights = {"q": biased_net(spec, 2), "beta": biased_net(spec, 0)}
    finished = 0
    for _ in range(3):
        finished += len(actor.collect(250, weights, version=0)["episodes"])
    assert finished >= 4 and len(arms.reports) < finished  # answers still on their way
    actor.settle()
    assert len(arms.reports) == finished and all(f.taken for f in arms.futures)
