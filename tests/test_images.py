"""Observations of every kind read right (`learner.methods.reading`, `actors.envs.wrappers`): images in HWC and CHW,
uint8 pixels scaled, Nature-DQN's network for large frames, a warning for a huge network, Discrete observations
one-hot encoded, a Dict refused with the wrapper to use, and wrappers named by their import path from the command
line, a configuration file and the Python API. A small image environment of our own (`tests/pixel_grid.py`, a
4×4 grid world seen only through its pixels) learns in either layout."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import tests.pixel_grid  # noqa: F401  (registers PixelGrid-v0)
from actors.envs import UnknownEnvError, env_spec, make_env
from beta_dqn.configuration.cli import parse_config
from beta_dqn.configuration.compat import read_as_it_ran
from beta_dqn.configuration.flags import Config, ConfigError, resolve
from learner.methods.networks import MLP, make_network, to_numpy
from learner.methods.numpy_net import NumpyNet
from learner.methods.reading import (
    WARN_PARAMETERS,
    Reading,
    ReadingError,
    ReadingMismatch,
    choose,
    parameters,
    size_warning,
)

ROOT = Path(__file__).resolve().parents[1]
GRID = "tests.pixel_grid:PixelGrid-v0"
BYTES = (np.uint8, 0, 255)


def _main(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "learner.main", *args, "--wandb", "disabled", "--progress", "false"],
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=timeout)


# --- which network reads what ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,space,network,layout,pixels", [
    ((84, 84, 3), BYTES, "nature", "HWC", True),  # an RGB frame
    ((4, 84, 84), BYTES, "nature", "CHW", True),  # a frame stack, channels first
    ((12, 12, 3), BYTES, "small", "HWC", True),  # a small image
    ((3, 12, 12), BYTES, "small", "CHW", True),
    ((10, 10, 4), (np.bool_, 0, 1), "small", "HWC", False),  # MinAtar's channels
    ((10, 10, 10), (np.bool_, 0, 1), "small", "HWC", False),  # equal ends: channels last
    ((7, 7, 3), (np.uint8, 0, 10), "small", "HWC", False),  # codes with bounds of their own: not pixels
    ((84, 84, 4), (np.float32, 0.0, 1.0), "small", "HWC", False),  # floats: read as they are, the paper's net
    ((40, 40, 3), (np.uint8, 0, 10), "small", "HWC", False),  # a large grid of codes: no stride-4 conv over cells
    ((48,), (np.uint8, 0, 1), "mlp", "", False),
])
def test_each_kind_of_observation_gets_its_reading(shape, space, network, layout, pixels):
    dtype, low, high = space
    reading = choose(shape, dtype, np.full(shape, low), np.full(shape, high))
    assert (reading.network, reading.layout, reading.pixels) == (network, layout, pixels)


def test_the_paper_environments_are_read_as_before():
    """MinAtar's and MiniGrid's grids: HWC, unscaled (MiniGrid's codes declare their own bounds), the small net,
    however large the grid is made."""
    for name, kwargs in (("MinAtar/Breakout", ""), ("MinAtar/Seaquest", ""), ("DoorKey", ""),
                         ("LavaCrossing-Hard", ""), ("DoorKey", '{"size": 40}')):
        reading = env_spec(name, kwargs).reading
        assert (reading.network, reading.layout, reading.pixels) == ("small", "HWC", False), name
    assert env_spec("CliffWalk").reading.network == "mlp"


def test_flags_choose_and_refuse_in_one_line():
    r = choose((84, 84, 4), np.uint8, 0, 255, layout="hwc", network="small", pixels="false")
    assert (r.network, r.layout, r.pixels, r.why) == ("small", "HWC", False, "--obs-layout hwc")
    assert choose((84, 84, 4), np.uint8, 0, 10, pixels="true").pixels
    with pytest.raises(ReadingError, match="--network nature: its convolutions need frames at least 36×36"):
        choose((12, 12, 3), np.uint8, 0, 255, network="nature")
    with pytest.raises(ReadingError, match="--obs-layout 'sideways': give one of auto, hwc, chw"):
        choose((12, 12, 3), np.uint8, 0, 255, layout="sideways")
    with pytest.raises(ReadingError, match="--pixels true: the observations are float32, not uint8"):
        choose((12, 12, 3), np.float32, 0.0, 1.0, pixels="true")
    with pytest.raises(ReadingError, match=r"shape \(48,\), not an image"):
        choose((48,), np.float32, 0.0, 1.0, network="nature")
    with pytest.raises(ConfigError, match="^--network: nature: its convolutions need frames at least 36×36; read as "
                                          "HWC, the observations are 10×10"):
        resolve(parse_config(["--env", "MinAtar/Breakout", "--network", "nature"]))
    with pytest.raises(ConfigError, match="^--obs-layout: 'diagonal' is not one of: auto, hwc, chw"):
        parse_config(["--obs-layout", "diagonal"])


@pytest.mark.parametrize("shape,reading,heads", [
    ((10, 10, 4), None, 0),
    ((4, 40, 44), Reading("nature", "CHW", True), 0),
    ((40, 44, 3), Reading("nature", "HWC", True), 3),
    ((3, 12, 9), Reading("small", "CHW", True), 0),
    ((12, 9, 5), Reading("small", "HWC", False), 2),
])
def test_the_actors_numpy_forward_is_the_learners(shape, reading, heads):
    torch.manual_seed(0)
    net = make_network(shape, 5, heads, reading)
    obs = np.random.default_rng(0).integers(0, 256, size=(7, *shape)).astype(np.uint8)
    expected = net(torch.from_numpy(obs)).detach().numpy()
    np.testing.assert_allclose(NumpyNet(to_numpy(net), reading)(obs), expected, rtol=1e-4, atol=1e-5)
    assert sum(p.numel() for p in net.parameters()) == parameters(shape, reading or Reading("small", "HWC"), 5, heads)


def test_a_method_may_give_an_mlp_to_images_but_not_read_them_otherwise_than_the_actors():
    """The actors take a network's torso from its parameters (an MLP on a rank-3 observation acts as one); a conv
    network that reads another layout or scale than the environment's is refused before the run, in one line."""
    from learner.learner import make_modules

    mlp = MLP((3, 12, 12), 4)
    obs = np.random.default_rng(0).integers(0, 256, size=(5, 3, 12, 12)).astype(np.uint8)
    np.testing.assert_allclose(NumpyNet(to_numpy(mlp), env_spec(GRID, '{"layout": "chw"}').reading)(obs),
                               mlp(torch.from_numpy(obs)).detach().numpy(), rtol=1e-4, atol=1e-4)

    class OwnReading:  # a method of the user's whose Q network ignores the environment's reading
        def networks(self, spec, method):
            return {"q": make_network(spec.obs_shape, spec.n_actions)}

        def targets(self, method):
            return ("q",)

        def acting_networks(self, method):
            return ("q",)

    class Settings:
        seed, method = 0, type("Method", (), {"algo": "mine"})()

    spec = env_spec(GRID, '{"layout": "chw"}')
    with pytest.raises(ReadingMismatch, match="^mine's network 'q' reads observations as small HWC, but the actors "
                                              "read this environment's as small CHW pixels: build it with "):
        make_modules(OwnReading(), spec, Settings())
    make_modules(OwnReading(), env_spec("MinAtar/Breakout"), Settings())  # the paper's reading: the same


def test_a_nature_network_has_the_papers_layers():
    net = make_network((4, 84, 84), 6, reading=Reading("nature", "CHW", True))
    convs = [(c.out_channels, c.kernel_size, c.stride) for c in (net.conv1, net.conv2, net.conv3)]
    assert convs == [(32, (8, 8), (4, 4)), (64, (4, 4), (2, 2)), (64, (3, 3), (1, 1))]
    assert net.fc1.in_features == 64 * 7 * 7 and net.fc1.out_features == 512
    scaled = net(torch.full((1, 4, 84, 84), 255, dtype=torch.uint8))
    net.reading = Reading("nature", "CHW", False)
    assert torch.allclose(scaled, net(torch.ones((1, 4, 84, 84))))  # 255 read as 1.0


def test_a_huge_network_is_warned_of_in_one_line():
    big = Reading("small", "HWC", True)
    text = size_warning((84, 84, 3), big, 6)
    assert text == ("warning: the Q network has 13,772,102 parameters (more than 5,000,000), the paper's small conv "
                    "net (16 3×3 filters, 128 hidden units): --network nature reads these 84×84 frames with 1,685,158")
    assert size_warning((84, 84, 3), choose((84, 84, 3), np.uint8, 0, 255), 6) is None
    assert "inputs: a wrapper that makes the observation smaller" in size_warning((50_000,), Reading(), 6)
    assert "GrayscaleObservation before FrameStackObservation" in size_warning((4, 84, 84, 3), Reading(), 6)
    assert parameters((84, 84, 3), big, 6) > WARN_PARAMETERS


# --- Discrete and Dict observations, wrappers ---------------------------------------------------------------

def test_discrete_observations_are_one_hot():
    spec = env_spec("FrozenLake-v1", '{"is_slippery": false}')
    assert (spec.obs_shape, spec.obs_dtype, spec.binary_obs, spec.reading.network) == ((16,), "bool", True, "mlp")
    env = make_env("FrozenLake-v1", seed=0, kwargs=spec.env_kwargs)
    obs, _ = env.reset()
    assert obs.dtype == np.bool_ and obs.tolist() == [True] + [False] * 15
    obs = env.step(1)[0]  # down: to state 4
    assert np.flatnonzero(obs).tolist() == [4]


def test_a_dict_observation_is_refused_naming_the_wrapper_and_the_wrapper_works():
    with pytest.raises(UnknownEnvError, match="Dict observation space of direction, image, mission; only Box and "
                                              "Discrete are supported: for a MiniGrid id, --wrappers minigrid.wrappers"
                                              ".ImgObsWrapper --pixels false"):
        env_spec("MiniGrid-Empty-5x5-v0")
    spec = env_spec("MiniGrid-Empty-5x5-v0", wrappers="minigrid.wrappers.ImgObsWrapper", pixels="false")
    assert spec.obs_shape == (7, 7, 3) and spec.wrappers == '[{"minigrid.wrappers.ImgObsWrapper":{}}]'
    assert (spec.reading.layout, spec.reading.pixels) == ("HWC", False)
    # (ImgObsWrapper's space says 0-255, so without --pixels false its codes would be read as pixels)
    assert env_spec("MiniGrid-Empty-5x5-v0", wrappers="minigrid.wrappers.ImgObsWrapper").reading.pixels


def test_wrappers_take_paths_arrays_and_kwargs_and_stack_in_order():
    """Grey frames stacked four deep, as Atari's are: 4×12×12, channels first, pixels."""
    wrappers = json.dumps(["gymnasium.wrappers:GrayscaleObservation",
                           {"gymnasium.wrappers.FrameStackObservation": {"stack_size": 4}}])
    spec = env_spec(GRID, wrappers=wrappers)
    assert spec.obs_shape == (4, 12, 12) and (spec.reading.layout, spec.reading.pixels) == ("CHW", True)
    env = make_env(GRID, seed=0, wrappers=spec.wrappers)
    assert env.reset()[0].shape == (4, 12, 12)
    assert env_spec(GRID, '{"size": 12}').reading.network == "nature"  # 36×36 frames


@pytest.mark.parametrize("wrappers,says", [
    ("nosuchmodule.Wrap", "module 'nosuchmodule' cannot be imported (ModuleNotFoundError"),
    ("gymnasium.wrappers.NoSuchWrapper", "module 'gymnasium.wrappers' has no callable 'NoSuchWrapper'"),
    ("[3]", "each item is an import path or a one-key object"),
    ('[{"a.B": 1}]', "each item is an import path or a one-key object"),
    ("not a path", "is not an import path"),
    ("[oops", "is not JSON"),
    ('[{"gymnasium.wrappers.FrameStackObservation": {"size": 3}}]', "FrameStackObservation(size=3) on env "),
])
def test_a_bad_wrapper_is_one_line(wrappers, says):
    with pytest.raises(ConfigError) as caught:
        resolve(Config.of(env=GRID, wrappers=wrappers))
    assert str(caught.value).startswith("--wrappers: ") and says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_wrappers_from_a_configuration_file(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text(f'env = "{GRID}"\n'
                    'wrappers = [{"gymnasium.wrappers.GrayscaleObservation" = {keep_dim = true}}]\n')
    cfg, spec = resolve(parse_config(["--config", str(toml)]))
    assert cfg.wrappers == '[{"gymnasium.wrappers.GrayscaleObservation":{"keep_dim":true}}]'
    assert spec.obs_shape == (12, 12, 1)


TINY = dict(algo="dqn", total_steps=64, learning_starts=32, eval_every=64, eval_episodes=1, runtime="serial", actors=1,
            envs_per_actor=1)


def test_wrappers_from_the_python_api_and_a_run_folder_names_no_code_of_its_own(tmp_path):
    """`train(wrappers=[...])` as a list, a function of ours by path too; `load` applies a run's wrappers (callables
    with arguments the run folder names) only to a run it is told to trust."""
    from beta_dqn import load, train

    stacked = ["gymnasium.wrappers.GrayscaleObservation",
               {"gymnasium.wrappers.FrameStackObservation": {"stack_size": 2}}]
    trained = train(env=GRID, wrappers=stacked, out=str(tmp_path / "stacked"), **TINY)
    with pytest.raises(ValueError, match="wraps its environment with --wrappers .*GrayscaleObservation.*trust the run"):
        load(trained.run_dir, env=GRID)
    agent = load(trained.run_dir, trust_run=True)
    assert agent.spec.obs_shape == (2, 12, 12) and agent.evaluate(episodes=1)["episodes"] == 1
    trained = train(env=GRID, wrappers="tests.pixel_grid:channels_first", out=str(tmp_path / "ours"), **TINY)
    agent = load(trained.run_dir, trust_run=True)
    assert agent.spec.obs_shape == (3, 12, 12) and agent.spec.reading.layout == "CHW"
    assert agent.act(np.zeros((3, 12, 12), dtype=np.uint8)) in range(4)


def test_a_run_made_before_readings_loads_and_resumes_as_it_ran(tmp_path):
    """A pixel run whose checkpoint and config.json lack the three flags (as runs made before them do) is loaded
    and resumed reading its observations as they then were: unscaled."""
    from beta_dqn import load, train
    from beta_dqn.driver.resume import resume_config

    run = train(env=GRID, out=str(tmp_path / "old"), **TINY).run_dir
    assert load(run, env=GRID).spec.reading.pixels  # (made now: pixels)
    ckpt = torch.load(run / "checkpoint.pt", weights_only=True)
    for key in ("obs_layout", "network", "pixels"):
        del ckpt["config"][key]
    torch.save(ckpt, run / "checkpoint.pt")
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({k: v for k, v in config.items()
                                                 if k not in ("obs_layout", "network", "pixels")}))
    agent = load(run, env=GRID)
    assert (agent.spec.reading.network, agent.spec.reading.layout, agent.spec.reading.pixels) == ("small", "HWC",
                                                                                                   False)
    cfg, _ = resume_config(["--resume", str(run)])
    assert (cfg.obs_layout, cfg.network, cfg.pixels) == ("hwc", "small", "false")


def test_a_run_made_before_readings_is_read_as_it_ran():
    """A saved configuration without --network: rank-3 observations as before (HWC, unscaled, the small net)."""
    old = {"env": GRID, "env_kwargs": '{"layout":"chw"}', "algo": "dqn"}
    assert {k: read_as_it_ran(old)[k] for k in ("obs_layout", "network", "pixels")} == {
        "obs_layout": "hwc", "network": "small", "pixels": "false"}
    assert read_as_it_ran({"env": "CliffWalk", "algo": "dqn"}) == {"env": "CliffWalk", "algo": "dqn"}
    new = {**old, "network": "auto"}
    assert read_as_it_ran(new) is new


# --- learning, through the command line ------------------------------------------------------------------------

LEARN = ["--algo", "dqn", "--total-steps", "6000", "--learning-starts", "1000", "--eps-decay-steps", "3000",
         "--eval-every", "1000", "--eval-episodes", "5", "--replay-ratio", "1", "--target-update", "200",
         "--runtime", "serial", "--actors", "1", "--seed", "0"]


@pytest.mark.learning
def test_a_pixel_grid_world_learns_in_either_layout_alike_and_says_how_it_was_read(tmp_path):
    """Untrained (the evaluation at the end of the warm-up) the greedy policy does not reach the goal; within
    6,000 env steps it does (return 0.95 the best: 6 moves). Read right, the two layouts are one network on one
    image: the same seed gives the same evaluations in HWC and in CHW."""
    curves = {}
    for layout in ("hwc", "chw"):
        out = tmp_path / layout
        done = _main("--env", GRID, "--env-kwargs", json.dumps({"layout": layout}), *LEARN, "--out", str(out))
        assert done.returncode == 0, done.stderr
        with open(out / "evals.csv") as f:
            curves[layout] = [float(row["return_mean"]) for row in csv.DictReader(f)]
        assert curves[layout][0] < 0.5 and max(curves[layout]) >= 0.9, curves
        seen = json.loads((out / "summary.json").read_text())["observations"]
        assert (seen["layout"], seen["pixels"], seen["network"]) == (layout.upper(), True, "small")
        assert seen["shape"] == ([12, 12, 3] if layout == "hwc" else [3, 12, 12])
        assert seen["parameters"] == {"q": 205_892}
        shape = "12×12×3" if layout == "hwc" else "3×12×12"
        assert f"observations: {shape} uint8, {layout.upper()} (auto: " in done.stdout
        assert "pixels scaled to [0, 1]" in done.stdout
    assert curves["hwc"] == curves["chw"]


def test_the_size_warning_reaches_the_command_line(tmp_path):
    done = _main("--env", GRID, "--env-kwargs", '{"size": 28}', "--network", "small", "--algo", "dqn", "--total-steps",
                 "64", "--learning-starts", "64", "--eval-every", "64", "--eval-episodes", "1", "--runtime", "serial",
                 "--actors", "1", "--envs-per-actor", "1", "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert "warning: the Q network has 13,771,844 parameters (more than 5,000,000)" in done.stderr
    assert "--network nature reads these 84×84 frames with" in done.stderr
