"""The Python API (`beta_dqn`: train, load, act, evaluate) and `python -m learner.evaluate`, as
docs/python.md shows them."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from actors.envs import make_env
from beta_dqn import load, train
from beta_dqn.configuration.flags import Config, ConfigError

ROOT = Path(__file__).resolve().parents[1]
TINY = {"env": "CartPole-v1", "algo": "dqn", "total_steps": 1000, "learning_starts": 300, "runtime": "serial",
        "eval_every": 1000, "eval_episodes": 2, "wandb": "disabled", "progress": False}


def test_train_tracks_nothing_unless_asked_whatever_wandb_mode_says(tmp_path, monkeypatch):
    """From Python, a run goes to W&B only when asked (as SB3's): the command line's default (WANDB_MODE, else
    offline) is not the API's."""
    import json

    monkeypatch.setenv("WANDB_MODE", "offline")
    untracked = {k: v for k, v in TINY.items() if k != "wandb"}
    run = train(**untracked, out=str(tmp_path / "quiet"))
    assert json.loads((run.run_dir / "config.json").read_text())["wandb"] == "disabled"
    assert not (run.run_dir / "wandb").exists()


def test_the_pages_example_runs_as_it_is(tmp_path, monkeypatch, capsys):
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", page, flags=re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/python.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("runs/api-cartpole ") and printed[1] in ("0", "1")
    assert (tmp_path / "runs" / "api-cartpole" / "summary.json").is_file()
    videos = sorted((tmp_path / "videos" / "api-cartpole").glob("*.mp4"))
    assert len(videos) == 3 and all(v.stat().st_size > 0 for v in videos)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train(**TINY, out=str(tmp_path_factory.mktemp("api") / "run"))


def test_train_returns_the_summary_and_directory_and_load_acts_as_the_evaluator(trained):
    assert trained.summary["env_steps"] == 1000 and trained.run_dir.name == "run"
    assert json.loads((trained.run_dir / "summary.json").read_text())["env_steps"] == 1000
    agent = load(trained.run_dir)
    assert agent.env_steps == 1000 and agent.config.algo == "dqn" and agent.spec.obs_shape == (4,)
    assert agent.act(np.zeros(4, np.float32)) in (0, 1)
    # the same seed, the same episodes; another seed, other episodes (CartPole's start state is random)
    first, again = agent.evaluate(episodes=4, seed=3), agent.evaluate(episodes=4, seed=3)
    assert first == again and first["episodes"] == 4 and len(first["returns"]) == 4
    assert first["success_rate"] is None and first["return_mean"] == np.mean(first["returns"])
    assert agent.evaluate(episodes=4, seed=4)["returns"] != first["returns"]
    # greedy: the action is the argmax of the network's Q (torch, as the learner holds it)
    import torch

    from beta_dqn.configuration.flags import settings
    from learner.learner import Learner, LearnerSettings

    ckpt = torch.load(trained.run_dir / "checkpoint.pt", weights_only=True)
    learner = Learner.solo(settings(LearnerSettings, agent.config), agent.spec, torch.device("cpu"))
    learner.load_state_dict(ckpt["learner"])
    q_net = learner.nets["q"]
    observations = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    with torch.no_grad():
        expected = q_net(torch.as_tensor(observations)).argmax(dim=1).tolist()
    assert [agent.act(o) for o in observations] == expected
    # a batch: the same actions at once; Q(s, ·) is the network's
    assert agent.act(observations).tolist() == expected and agent.act(observations).dtype == np.int64
    with torch.no_grad():
        q = q_net(torch.as_tensor(observations)).numpy()
    assert np.allclose(agent.q_values(observations), q, atol=1e-5)
    assert np.allclose(agent.q_values(observations[0]), q[0], atol=1e-5)
    with pytest.raises(ValueError, match="dqn learns no behaviour function"):
        agent.behaviour(observations[0])
    for bad in (np.zeros((0, 4)), np.zeros((3, 5)), np.zeros((2, 3, 4)), np.zeros(3)):
        with pytest.raises(ValueError, match=r"an observation of shape .*CartPole-v1 gives \(4,\)"):
            agent.act(bad)
    with pytest.raises(ValueError, match="nan or inf"):
        agent.q_values(np.array([[0, 0, 0, np.nan]]))


def test_the_best_evaluations_networks_are_kept_beside_the_last_and_load_reads_either(tmp_path):
    """best.pt: the networks of the evaluation with the best score (the earliest of a tie), which checkpoint.pt
    carries too; `load(checkpoint="best")` acts with them, `learner.evaluate --checkpoint best` too."""
    import torch

    run = train(**{**TINY, "total_steps": 4000, "eval_every": 500, "eval_episodes": 3}, out=str(tmp_path / "r"))
    with open(run.run_dir / "evals.csv") as f:
        rows = [(float(r["return_mean"]), -int(r["env_steps"])) for r in csv.DictReader(f)]
    score, steps = max(rows)
    best = torch.load(run.run_dir / "best.pt", weights_only=True)
    assert (best["best"]["score"], best["best"]["env_steps"], best["counters"]["env_steps"]) == (score, -steps, -steps)
    last = torch.load(run.run_dir / "checkpoint.pt", weights_only=True)
    assert last["best"]["env_steps"] == -steps
    agent = load(run.run_dir, checkpoint="best")
    assert (agent.env_steps, agent.checkpoint) == (-steps, "best")
    # its Q is the saved network's (here, the best evaluation's: not the last one's unless it was the last)
    obs = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    w = {k: v.numpy() for k, v in best["best"]["networks"]["q"].items()}
    hidden = np.maximum(obs @ w["fc1.weight"].T + w["fc1.bias"], 0)
    assert np.allclose(agent.q_values(obs), hidden @ w["out.weight"].T + w["out.bias"], atol=1e-5)  # (the MLP)
    assert load(run.run_dir).env_steps == 4000
    done = _evaluate(str(run.run_dir), "--checkpoint", "best", "--episodes", "1", "--json", "true")
    assert done.returncode == 0 and json.loads(done.stdout)["env_steps"] == -steps, done.stderr
    # what cannot be read is one line naming the file
    with pytest.raises(ValueError, match="checkpoint='worst': give 'last'"):
        load(run.run_dir, checkpoint="worst")
    damaged = {**best, "best": {**best["best"], "networks": {"q": {**best["best"]["networks"]["q"],
                                                                   "fc1.bias": torch.zeros(3)}}}}
    torch.save(damaged, run.run_dir / "best.pt")
    with pytest.raises(ValueError, match=r"best.pt does not fit dqn's networks on CartPole-v1 \(ValueError: "
                                         r"q.fc1.bias has shape \(3,\)"):
        load(run.run_dir, checkpoint="best")
    nan = {**best, "best": {**best["best"], "networks": {"q": {**best["best"]["networks"]["q"],
                                                               "fc1.bias": torch.full_like(
                                                                   best["best"]["networks"]["q"]["fc1.bias"],
                                                                   float("nan"))}}}}
    torch.save(nan, run.run_dir / "best.pt")
    with pytest.raises(ValueError, match=r"best.pt holds non-finite values in best.networks.q.fc1.bias"):
        load(run.run_dir, checkpoint="best")
    (run.run_dir / "best.pt").unlink()
    with pytest.raises(ValueError, match="no best.pt in .*: a run writes it at its first evaluation"):
        load(run.run_dir, checkpoint="best")


def test_train_from_a_config_with_keywords_over_it(tmp_path):
    run = train(Config.of(**{**TINY, "total_steps": 5000}), total_steps=800, learning_starts=200, eval_every=800,
                out=str(tmp_path / "r"))
    assert run.summary["env_steps"] == 800


def test_what_train_refuses_is_one_line(tmp_path, trained):
    with pytest.raises(TypeError, match=r"unknown settings totl_steps \(totl_steps: did you mean total_steps\?\)"):
        train(totl_steps=10)
    with pytest.raises(ConfigError, match="--algo: .*train\\(\\) runs one run"):
        train(**{**TINY, "algo": ["dqn", "beta_dqn"]}, out=str(tmp_path / "l"))
    with pytest.raises(ConfigError, match="--seeds: '0-2': train\\(\\) runs one run from its start"):
        train(**TINY, seeds="0-2")
    with pytest.raises(ConfigError, match="--seeds: '0-1': train\\(\\) runs one run"):  # in a Config too
        train(Config.of(**TINY, seeds="0-1"))
    with pytest.raises(ConfigError, match="--total-steps: True: give a whole number"):
        train(**{**TINY, "total_steps": True})
    with pytest.raises(ConfigError, match="--seed: None: give a whole number"):
        train(**TINY, seed=None)
    with pytest.raises(ConfigError, match="--env: unknown env 'NoSuchEnv-v0'"):
        train(**{**TINY, "env": "NoSuchEnv-v0"})
    with pytest.raises(ConfigError, match="already holds a run"):  # an existing run is never replaced
        train(**TINY, out=str(trained.run_dir))
    with pytest.warns(UserWarning, match="is not below --total-steps"):
        train(**{**TINY, "total_steps": 200, "eval_every": 200}, out=str(tmp_path / "short"))


def test_load_and_evaluate_refuse_in_one_line(tmp_path, trained):
    with pytest.raises(ValueError, match="no checkpoint.pt in"):
        load(tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="is not a checkpoint this program can read"):
        load(tmp_path / "bad")
    agent = load(trained.run_dir)
    with pytest.raises(ValueError, match=r"shape \(3,\); CartPole-v1 gives \(4,\)"):
        agent.act([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="episodes=0"):
        agent.evaluate(episodes=0)
    with pytest.raises(ValueError, match="epsilon=2"):
        agent.evaluate(epsilon=2)
    with pytest.raises(ValueError, match="epsilon='0.1'"):
        agent.evaluate(epsilon="0.1")
    with pytest.raises(ValueError, match="seed=-1"):
        agent.evaluate(seed=-1)
    with pytest.raises(ValueError, match="an observation with nan or inf in it"):
        agent.act([np.nan, 0.0, 0.0, 0.0])
    full = tmp_path / "videos"
    full.mkdir()
    (full / "mine.mp4").write_bytes(b"x")
    with pytest.raises(ValueError, match="exists and is not an empty directory"):
        agent.evaluate(episodes=1, video_dir=full)
    assert (full / "mine.mp4").read_bytes() == b"x"


@pytest.mark.parametrize("damage, says", [
    (lambda c: c["learner"]["nets"].__setitem__("q.out.weight", c["learner"]["nets"]["q.out.weight"][:1]),
     "does not fit dqn's networks on CartPole-v1"),
    (lambda c: c["config"].__setitem__("env", "MountainCar-v0"), "does not fit dqn's networks on MountainCar-v0"),
    (lambda c: c["config"].__setitem__("algo", "beta_dqn"), "does not fit beta_dqn's networks"),
    (lambda c: c["config"].__setitem__("algo", "nope"), "its configuration is not valid"),
    (lambda c: c.pop("counters"), "it has no env_steps counter"),
    (lambda c: c.pop("learner"), "it has no learner state"),
    (lambda c: c["config"].__setitem__("eval_epsilon", "x"), "its configuration's eval_epsilon is 'x', not float"),
    (lambda c: c["config"].__setitem__("total_steps", 1.5), "its configuration's total_steps is 1.5, not int"),
    (lambda c: c["learner"]["nets"].__setitem__("q.out.bias", c["learner"]["nets"]["q.out.bias"] * float("nan")),
     "holds non-finite values in learner.nets.q.out.bias"),
    (lambda c: c.__setitem__("format", 1), "has checkpoint format 1"),
    (lambda c: c["config"].pop("algo"), "its configuration's algo is None, not a name"),
    (lambda c: c["counters"].__setitem__("env_steps", True), "its env_steps counter is True, not a whole number"),
])
def test_a_damaged_or_mismatched_checkpoint_is_one_line_for_load_evaluate_and_resume(tmp_path, trained, damage,
                                                                                      says):
    """`load`, `learner.evaluate` and `--resume` read a checkpoint through one check
    (`beta_dqn.driver.state.read_checkpoint`):
    each damage one line naming the file, never a traceback."""
    import shutil

    import torch

    run = tmp_path / "run"
    shutil.copytree(trained.run_dir, run)
    ckpt = torch.load(run / "checkpoint.pt", weights_only=True)
    assert "q.out.weight" in ckpt["learner"]["nets"], sorted(ckpt["learner"]["nets"])
    damage(ckpt)
    torch.save(ckpt, run / "checkpoint.pt")
    with pytest.raises(ValueError, match=re.escape(says)) as e:
        load(run)
    assert "\n" not in str(e.value) and str(run / "checkpoint.pt") in str(e.value)
    done = _evaluate(str(run), "--episodes", "1")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    if "fit" not in says:  # (a resume checks the networks by loading them, as a run: its own line)
        resumed = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(run)], cwd=ROOT,
                                 capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 2 and len(resumed.stderr.strip().splitlines()) == 1, resumed.stderr
        assert says in resumed.stderr, resumed.stderr


def test_a_checkpoint_of_a_replay_backend_not_registered_here_is_one_line_saying_so(tmp_path, trained):
    """A sound run made with a plugin's replay backend: not "damaged", but a backend to register."""
    import shutil

    import torch

    run = tmp_path / "run"
    shutil.copytree(trained.run_dir, run)
    ckpt = torch.load(run / "checkpoint.pt", weights_only=True)
    ckpt["config"] = {**ckpt["config"], "replay": "toy-elsewhere"}
    torch.save(ckpt, run / "checkpoint.pt")
    with pytest.raises(ValueError, match="ran with a replay backend not registered here .*BETA_DQN_REPLAYS") as e:
        load(run)
    assert "damaged" not in str(e.value) and "\n" not in str(e.value)


def test_env_kwargs_as_a_dict(tmp_path):
    run = train(**{**TINY, "env": "examples.corridor:Corridor-v0", "env_kwargs": {"length": 5}},
                out=str(tmp_path / "corridor"))
    assert load(run.run_dir, env="examples.corridor:Corridor-v0").spec.obs_shape == (5,)
    assert load(run.run_dir, trust_run=True).spec.obs_shape == (5,)
    with pytest.raises(ValueError, match="whose module 'examples.corridor' would be imported"):
        load(run.run_dir)


def test_a_downloaded_run_folder_names_no_code_that_evaluating_it_runs(tmp_path, trained):
    """A run folder whose checkpoint names `evilenv:X-v0`, with evilenv.py beside it: `load` and `python -m
    learner.evaluate .` run from inside it import nothing and refuse in one line; naming the environment or
    trusting the run is what imports it."""
    import torch

    folder = tmp_path / "downloaded"
    folder.mkdir()
    ckpt = torch.load(trained.run_dir / "checkpoint.pt", weights_only=True)
    ckpt["config"] = {**ckpt["config"], "env": "evilenv:X-v0"}
    torch.save(ckpt, folder / "checkpoint.pt")
    marker = tmp_path / "ran"
    (folder / "evilenv.py").write_text(f"open({str(marker)!r}, 'w').write('code ran')\n")
    # files named like this project's modules, which `python -m` would import first from the working directory
    (folder / "configuration.py").write_text(f"open({str(marker)!r}, 'w').write('code ran')\n")
    (folder / "methods").mkdir()
    (folder / "methods" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('code ran')\n")
    for command in ([sys.executable, "-m", "learner.evaluate", "."], [str(Path(sys.executable).parent /
                                                                          "beta-dqn-evaluate"), "."]):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "'evilenv' would be imported" in done.stderr and "--trust-run" in done.stderr
        assert not marker.exists()
    with pytest.raises(ValueError, match="a run folder is not trusted to name code"):
        load(folder)
    with pytest.raises(ValueError, match=r"env 'other:Y-v0': .* ran on 'evilenv:X-v0'"):
        load(folder, env="other:Y-v0")
    assert not marker.exists()
    # trusted, the module is imported (here it then registers no X-v0: one line too)
    trusted = subprocess.run([sys.executable, "-m", "learner.evaluate", ".", "--trust-run"], cwd=folder,
                             capture_output=True, text=True, timeout=300)
    assert trusted.returncode == 2 and "registers no Gymnasium id 'X-v0'" in trusted.stderr
    assert marker.read_text() == "code ran"


@pytest.mark.parametrize("env, size", [("CliffWalk", (240, 80)), ("MinAtar/Breakout", (160, 160))])
def test_a_video_of_the_papers_own_environments_decodes_to_their_frames(tmp_path, env, size):
    from moviepy import VideoFileClip

    agent = load(train(**{**TINY, "env": env}, out=str(tmp_path / "run")).run_dir)
    agent.evaluate(episodes=1, seed=0, video_dir=tmp_path / "v")
    (video,) = (tmp_path / "v").iterdir()
    with VideoFileClip(str(video)) as clip:
        frames = list(clip.iter_frames())
        assert tuple(clip.size) == size and len(frames) >= 2
    # the first frame is the environment's own drawing at the episode's reset (up to the codec's loss)
    first = make_env(env, seed=0, render_mode="rgb_array")  # (made and seeded as evaluate's, then reset as it is)
    first.reset()
    assert np.abs(frames[0].astype(int) - first.render().astype(int)).mean() < 8


def _evaluate(*args):
    return subprocess.run([sys.executable, "-m", "learner.evaluate", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_the_evaluate_command(trained, tmp_path):
    done = _evaluate(str(trained.run_dir), "--episodes", "3", "--json", "true")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["episodes"] == 3 and result["env_steps"] == 1000 and result["algo"] == "dqn"
    assert result["returns"] == load(trained.run_dir).evaluate(episodes=3, seed=0)["returns"]
    line = _evaluate(str(trained.run_dir), "--episodes", "2")
    assert line.returncode == 0 and line.stdout.startswith("dqn on CartPole-v1 after 1,000 env steps: return ")
    for args, says in (([str(tmp_path)], "no checkpoint.pt in"),
                       ([str(trained.run_dir), "--episodes", "-1"], "--episodes -1: give a whole number"),
                       ([str(trained.run_dir), "--seed", "-1"], "--seed -1: give a whole number"),
                       ([str(trained.run_dir), "--episodes", "x"], "invalid int value: 'x'")):
        bad = _evaluate(*args)
        assert bad.returncode == 2 and says in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_train_takes_pythons_own_forms_of_a_setting(tmp_path):
    """A path where the field is text, and numpy scalars where it is a number (issue: both were refused)."""
    run = train(**{**TINY, "seed": np.int64(3), "lr": np.float64(1e-3), "total_steps": np.int32(1000)},
                out=tmp_path / "run")
    assert run.run_dir == tmp_path / "run" and run.summary["env_steps"] == 1000
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["seed"] == 3 and config["lr"] == 1e-3 and config["out"] == str(tmp_path / "run")
    with pytest.raises(ConfigError, match="--seed: PosixPath"):
        train(**TINY, seed=tmp_path, out=str(tmp_path / "other"))
