"""A replay backend is one folder and a registry line: a backend defined in the test tree (`tests/toy_replay`,
never shipped) stores a run's transitions on both runtimes, checks its own value, and gives its own reason why a
stopped run of it cannot continue, without a line of the project knowing it."""

import json
import os
import subprocess
import sys

import pytest

from tests.test_imports import ROOT, code_words, modules

SHORT = ["--env", "CliffWalk", "--algo", "dqn", "--actors", "2", "--total-steps", "2000", "--learning-starts", "500",
         "--eval-every", "1000", "--eval-episodes", "2", "--progress", "false", "--wandb", "disabled"]
# (Ray's workers inherit the variables: they register the backend and import it from the checkout)
TOY = {"BETA_DQN_REPLAYS": "tests.toy_replay", "PYTHONPATH": str(ROOT)}


def run(args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "learner.main", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("runtime", ["serial", pytest.param("ray", marks=pytest.mark.integration)])
def test_a_backend_of_the_test_tree_stores_and_serves_a_whole_run(tmp_path, runtime):
    out = tmp_path / "run"
    done = run([*SHORT, "--replay", "toy", "--runtime", runtime, "--out", str(out)], env=TOY)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["replay"] == "toy"
    summary = json.loads((out / "summary.json").read_text())
    served = json.loads((out / "toy_replay.json").read_text())  # written by the toy's sampler as the run closed
    # every transition the actors made reached the toy's store, and every batch the learner took came from it
    assert served["stored"] == served["harvested"] == summary["env_steps"] == 2000
    assert served["batches"] == summary["updates"] > 300
    # the directory's entries are the run's: --overwrite replaces it, the toy's file included
    again = run([*SHORT, "--replay", "toy", "--runtime", "serial", "--out", str(out), "--overwrite", "true"], env=TOY)
    assert again.returncode == 0, again.stderr[-2000:]


def test_its_value_is_checked_by_its_own_rule_and_its_resume_rule_is_its_own(tmp_path):
    done = run([*SHORT, "--replay", "toy", "--replay-shards", "2", "--runtime", "serial"], env=TOY)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "python -m learner.main: error: --replay-shards: the toy replay has one shard, got 2"]
    out = tmp_path / "run"
    assert run([*SHORT, "--replay", "toy", "--runtime", "serial", "--checkpoint-every", "1000",
                "--out", str(out)], env=TOY).returncode == 0
    resumed = run(["--resume", str(out)], env=TOY)
    assert resumed.returncode == 2
    assert resumed.stderr.strip().splitlines() == [
        "python -m learner.main: error: --resume: this run cannot continue exactly: its toy replay keeps nothing on "
        "disk, so its data is gone"]


def test_its_own_flag_is_a_flag_of_learner_main_checked_by_its_rule_and_written_with_the_run(tmp_path):
    done = run([*SHORT, "--replay", "toy", "--runtime", "serial", "--toy-seed-offset", "-1"], env=TOY)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "python -m learner.main: error: --toy-seed-offset: must be >= 0, got -1"]
    helped = run(["--help"], env=TOY)
    assert "--toy-seed-offset" in helped.stdout.split("\nreplay:\n")[1].split("\n\n")[0]  # in the replay's group
    out = tmp_path / "run"
    done = run([*SHORT, "--replay", "toy", "--runtime", "serial", "--toy-seed-offset", "3", "--out", str(out)],
               env=TOY)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["toy_seed_offset"] == 3
    assert run([*SHORT, "--toy-seed-offset", "3"]).returncode == 2  # unknown without the backend's registration


def test_without_its_registration_the_backend_is_unknown_and_nothing_of_the_project_names_it(tmp_path):
    done = run([*SHORT, "--replay", "toy", "--runtime", "serial", "--out", str(tmp_path / "run")])
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "python -m learner.main: error: --replay: 'toy' is not a replay service; expected memory, redis-local or "
        "redis:// URLs"]
    named = [path for path in modules().values() if any("toy" in w.lower() for w in code_words(path))]
    assert named == []


def test_a_module_that_cannot_be_registered_is_one_line():
    done = run(["--help"], env={"BETA_DQN_REPLAYS": "tests.no_such_module"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: BETA_DQN_REPLAYS: cannot register the replay backends of 'tests.no_such_module': No module named "
        "'tests.no_such_module'"]


BAD_FLAGS = """
from dataclasses import dataclass

from replay_service.backends import register
from replay_service.contract import ReplayBackend
from replay_service.flags import flag


@dataclass(frozen=True)
class Flags:
    {field}

    def check(self) -> None:
        pass


class Backend(ReplayBackend):
    flags = Flags
    names = ("bad",)


register("bad", Backend())
"""


@pytest.mark.parametrize("field, said", [
    ("beta_eps: float = flag(0.1, 'clashes')",
     "error: replay backend 'bad' declares a flag 'beta_eps' that method 'beta_dqn' already has"),
    ("lr: float = flag(0.1, 'clashes')",
     "error: replay backend 'bad' declares a flag 'lr' that Config (the shared flags) already has"),
    ("bad_x: int = flag(1, 'x', after='no_such_flag')",
     "error: replay backend 'bad': flag 'bad_x' follows 'no_such_flag', which is no shared flag"),
])
def test_a_backends_flag_that_cannot_be_placed_is_one_line_in_every_command(tmp_path, field, said):
    (tmp_path / "bad_backend.py").write_text(BAD_FLAGS.format(field=field))
    env = {"BETA_DQN_REPLAYS": "bad_backend", "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    for command in ("learner.main", "learner.report"):
        done = subprocess.run([sys.executable, "-m", command, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=300, env={**os.environ, **env})
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.strip().splitlines() == [said]


def test_a_backends_flags_are_read_typed_by_their_class_and_an_unfrozen_class_is_refused():
    """The Redis backend's own flags live with it (`RedisFlags`): `config.flags(RedisFlags)` reads them typed, flat
    names reach them as every other flag's; a backend whose flags class is not frozen is refused at `register`."""
    from dataclasses import dataclass

    from beta_dqn.configuration.fields import FIELDS, Config
    from replay_service.backends import REPLAY_BACKENDS, register
    from replay_service.contract import ReplayBackend
    from replay_service.redis_backend import RedisFlags

    cfg = Config.of(replay_timeout=5.0, replay_persist=True)
    assert cfg.flags(RedisFlags).replay_timeout == 5.0 and cfg.value("replay_persist") is True
    assert cfg.replaced(replay_timeout=7.0).flags(RedisFlags).replay_timeout == 7.0
    assert FIELDS["take_run_id"].replay == "redis" and FIELDS["replay_timeout"].role == "run"

    @dataclass
    class Loose:
        width: int = 3

    class LooseBackend(ReplayBackend):
        flags = Loose
        names = ("loose",)

    with pytest.raises(ValueError, match="replay backend 'loose': its flags class Loose is not a frozen dataclass"):
        register("loose", LooseBackend())
    assert "loose" not in REPLAY_BACKENDS

    @dataclass(frozen=True)
    class Unchecked:
        width: int = 3

    class UncheckedBackend(ReplayBackend):
        flags = Unchecked
        names = ("unchecked",)

    with pytest.raises(ValueError, match="replay backend 'unchecked': its flags class Unchecked has no check()"):
        register("unchecked", UncheckedBackend())
    assert "unchecked" not in REPLAY_BACKENDS
