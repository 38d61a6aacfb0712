"""The same run with its parts as Ray actors (2 actors, one shared local cluster)."""

import json

import pytest
import torch

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.driver.run import Run

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("replay,shards,arm_exchange", [("memory", 1, "chunk"), ("redis-local", 2, "episode")])
def test_two_actors_on_ray(ray_cluster, tmp_path, replay, shards, arm_exchange):
    cfg, spec = resolve(Config.of(env="CliffWalk", runtime="ray", actors=2, envs_per_actor=2, replay=replay,
                               replay_shards=shards, arm_exchange=arm_exchange,
                               total_steps=12_000, learning_starts=1000, chunk_steps=64, eval_every=4000,
                               eval_episodes=5, wandb="disabled", progress=False, log_every=0.5,
                               out=str(tmp_path / "ray")))
    run = Run(cfg, spec)
    summary = run.run()
    # transitions reach the replay: every env step was inserted exactly once
    assert summary["env_steps"] == 12_000 and summary["replay_inserted"] == 12_000
    # weights reach the actors: each actor acted with several, increasing versions
    for first, last in run.actor_versions:
        assert 0 <= first < last <= summary["weight_versions"]
    # the bandit receives every finished episode that was played under an arm, before the checkpoint
    ckpt = torch.load(tmp_path / "ray" / "checkpoint.pt")
    assert summary["arm_episodes"] > 20
    assert len(ckpt["arm_source"]["window"]) == summary["arm_episodes"] == ckpt["arm_source"]["reported"]
    # with `episode`, episodes still running at the end hold their arms as pending, no more (with `chunk`,
    # the arms held for the next episodes too: tests/test_actor.py counts them exactly)
    if arm_exchange == "episode":
        assert sum(ckpt["arm_source"]["pending"]) <= cfg.actors * cfg.envs_per_actor
    assert summary["bandit"]["lag"]["max"] >= 1  # two actors' episodes overlap: arms are chosen late
    # both actors collected at the same time
    assert run.max_inflight == cfg.actors
    # the replay ratio is held within ±5% over the run
    assert summary["replay_ratio"] == pytest.approx(0.25, rel=0.05)
    # where the actors' time went: acting, inserting (a round trip to a replay actor or a Redis server), waiting
    t = summary["throughput"]
    fractions = [t[f"actor_{k}_fraction"] for k in ("busy", "insert", "idle")]
    assert sum(fractions) == pytest.approx(1.0) and all(0 < f < 1 for f in fractions)
    lines = [json.loads(line) for line in (tmp_path / "ray" / "metrics.jsonl").read_text().splitlines()]
    # every log interval that received chunks reports their weight staleness, in versions
    with_chunks = [line for line in lines if line["env_steps_per_s"] > 0]
    assert with_chunks and all(0 <= line["staleness_p95"] <= summary["weight_versions"] for line in with_chunks)
    evals = (tmp_path / "ray" / "evals.csv").read_text().splitlines()
    assert [int(row.split(",")[0]) for row in evals[1:]] == [4000, 8000, 12_000]
    # the run's actors (and Redis servers) are gone; the shared cluster is still up for other tests
    assert ray_cluster.is_initialized()
    assert not hasattr(run.replay, "servers") or all(s.process is None for s in run.replay.servers)


def test_a_killed_actor_process_is_restarted_and_the_run_completes(ray_cluster, tmp_path):
    import os
    import signal
    import threading
    import time

    cfg, spec = resolve(Config.of(env="CliffWalk", runtime="ray", actors=2, envs_per_actor=2, total_steps=16_000,
                               learning_starts=1000, eval_every=8000, eval_episodes=3, wandb="disabled",
                               progress=False, out=str(tmp_path / "kill")))
    run = Run(cfg, spec)
    victim = ray_cluster.get(run.parts.actors[0].process_id.remote())
    killed_at = {}

    def kill_when_running():
        deadline = time.monotonic() + 120
        while run.state.env_steps < 4000 and time.monotonic() < deadline:
            time.sleep(0.01)
        killed_at["version"] = run.learner.version
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    summary = run.run()
    killer.join()
    assert summary["env_steps"] == 16_000 and summary["replay_inserted"] >= 16_000
    # the killed actor came back (a new process) and kept contributing chunks with newer weights
    assert run.actor_versions[0][1] > killed_at["version"]
    assert run.actor_versions[1][1] > killed_at["version"]


@pytest.mark.parametrize("algo,replay", [("bootstrapped_dqn", "memory"), ("lesson", "redis-local")])
def test_baselines_on_ray(ray_cluster, tmp_path, algo, replay):
    """What differs on Ray for the baselines: each actor process draws its own heads (Bootstrapped DQN), and
    LESSON's options travel through the replay (here Redis: msgpack records) to the learner."""
    cfg, spec = resolve(Config.of(env="CliffWalk", algo=algo, runtime="ray", actors=2, envs_per_actor=2, replay=replay,
                               total_steps=6000, learning_starts=1000, eval_every=3000, eval_episodes=3,
                               wandb="disabled", progress=False, log_every=0.5, out=str(tmp_path / algo)))
    run = Run(cfg, spec)
    summary = run.run()
    assert summary["env_steps"] == 6000 and summary["replay_inserted"] == 6000
    assert summary["replay_rejected"] == {}
    if algo == "lesson":  # after the warm-up the actors ran every option, and the learner's batches had them
        lines = [json.loads(line) for line in (tmp_path / algo / "metrics.jsonl").read_text().splitlines()]
        last = lines[-1]
        shares = [last[f"option_share_{o}"] for o in ("random", "repeat", "intrinsic", "greedy")]
        assert sum(shares) == pytest.approx(1.0) and min(shares) > 0
