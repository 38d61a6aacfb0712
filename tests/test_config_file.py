"""`--config FILE`: the command line's flags from TOML or YAML, with per-method and per-environment sections; the
command line wins; a grid keeps the file's sections; the environments' own γ and learning rates come from the
shipped file of the same format."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from beta_dqn.configuration import config_file
from beta_dqn.configuration.cli import parse_command, parse_config
from beta_dqn.configuration.defaults import DEFAULTS, env_defaults
from beta_dqn.configuration.flags import ConfigError, resolve
from beta_dqn.launcher.api import train
from beta_dqn.launcher.grid import grid_from_args

ROOT = Path(__file__).resolve().parents[1]

HP = """
total_steps = 4000
learning_starts = 500
algo = ["beta_dqn", "dqn"]
[algos.dqn]
eps_decay_fraction = 0.5
[envs.CliffWalk]
lr = 1e-3
[envs.CliffWalk.algos.beta_dqn]
lr = 5e-4
bandit_window = 77
[envs."MinAtar/Asterix"]
lr = 2e-5
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_more_specific_section_wins_and_the_command_line_wins_over_the_file(tmp_path):
    hp = write(tmp_path, "hp.toml", HP)
    beta = parse_config(["--config", hp, "--env", "CliffWalk", "--algo", "beta_dqn"])
    assert (beta.total_steps, beta.learning_starts, beta.lr, beta.value("bandit_window")) == (4000, 500, 5e-4, 77)
    dqn = parse_config(["--config", hp, "--env", "CliffWalk", "--algo", "dqn"])
    # the env's section, the method's section
    assert (dqn.lr, dqn.eps_decay_fraction, dqn.value("bandit_window")) == (1e-3, 0.5, 1000)
    asterix = parse_config(["--config", hp, "--env", "MinAtar/Asterix-v0", "--algo", "dqn"])
    assert asterix.lr == 2e-5  # a section's env matches its canonical name
    given = parse_config(["--config", hp, "--env", "CliffWalk", "--algo", "beta_dqn", "--lr", "0.01",
                          "--total-steps", "3000"])
    assert (given.lr, given.total_steps, given.value("bandit_window")) == (0.01, 3000, 77)
    # a value at its default given on the command line wins too
    assert parse_config(["--config", hp, "--env", "CliffWalk", "--algo", "beta_dqn",
                         "--bandit-window", "1000"]).value("bandit_window") == 1000
    # no section for the env: the environment's own learning rate (the shipped defaults) after resolve
    plain = parse_config(["--config", hp, "--env", "SimpleCrossing-Easy", "--algo", "dqn"])
    assert plain.lr is None and resolve(plain)[0].lr == 1e-4


def test_yaml_reads_as_toml_does_and_a_top_level_list_is_a_grid_axis(tmp_path):
    hp = write(tmp_path, "hp.yaml", "total-steps: 6000\nlr: [0.001, 0.0003]\nenvs:\n  CliffWalk:\n"
                                    "    algos:\n      beta_dqn:\n        bandit_window: 77\n"
                                    "env_kwargs: {}\n")
    args, named, sections = parse_command(["--config", hp, "--env", "CliffWalk", "--algo", "beta_dqn,dqn",
                                           "--seeds", "0", "--out", str(tmp_path / "g")])
    assert args["lr"] == [0.001, 0.0003] and args["total_steps"] == 6000 and "lr" in named  # given by the file
    grid = grid_from_args(args, named, sections)
    runs = {(r["algo"], r["lr"]): r for r in grid.runs}
    assert sorted(runs) == [("beta_dqn", 0.0003), ("beta_dqn", 0.001), ("dqn", 0.0003), ("dqn", 0.001)]
    assert runs["beta_dqn", 0.001]["bandit_window"] == 77 and runs["dqn", 0.001]["bandit_window"] == 1000
    assert runs["beta_dqn", 0.001]["variant"] == "lr=0.001"  # the file's sections name no column


