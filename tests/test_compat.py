"""What this version reads of what earlier versions wrote lives in one module (`beta_dqn.configuration.compat`),
keyed by format: a grid.json is upgraded format by format, a checkpoint of another format is refused in one
sentence, a configuration or a recorded command that lacks a flag added since reads as it ran, and a run
directory without a record of its files is known by the names earlier versions wrote."""

import pytest

from beta_dqn.configuration import compat


def test_a_grid_file_is_upgraded_format_by_format_and_lacking_flags_read_as_its_runs_ran():
    defaults = {"algo": "beta_dqn", "env": "MinAtar/Breakout", "lr": None, "bandit_returns": "raw", "runtime": "auto"}
    saved = {"format": 1, "args": {"algo": "dqn, beta_dqn", "env": "DoorKey", "lr": 1e-4, "gone": 3}}
    args = compat.grid_args(saved, defaults)
    # format 1's comma text is a list; a flag grid.json lacks has LEGACY's value (what its runs ran with), else
    # its default; a name this version has no flag for is left out
    assert args == {"algo": ["dqn", "beta_dqn"], "env": "DoorKey", "lr": 1e-4, "bandit_returns": "minmax",
                    "runtime": "ray", **{k: v for k, v in compat.LEGACY.items() if k not in defaults}}
    now = compat.grid_args({"format": compat.GRID_FORMAT, "args": {"algo": ["dqn"], "env": "a,b"}}, defaults)
    assert now["algo"] == ["dqn"] and now["env"] == "a,b"  # this format's text is left as it is
    with pytest.raises(ValueError, match=r"^has grid format 7; this program reads 2 and 1$"):
        compat.grid_args({"format": 7, "args": {}}, defaults)
    assert set(compat.GRID_UPGRADES) | {compat.GRID_FORMAT} == set(range(1, compat.GRID_FORMAT + 1))


def test_a_checkpoint_of_another_format_is_named_and_this_format_is_read():
    assert compat.checkpoint_problem({"format": compat.CHECKPOINT_FORMAT, "config": {}}) == ""
    assert compat.checkpoint_problem({"config": {}}) == (
        "has checkpoint format 1, written by another version of this program; this one reads format 2 only")


def test_a_recorded_command_is_pinned_to_what_it_ran_with():
    # a run's command that names none of the LEGACY flags: β-DQN reads the ε schedule only with --beta-epsilon
    without_eps = {k: v for k, v in compat.LEGACY.items() if k != "eps_decay_steps"}
    assert compat.command_pins({"algo": "beta_dqn"}, ["beta_dqn"], grid=False) == without_eps
    assert compat.command_pins({"beta_epsilon": True}, ["beta_dqn"], grid=False) == compat.LEGACY
    # DQN reads no β-DQN flag; a flag the command names is its own
    assert compat.command_pins({"algo": "dqn", "runtime": "serial"}, ["dqn"], grid=False) == {
        "eps_decay_steps": 1_000_000}
    # a grid's command: no --arm-exchange (it may have run at auto), --eps-decay-steps only without the fraction
    assert compat.command_pins({"eps_decay_fraction": 0.2}, ["beta_dqn"], grid=True) == {
        "bandit_returns": "minmax", "runtime": "ray"}


def test_a_run_directory_without_a_record_is_known_by_the_names_earlier_versions_wrote(tmp_path):
    for name in ("config.json", "evals.csv", "mine.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "replay").mkdir()
    (tmp_path / "replay" / "shard0-100.npz").write_text("x")
    (tmp_path / "wandb" / "run-20260101_000000-abc123").mkdir(parents=True)
    (tmp_path / "wandb" / "run-20260101_000000-other").mkdir()
    assert compat.entries_before_record(tmp_path, "abc123") == [
        "config.json", "evals.csv", "replay/shard0-100.npz", "wandb/run-20260101_000000-abc123/"]
    assert compat.entries_before_record(tmp_path, None) == ["config.json", "evals.csv", "replay/shard0-100.npz"]
    assert compat.earlier_temp("evals.csv.tmp", ("evals.csv",)) and not compat.earlier_temp("mine.tmp", ("evals.csv",))
