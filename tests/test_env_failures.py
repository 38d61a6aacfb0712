"""An environment of the user's that fails mid-run (issue: a user environment's errors mid-run were 38–56-line
tracebacks): its exception, an observation of another shape, a non-finite observation or the old Gym API is one
line naming the environment and its step, on both runtimes and in `learner.evaluate`; the run's last checkpoint is
kept. The built-in families run unwrapped, so the paper's runs pay nothing for the check."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from actors.envs import EnvFailed, UnknownEnvError, env_spec, make_env

ROOT = Path(__file__).resolve().parents[1]
MODULE = '''
import gymnasium as gym
import numpy as np


class Bad(gym.Env):
    """Fine for `at` steps of each instance, then fails as `mode` says."""

    def __init__(self, mode="raise", at=60, shape=(3,)):
        self.mode, self.at, self.t = mode, at, 0
        self.observation_space = gym.spaces.Box(-1, 1, shape=tuple(shape), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs = np.zeros(self.observation_space.shape, np.float32)
        return obs if self.mode == "oldapi" and self.t >= self.at else (obs, {})

    def step(self, action):
        self.t += 1
        obs = np.zeros(self.observation_space.shape, np.float32)
        if self.t >= self.at:
            if self.mode == "raise":
                raise ValueError("the simulator lost its state")
            if self.mode == "shape":
                obs = np.zeros(4, np.float32)
            if self.mode == "inf":
                obs[0] = np.inf
        return obs, 0.0, self.t % 20 == 0, False, {}


gym.register("Bad-v0", entry_point=Bad, max_episode_steps=50)
'''
SAYS = {"raise": "at its step 60: ValueError: the simulator lost its state",
        "shape": "at its step 60: an observation of shape (4,), where its observation space says (3,)",
        "inf": "at its step 60: a non-finite observation (nan or inf)",
        "oldapi": "at its reset: it returned ndarray, not (observation, info): the Gymnasium API (0.26 and later)"}


@pytest.fixture
def user_dir(tmp_path):
    (tmp_path / "badenvs.py").write_text(MODULE)
    return tmp_path


def _command(cwd, module, *args):
    env = {**os.environ, "PYTHONPATH": f"{cwd}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _train(cwd, mode, runtime, out, at=60, total=2000):
    return _command(cwd, "learner.main", "--env", "badenvs:Bad-v0", "--env-kwargs", f'{{"mode": "{mode}", "at": {at}}}',
                    "--algo", "dqn", "--runtime", runtime, "--actors", "2", "--total-steps", str(total),
                    "--learning-starts", "200", "--eval-every", "1000", "--eval-episodes", "2",
                    "--checkpoint-every", "1000", "--progress", "false", "--wandb", "disabled", "--out", str(out))


@pytest.mark.parametrize("mode", list(SAYS))
def test_a_failure_mid_run_is_one_line_naming_the_env_and_its_step(user_dir, mode):
    done = _train(user_dir, mode, "serial", user_dir / "run")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("python -m learner.main: env 'badenvs:Bad-v0' ") and SAYS[mode] in lines[0], lines


@pytest.mark.integration
def test_a_failure_in_a_ray_actor_is_the_same_one_line(user_dir):
    done = _train(user_dir, "raise", "ray", user_dir / "run")
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "python -m learner.main: env 'badenvs:Bad-v0' at its step 60: ValueError: the simulator lost its state; "
        "the run stopped (its last checkpoint, if it wrote one, is kept)")


def test_the_checkpoint_before_the_failure_is_kept_and_evaluate_says_the_failure_in_one_line(user_dir):
    out = user_dir / "run"
    # each of the 2 actors × 4 envs gets about 250 of 2,000 steps: the checkpoint at 1,000 is written first
    done = _train(user_dir, "raise", "serial", out, at=200)
    assert done.returncode == 1 and "at its step 200" in done.stderr, done.stderr[-3000:]
    assert (out / "checkpoint.pt").is_file()
    again = _command(user_dir, "learner.evaluate", str(out), "--episodes", "20", "--env", "badenvs:Bad-v0")
    lines = again.stderr.strip().splitlines()
    assert again.returncode == 1 and len(lines) == 1, again.stderr[-3000:]
    assert "env 'badenvs:Bad-v0' at its step 200: ValueError: the simulator lost its state" in lines[0]


def test_the_check_costs_the_built_in_families_nothing_and_wraps_the_others():
    assert type(make_env("CliffWalk", seed=0)).__name__ == "CliffWalk"  # unwrapped
    env = make_env("CartPole-v1", seed=0)
    assert type(env).__name__ == "Checked"
    obs, _ = env.reset(seed=0)
    assert env.step(0)[0].shape == obs.shape == (4,)


def test_a_0d_observation_space_is_refused_before_the_run(user_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(user_dir))
    with pytest.raises(UnknownEnvError, match="has a 0-d observation space"):
        env_spec("badenvs:Bad-v0", '{"shape": []}')


def test_float_observations_of_a_whole_number_space_are_refused_not_truncated(user_dir, monkeypatch):
    (user_dir / "floaty.py").write_text(
        "import gymnasium as gym, numpy as np\n"
        "class F(gym.Env):\n"
        "    observation_space = gym.spaces.Box(0, 255, shape=(2,), dtype=np.uint8)\n"
        "    action_space = gym.spaces.Discrete(2)\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        return np.zeros(2, np.uint8), {}\n"
        "    def step(self, a):\n"
        "        return np.full(2, 0.7), 0.0, False, False, {}\n"
        "gym.register('Floaty-v0', entry_point=F, max_episode_steps=10)\n")
    monkeypatch.syspath_prepend(str(user_dir))
    env = make_env("floaty:Floaty-v0", seed=0)
    with pytest.raises(EnvFailed, match="an observation of float64 where its observation space holds uint8"):
        env.step(0)


def test_a_module_that_exits_while_imported_is_one_line_not_exit_0(user_dir):
    (user_dir / "quits.py").write_text("import sys\nsys.exit(0)\n")
    done = _command(user_dir, "learner.main", "--env", "quits:Q-v0", "--runtime", "serial", "--out",
                    str(user_dir / "run"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "module 'quits' called sys.exit(0) while being imported" in done.stderr


def test_the_error_is_an_exception_to_catch_in_python(user_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(user_dir))
    env = make_env("badenvs:Bad-v0", seed=0, kwargs='{"mode": "raise", "at": 2}')
    env.step(np.int64(0))
    with pytest.raises(EnvFailed, match="at its step 2: ValueError"):
        env.step(0)


def test_the_stall_watch_says_a_stall_once_and_never_while_things_move():
    """`watch_stalls` on a clock of the test's own: no timing, so no load can move the outcome."""
    from beta_dqn.driver.signals import watch_stalls

    # progress per tick (a tick is stall/4 = 2.5 s): moving, then stuck for 10 ticks, moving, stuck again for 5
    counters = [*range(8), *[8] * 10, *range(9, 14), *[14] * 5]
    clock, said, ticks = [0.0], [], iter(counters)

    def wait(seconds):
        clock[0] += seconds
        return clock[0] > 2.5 * (len(counters) - 1)

    watch_stalls(lambda: (next(ticks),), 10.0, wait, clock=lambda: clock[0], say=said.append)
    assert len(said) == 2, said  # one a stall (10 ticks = 25 s; 5 ticks = 12.5 s), none while moving
    assert said[0].startswith("warning: no env step, update or evaluation for 0.167 minutes (env step 8)")
    assert "(env step 14)" in said[1]
    said.clear()
    ticks = iter(range(len(counters)))
    clock[0] = 0.0
    watch_stalls(lambda: (next(ticks),), 10.0, wait, clock=lambda: clock[0], say=said.append)
    assert said == []


