"""Faults of the Redis replay: a server that restarts is waited for and loses no acknowledged insert; one
that stays down past --replay-timeout stops the run with a checkpoint and one line."""

import threading
import time

import pytest
import torch

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.driver.run import Run

pytestmark = pytest.mark.integration


def redis_run(tmp_path, **kw):
    base = dict(env="CliffWalk", runtime="serial", actors=2, envs_per_actor=2, total_steps=12_000,
                learning_starts=1000, eval_every=6000, eval_episodes=3, replay="redis-local", replay_persist=True,
                wandb="disabled", progress=False, out=str(tmp_path / "run"))
    base.update(kw)
    return Run(*resolve(Config.of(**base)))


def when(run, steps, action):
    def go():
        deadline = time.monotonic() + 120
        while run.state.env_steps < steps and time.monotonic() < deadline:
            time.sleep(0.005)
        action()
    thread = threading.Thread(target=go)
    thread.start()
    return thread


def test_a_restarted_redis_server_loses_no_acknowledged_insert(tmp_path):
    run = redis_run(tmp_path)
    server, events = run.replay.servers[0], []

    def restart():
        server.stop()  # the run pauses, retrying
        events.append(("down", run.state.env_steps))
        time.sleep(1.0)
        server.start()  # same port, password and directory: the append-only file is read back
        events.append(("up", run.state.env_steps))

    thread = when(run, 3000, restart)
    summary = run.run()
    thread.join()
    assert [e for e, _ in events] == ["down", "up"] and events[1][1] < 12_000  # it happened mid-run
    assert summary["env_steps"] == 12_000
    assert summary["replay_inserted"] >= summary["env_steps"]  # every counted chunk is still there


def test_a_server_down_past_the_timeout_stops_the_run_with_a_checkpoint(tmp_path):
    from replay_service.redis_shard import ReplayUnavailable

    run = redis_run(tmp_path, replay_timeout=1.5)
    thread = when(run, 3000, run.replay.servers[0].stop)
    with pytest.raises(ReplayUnavailable) as err:
        run.run()
    thread.join()
    message = str(err.value)
    assert "did not answer for 1.5 s" in message and "checkpoint written at env step" in message
    assert "\n" not in message and run.replay.servers[0].password not in message
    saved = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert 3000 <= saved["counters"]["env_steps"] < 12_000
