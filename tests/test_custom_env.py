"""A user's own environment: `--env module:Id` (the module imported here and in every Ray worker) and
`--env-kwargs` (a JSON object for its constructor), on the serial and Ray runtimes and in a grid."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from actors.envs import UnknownEnvError, canonical_kwargs, env_modules, env_spec, make_env
from beta_dqn.configuration.cli import parse_config
from beta_dqn.configuration.flags import ConfigError, resolve, run_command

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "corridor.py"


@pytest.fixture
def user_dir(tmp_path):
    """A directory of the user's, outside the checkout, with their module in it (as `mycorridor`)."""
    shutil.copy(EXAMPLE, tmp_path / "mycorridor.py")
    return tmp_path


def _main(cwd: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the project; the user's module only from the working dir
    return subprocess.run([sys.executable, "-m", "learner.main", *args, "--wandb", "disabled", "--progress",
                           "false"], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_module_id_is_imported_and_kwargs_reach_the_constructor():
    spec = env_spec("examples.corridor:Corridor-v0", '{"length": 5}')
    assert spec.obs_shape == (5,) and spec.n_actions == 2 and spec.env_kwargs == '{"length":5}'
    assert not spec.has_success
    env = make_env(spec.name, seed=0, kwargs=spec.env_kwargs)
    obs, _ = env.reset()
    assert obs.shape == (5,) and env.unwrapped.length == 5
    rewards = [env.step(1)[1] for _ in range(4)]
    assert rewards == [0.0, 0.0, 0.0, 1.0]


def test_config_records_canonical_kwargs_and_the_command_names_them(tmp_path):
    cfg, spec = resolve(parse_config(["--env", "examples.corridor:Corridor-v0", "--env-kwargs", '{ "length" : 4 }',
                                      "--out", str(tmp_path / "r")]))
    assert cfg.env_kwargs == '{"length":4}' and spec.obs_shape == (4,)
    cmd = run_command(cfg.flat())
    assert "--env examples.corridor:Corridor-v0 --env-kwargs '{\"length\":4}'" in cmd
    assert cfg.out.endswith("r") and "examples.corridor-Corridor-v0" in resolve(parse_config(
        ["--env", "examples.corridor:Corridor-v0"]))[0].out  # no ':' in a run directory's name


@pytest.mark.parametrize("env,kwargs,says", [
    ("nomodule_here:Corridor-v0", "", "module 'nomodule_here' cannot be imported (ModuleNotFoundError"),
    ("examples.corridor:Nope-v0", "", "registers no Gymnasium id 'Nope-v0'"),
    ("examples.corridor:", "", "give module:Id"),
    ("examples.corridor:Corridor-v0", '{"lenth": 3}', "cannot be made here with --env-kwargs {\"lenth\":3}"),
    ("MinAtar/Breakout", '{"a": 1}', "MinAtar/Breakout takes no keyword arguments"),
    ("CliffWalk", '{"a": 1}', "CliffWalk takes no keyword arguments"),
    ("NeverRegistered-v0", "", "or module:Id for an id your module registers"),
])
def test_an_env_that_cannot_be_made_is_one_line_naming_what_was_tried(env, kwargs, says):
    with pytest.raises(ConfigError) as e:
        resolve(parse_config(["--env", env, *(["--env-kwargs", kwargs] if kwargs else [])]))
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text,says", [("[1", "is not JSON"), ("{1}", "is not JSON"), ("3", "is a number in JSON"),
                                       ("null", "is null in JSON"), ('[{"a":1},{"a":2}]', "is an array in JSON"),
                                       ('{"a":1,"a":2}', "the key 'a' appears twice")])
def test_bad_env_kwargs_are_one_line(text, says, capsys):
    with pytest.raises(SystemExit) as e:
        parse_config(["--env-kwargs", text])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "--env-kwargs" in err and len(err.splitlines()) == 1


def test_kwargs_are_one_object_in_one_spelling_with_commas_inside():
    cfg = parse_config(["--env-kwargs", '{"length": 4, "zz": 1}', "--seeds", "0-1"])
    assert cfg.env_kwargs == '{"length":4,"zz":1}'  # one value (not a grid axis split at its commas)
    assert canonical_kwargs("") == "" and canonical_kwargs("{}") == ""


def test_workers_are_sent_the_users_module(user_dir, monkeypatch):
    """What Ray is given (`runtime_env`'s py_modules): on one machine a worker finds a module of the driver's
    working directory anyway, so the run on Ray below cannot tell; this can."""
    from beta_dqn.driver.cluster import worker_runtime_env

    monkeypatch.syspath_prepend(str(user_dir))
    env_spec("mycorridor:Corridor-v0")
    given = worker_runtime_env(["mycorridor:Corridor-v0"], X="1")
    assert [m.__name__ for m in given["py_modules"]] == ["mycorridor"] and given["env_vars"]["X"] == "1"
    assert "py_modules" not in worker_runtime_env(["CartPole-v1"])


GRID_ENV = """
import gymnasium as gym
import numpy as np


class Row(gym.Env):
    def __init__(self, length=8):
        self.length, self.state_grid = length, (1, length)  # a one-hot grid: the run counts its visits
        self.observation_space = gym.spaces.Box(0, 1, shape=(length,), dtype=np.uint8)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell, self.t = 0, 0
        return np.eye(self.length, dtype=np.uint8)[0], {}

    def step(self, a):
        self.cell, self.t = min(max(self.cell + (1 if a else -1), 0), self.length - 1), self.t + 1
        done = self.cell == self.length - 1
        return np.eye(self.length, dtype=np.uint8)[self.cell], float(done), done, self.t >= 20, {}


gym.register(id="Row-v0", entry_point=Row)
"""


def test_a_run_of_kwargs_resumes_and_reports_without_its_module(user_dir, tmp_path):
    """Resume checks a run's visit counts against the env as its kwargs made it; a report draws no heatmap of a
    module:Id env (it imports no module of the user's), and runs where the module cannot be imported."""
    (user_dir / "rowenv.py").write_text(GRID_ENV)
    done = _main(user_dir, "--env", "rowenv:Row-v0", "--env-kwargs", '{"length": 4}', "--runtime", "serial",
                 "--total-steps", "600", "--learning-starts", "200", "--eval-every", "600", "--eval-episodes", "1",
                 "--checkpoint-every", "300", "--out", "run")
    assert done.returncode == 0, done.stderr[-2000:]
    import torch

    from beta_dqn.driver.resume import resume_config

    ckpt = torch.load(user_dir / "run" / "checkpoint.pt", weights_only=True)
    assert ckpt["visits"] is not None and len(ckpt["visits"]) == 4
    import sys as _sys

    _sys.path.insert(0, str(user_dir))
    try:
        cfg, _ = resume_config(["--resume", str(user_dir / "run")])
        assert cfg.env_kwargs == '{"length":4}'
        # a checkpoint from before the field: --env-kwargs '{}' (its default's spelling) is no change
        del ckpt["config"]["env_kwargs"]
        torch.save(ckpt, user_dir / "run" / "checkpoint.pt")
        (user_dir / "run" / "config.json").write_text(json.dumps(
            {k: v for k, v in json.loads((user_dir / "run" / "config.json").read_text()).items()
             if k != "env_kwargs"}))
        # (past the check of flags given again: its env is then made without the kwargs, 8 cells, not 4)
        with pytest.raises(ConfigError, match="its state visits are not a list of 8 counts"):
            resume_config(["--resume", str(user_dir / "run"), "--env-kwargs", "{}"])
    finally:
        _sys.path.remove(str(user_dir))
    report = subprocess.run([sys.executable, "-m", "learner.report", str(user_dir / "run"), "--out",
                             str(tmp_path / "report")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert not list((tmp_path / "report").glob("visits_*")) and not list((tmp_path / "report").glob("*:*"))


def test_only_the_users_own_modules_are_shipped_to_ray(user_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(user_dir))
    env_spec("mycorridor:Corridor-v0")
    shipped = env_modules(["mycorridor:Corridor-v0", "CartPole-v1", "MinAtar/Breakout"])
    assert [m.__name__ for m in shipped] == ["mycorridor"]
    # an installed package (site-packages: every node has it as this one does) is not
    assert env_modules(["gymnasium.envs.classic_control:CartPole-v1"]) == []


def test_a_custom_env_runs_serial_on_ray_and_in_a_grid(user_dir):
    flags = ["--env", "mycorridor:Corridor-v0", "--env-kwargs", '{"length": 4}', "--total-steps", "1200",
             "--learning-starts", "400", "--eval-every", "1200", "--eval-episodes", "2", "--checkpoint-every", "1200"]
    serial = _main(user_dir, *flags, "--runtime", "serial", "--out", "serial", "--json", "true")
    assert serial.returncode == 0, serial.stderr[-2000:]
    ray_run = _main(user_dir, *flags, "--runtime", "ray", "--actors", "4", "--out", "ray", "--json", "true")
    assert ray_run.returncode == 0, ray_run.stderr[-2000:]
    for name, done in (("serial", serial), ("ray", ray_run)):
        summary = json.loads(done.stdout)
        config = json.loads((user_dir / name / "config.json").read_text())
        assert summary["env_steps"] == 1200 and summary["env"] == "mycorridor:Corridor-v0"
        assert config["env_kwargs"] == '{"length":4}'
    grid = _main(user_dir, *flags, "--algo", "beta_dqn,dqn", "--seeds", "0", "--out", "grid")
    assert grid.returncode == 0, grid.stderr[-2000:]
    made = sorted(p.parent.name for p in (user_dir / "grid").glob("*/summary.json"))
    assert made == ["mycorridor-Corridor-v0_beta_dqn_s0", "mycorridor-Corridor-v0_dqn_s0"]
    # the report reads the runs where the module is not importable (it makes no env)
    report = subprocess.run([sys.executable, "-m", "learner.report", str(user_dir / "grid"), "--out",
                             str(user_dir / "report")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "Corridor-v0" in (user_dir / "report" / "report.md").read_text()


def test_unknown_env_error_type_is_unknown_env_error():
    with pytest.raises(UnknownEnvError):
        env_spec("examples.corridor:Corridor-v0", "[1]")