def test_a_run_that_makes_no_progress_says_so_and_goes_on(user_dir, monkeypatch, capfd):
    """An environment that hangs for 3 s once (a stall of 1 s, set here, where a run's is 10 minutes): one warning
    line while it hangs, and the run ends as it would have."""
    from beta_dqn import train
    from beta_dqn.driver import signals

    (user_dir / "slowenv.py").write_text(
        "import time, gymnasium as gym, numpy as np\n"
        "class Slow(gym.Env):\n"
        "    observation_space = gym.spaces.Box(0, 1, shape=(2,), dtype=np.float32)\n"
        "    action_space = gym.spaces.Discrete(2)\n"
        "    t = 0\n"
        "    def reset(self, *, seed=None, options=None):\n"
        "        return np.zeros(2, np.float32), {}\n"
        "    def step(self, a):\n"
        "        Slow.t += 1\n"
        "        if Slow.t == 150:\n"
        "            time.sleep(3)\n"
        "        return np.zeros(2, np.float32), 0.0, Slow.t % 10 == 0, False, {}\n"
        "gym.register('Slow-v0', entry_point=Slow, max_episode_steps=20)\n")
    monkeypatch.syspath_prepend(str(user_dir))
    monkeypatch.setattr(signals, "STALL_SECONDS", 1.0)
    run = train(env="slowenv:Slow-v0", algo="dqn", runtime="serial", actors=1, envs_per_actor=1, total_steps=400,
                learning_starts=100, eval_every=400, eval_episodes=1, wandb="disabled", progress=False,
                out=str(user_dir / "run"))
    err = capfd.readouterr().err
    assert run.summary["env_steps"] == 400
    assert "warning: no env step, update or evaluation for 0.0167 minutes (env step " in err, err
    assert "the run goes on" in err