def test_a_resumed_grid_runs_the_sections_it_saved_whatever_became_of_the_file(tmp_path):
    hp = write(tmp_path, "hp.toml", HP)
    out = tmp_path / "g"
    args, named, sections = parse_command(["--config", hp, "--env", "CliffWalk", "--seeds", "0,1", "--out", str(out)])
    grid = grid_from_args(args, named, sections)
    grid.write_spec()
    before = sorted((r["algo"], r["seed"], r["lr"], r["bandit_window"]) for r in grid.runs)
    Path(hp).write_text("lr = 0.1\n")
    args, named, sections = parse_command(["--resume", str(out)])
    again = grid_from_args(args, named, sections)
    assert sorted((r["algo"], r["seed"], r["lr"], r["bandit_window"]) for r in again.runs) == before
    assert (0, 5e-4, 77) in {(s, lr, w) for a, s, lr, w in before if a == "beta_dqn"}
    with pytest.raises(ConfigError, match="--config: with --resume: a resumed run or grid keeps"):
        parse_command(["--resume", str(out), "--config", hp])


@pytest.mark.parametrize("text, said", [
    ("foo = 1\n", "unknown setting 'foo'; a key is a flag without its dashes"),
    ("totl_steps = 1\n", "unknown setting 'totl_steps' (did you mean total_steps?); a key is a flag without"),
    ('lr = "x"\n', "lr = 'x': expected a number"),
    ("total_steps = 1.5\n", "total_steps = 1.5: expected an integer"),
    ("beta_epsilon = 1\n", "beta_epsilon = 1: expected true or false"),
    ("lr = nan\n", "lr = nan: expected a finite number"),
    ("[envs.DoorKey]\nlr = [1e-4, 3e-4]\n", '[envs."DoorKey"] lr is a list; lists (grid axes) go at the top level'),
    ("lr = [1e-4, 3e-4]\n[envs.DoorKey]\nlr = 1e-4\n", '[envs."DoorKey"] sets lr, which is a grid axis'),
    ("lr = [1e-4, 1e-4]\n", "lr lists 0.0001 twice"),
    ("lr = []\n", "lr is an empty list"),
    ("out = ['a', 'b']\n", "only a flag that changes what a run computes may be a list"),
    ("[algos.nope]\nlr = 1e-4\n", "[algos.nope]: unknown method; known: beta_dqn, dqn"),
    ("[envs.DoorKey]\nalgo = 'dqn'\n", '[envs."DoorKey"] algo cannot be set in a section (a section names its'),
    ("[algos.dqn]\nwandb = 'offline'\n", "[algos.dqn] wandb cannot be set in a section (a section sets only what "
                                           "changes what a run computes"),
    ("[envs.CliffWalk]\nreplay = 'redis://:pw@127.0.0.1:6379'\n", "replay cannot be set in a section"),
    ("[algos.dqn]\nbandit_window = 10\n", "[algos.dqn] bandit_window: dqn does not read it (read by beta_dqn)"),
    ("[envs.DoorKye]\nlr = 1e-4\n", '[envs."DoorKye"] names no environment a run can have; known: CliffWalk'),
    ("[envs.Asterix]\nlr = 1e-4\n", '[envs."Asterix"] names no environment'),
    ("resume = 'runs/x'\n", "resume cannot be set in a file (it is given on the command line)"),
    ("config = 'other.toml'\n", "config cannot be set in a file"),
    # what removes a run's outputs is said on the command line each time, never carried by a shared file
    ("overwrite = true\n", "overwrite cannot be set in a file (it is given on the command line)"),
    ("take_run_id = true\n", "take_run_id cannot be set in a file"),
    ("envs = 3\n", "envs must be a table of sections"),
    ("lr = \n", "is not valid TOML"),
    ('env_kwargs = "[1]"\n', "env_kwargs:"),
])
def test_every_mistake_in_a_file_is_one_line_naming_the_file_and_the_key(tmp_path, text, said):
    hp = write(tmp_path, "hp.toml", text)
    with pytest.raises(ConfigError) as e:
        parse_command(["--config", hp, "--env", "DoorKey"])
    message = str(e.value)
    assert message.startswith(f"--config: {hp}: ") and said in message and "\n" not in message, message


def test_a_file_that_is_not_a_small_regular_utf8_file_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # opened without waiting for a writer
    big = write(tmp_path, "big.toml", "# " + "x" * config_file.MAX_BYTES + "\n")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"name = '\xe9'\n")
    for path, said in ((fifo, "is not a regular file"), (big, "is larger than 1024 KiB"),
                       (latin, "is not UTF-8 text"), (tmp_path / "none.toml", "cannot be read .No such file"),
                       (tmp_path, "unknown format"), (write(tmp_path, "hp.ini", "lr = 1\n"), "unknown format '.ini'")):
        with pytest.raises(ConfigError, match=said):
            config_file.read(path)


