"""The run's counters and schedules (`beta_dqn.driver.state.RunState`) through a checkpoint's plain data."""

import numpy as np

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.driver.state import RunState


def test_run_state_round_trips_through_a_checkpoint_as_the_next_generation():
    cfg, spec = resolve(Config.of(env="CliffWalk", wandb="disabled", total_steps=5000, eval_every=2000))
    state = RunState.new(cfg, spec)
    assert (state.next_target, state.next_eval, state.visits.shape) == (1000, 2000, (48,))
    state.env_steps, state.episodes, state.arm_episodes, state.dispatched = 4096, 30, 20, 64
    state.visits[3] = 7
    state.evals = {2000: {"env_steps": 2000, "return_mean": -5.0}, 4000: None}  # the second still running
    state.target_syncs = [(1000, 0), (2000, 250)]
    state.next_target, state.next_eval, state.wandb_id = 5000, 5000, "abc"
    saved = state.to_checkpoint(updates=774, wall=41.5)
    assert saved["next"]["eval"] == 4000  # an evaluation still running is started again
    back = RunState.from_checkpoint(saved)
    assert back.generation == 1 and back.env_steps == 4096 and back.dispatched == 64
    assert back.evals == {2000: {"env_steps": 2000, "return_mean": -5.0}} and back.next_eval == 4000
    assert back.target_syncs == [(1000, 0), (2000, 250)] and np.array_equal(back.visits, state.visits)
    assert back.wandb_id == "abc" and saved["counters"]["updates"] == 774
    # the seconds of every sitting so far: a resumed run's wall time (and speed) counts them all
    assert back.wall_before == 41.5
    old = {**saved, "counters": {k: v for k, v in saved["counters"].items() if k != "wall_seconds"}}
    assert RunState.from_checkpoint(old).wall_before == 0.0  # a checkpoint from before: this sitting only


def test_a_killed_whole_file_write_leaves_a_temp_name_a_new_run_accepts():
    from beta_dqn.driver.state import _temp_of_an_entry

    for name in ("..written.ab12.tmp", ".checkpoint.pt.x9.tmp", "checkpoint.pt.tmp", ".summary.json.q.tmp"):
        assert _temp_of_an_entry(name), name
    for name in (".notes.txt.q.tmp", "mine.tmp", "checkpoint.pt", "..written"):
        assert not _temp_of_an_entry(name), name