def test_a_hostile_settings_file_is_one_line_before_it_costs_memory_or_stack(tmp_path):
    """A YAML 'billion laughs' (10 aliases of 10: 10⁹ nodes from 1 KB) is refused at its first alias; nesting is
    capped in YAML, TOML and --env-kwargs (20,000 deep inside the 1 MiB cap was a RecursionError); a YAML key
    given twice is refused as TOML refuses it."""
    laughs = ["lol0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"lol{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    bomb = write(tmp_path, "bomb.yaml", "env_kwargs:\n" + "".join(f"  {line}\n" for line in laughs))
    deep_yaml = write(tmp_path, "deep.yaml", "env_kwargs: " + "[" * 20_000 + "]" * 20_000 + "\n")
    deep_toml = write(tmp_path, "deep.toml", "env_kwargs = " + "[" * 20_000 + "]" * 20_000 + "\n")
    deep_17 = write(tmp_path, "d17.toml", "env_kwargs = " + "[" * 17 + "]" * 17 + "\n")
    twice = write(tmp_path, "twice.yaml", "lr: 1.0e-4\nlr: 3.0e-4\n")
    for path, said in ((bomb, "an alias (*a0)"), (deep_yaml, "nest more than 16 deep"),
                       (deep_toml, "nests tables or lists"), (deep_17, "more than 16 deep"),
                       (twice, "the key 'lr' is given twice")):
        with pytest.raises(ConfigError) as e:
            config_file.read(path)
        assert said in str(e.value) and "\n" not in str(e.value), str(e.value)
    # an anchor without an alias is plain YAML, and 16 deep is allowed
    fine = write(tmp_path, "fine.yaml", "lr: &rate 1.0e-4\n")
    assert config_file.read(fine).top["lr"] == 1e-4
    from actors.envs import UnknownEnvError, parse_env_kwargs

    assert parse_env_kwargs('{"a": ' + "[" * 15 + "]" * 15 + "}") == {"a": eval("[" * 15 + "]" * 15)}
    for text in ('{"a": ' + "[" * 16 + "]" * 16 + "}", '{"a": ' + "[" * 30_000 + "]" * 30_000 + "}"):
        with pytest.raises(UnknownEnvError, match="more than 16 deep"):
            parse_env_kwargs(text)


def test_the_shipped_defaults_are_a_config_file_of_the_spec_learning_rates():
    shipped = config_file.read(DEFAULTS)
    assert set(shipped.top) == {"gamma", "lr"}
    assert all(set(s.values) <= {"gamma", "lr"} and s.algo is None for s in shipped.sections)
    assert env_defaults("CliffWalk") == (0.9, 3e-4)
    assert env_defaults("MinAtar/Asterix") == (0.99, 3e-5)
    for name in ("MinAtar/Seaquest", "SimpleCrossing-Easy", "LavaCrossing-Hard"):
        assert env_defaults(name) == (0.99, 1e-4)
    for name in ("MinAtar/Breakout", "DoorKey", "CartPole-v1", "examples.corridor:Corridor-v0"):
        assert env_defaults(name) == (0.99, 3e-4)


def test_a_run_from_a_file_records_what_the_file_gave_it(tmp_path):
    hp = write(tmp_path, "hp.toml", "total_steps = 1200\nlearning_starts = 200\neval_every = 600\n"
                                    "eval_episodes = 2\nactors = 1\nenvs_per_actor = 1\n"
                                    "[envs.CliffWalk.algos.dqn]\nlr = 2e-3\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "learner.main", "--config", hp, "--env", "CliffWalk", "--algo", "dqn",
                           "--runtime", "serial", "--out", str(out), "--wandb", "disabled", "--progress", "false"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / "config.json").read_text())
    assert (config["total_steps"], config["lr"], config["config"]) == (1200, 2e-3, hp)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env_steps"] >= 1200


def test_train_takes_a_file_under_its_keywords(tmp_path):
    hp = write(tmp_path, "hp.toml", "total_steps = 1200\nlearning_starts = 200\neval_every = 600\n"
                                    "eval_episodes = 1\nactors = 1\nenvs_per_actor = 1\nruntime = 'serial'\n"
                                    "[envs.CliffWalk]\nlr = 2e-3\n")
    run = train(config=hp, env="CliffWalk", algo="dqn", total_steps=1000, out=str(tmp_path / "r"), wandb="disabled",
                progress=False)
    config = json.loads((run.run_dir / "config.json").read_text())
    assert (config["total_steps"], config["lr"], config["learning_starts"]) == (1000, 2e-3, 200)
    write(tmp_path, "grid.toml", "lr = [1e-3, 2e-3]\n")
    with pytest.raises(ConfigError, match="lists values .a grid axis.: train.. runs one run"):
        train(config=str(tmp_path / "grid.toml"), env="CliffWalk", out=str(tmp_path / "q"))


def test_sections_name_any_environment_a_run_can_have():
    for env in ("MinAtar/Breakout-v0", "MiniGrid-DoorKey-6x6-v0", "CartPole-v1", "examples.corridor:Corridor-v0"):
        assert config_file.read(_toml(f'[envs."{env}"]\nlr = 1e-4\n')).sections[0].values == {"lr": 1e-4}


def _toml(text: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "hp.toml"
    path.write_text(text)
    return path


def test_a_switch_a_section_turns_on_gates_what_the_other_sections_and_the_axes_set(tmp_path):
    # β-DQN reads the ε schedule only with --beta-epsilon true: a section turning it on makes the axis its own
    hp = write(tmp_path, "hp.toml", 'eps_end = [0.01, 0.05]\nalgo = ["beta_dqn", "dqn"]\n'
                                    "[algos.beta_dqn]\nbeta_epsilon = true\n")
    args, named, sections = parse_command(["--config", hp, "--env", "CliffWalk", "--out", str(tmp_path / "g")])
    runs = sorted((r["algo"], r["beta_epsilon"], r["eps_end"], r["variant"])
                  for r in grid_from_args(args, named, sections).runs)
    assert runs == [("beta_dqn", True, 0.01, "eps-end=0.01"), ("beta_dqn", True, 0.05, "eps-end=0.05"),
                    ("dqn", False, 0.01, "eps-end=0.01"), ("dqn", False, 0.05, "eps-end=0.05")]
    # a less specific section's ε, gated by the more specific one's switch
    hp = write(tmp_path, "two.toml", "[algos.beta_dqn]\neps_end = 0.05\n[envs.CliffWalk.algos.beta_dqn]\n"
                                     "beta_epsilon = true\n")
    one = parse_config(["--config", hp, "--env", "CliffWalk", "--algo", "beta_dqn"])
    assert (one.value("beta_epsilon"), one.eps_end) == (True, 0.05)


def test_the_file_top_level_counts_as_given_as_the_command_line_does(tmp_path):
    hp = write(tmp_path, "hp.toml", "beta_thread = true\n")
    args, named, sections = parse_command(["--config", hp, "--env", "CliffWalk", "--seeds", "0,1",
                                           "--out", str(tmp_path / "g")])
    # a grid of serial runs turns β's thread off unless it is given: the file gave it
    assert {r["beta_thread"] for r in grid_from_args(args, named, sections).runs} == {True}
    from beta_dqn.launcher.main import main

    seeded = write(tmp_path, "seed.toml", "seed = 7\n")
    assert main(["--config", seeded, "--env", "CliffWalk", "--seeds", "0,1", "--out", str(tmp_path / "h")]) == 2


def test_yaml_scalars_read_as_yaml_1_2_reads_them(tmp_path):
    ok = write(tmp_path, "ok.yaml", "lr: 1e-4\ntotal_steps: 1000\nbeta_epsilon: true\nwandb: off\n")
    assert config_file.read(ok).top == {"lr": 1e-4, "total_steps": 1000, "beta_epsilon": True, "wandb": "off"}
    for text, said in (("eval_every: 1:40\n", "eval_every = '1:40': expected an integer"),
                       ("total_steps: 0x10\n", "total_steps = '0x10': expected an integer"),
                       ("beta_epsilon: yes\n", "beta_epsilon = 'yes': expected true or false")):
        with pytest.raises(ConfigError, match=said):
            config_file.read(write(tmp_path, "bad.yaml", text))


def test_a_saved_section_with_a_field_this_program_no_longer_has_resumes_without_it():
    saved = {"env": "CliffWalk", "algo": None, "values": {"lr": 1e-3, "a_removed_flag": 1}}
    assert config_file.Section.from_json(saved).values == {"lr": 1e-3}
