"""A Redis password reaches no file and no command line it need not: a password file keeps it off the command
line, every form of URL password is masked where the configuration is written, and resumes (of a run and of
a grid) work with every way of giving it, or say in one line what to give."""

import json
from pathlib import Path

import pytest
import torch

from beta_dqn.launcher.main import main

pytestmark = pytest.mark.integration
SHORT = ["--env", "CliffWalk", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "2", "--total-steps",
         "1200", "--learning-starts", "400", "--eval-every", "600", "--eval-episodes", "2", "--checkpoint-every",
         "600", "--wandb", "disabled", "--progress", "false", "--json", "true"]


def split(url: str) -> tuple[str, str]:
    """redis://:PASS@host:port -> (redis://host:port, PASS)."""
    password = url.split("://:", 1)[1].split("@", 1)[0]
    return url.replace(f":{password}@", ""), password


def written(out: Path) -> str:
    """Everything the run wrote that holds its configuration, as text."""
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    return "\n".join([(out / "config.json").read_text(), json.dumps(ckpt["config"]),
                      (out / "summary.json").read_text()])


def test_a_password_file_keeps_the_password_off_the_command_line(redis_url, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    bare, password = split(redis_url)
    secret = tmp_path / "redis.pass"
    secret.write_text(password + "\n")
    out = tmp_path / "run"
    assert main([*SHORT, "--replay", bare, "--replay-password-file", str(secret), "--out", str(out)]) == 0
    assert password not in written(out) and json.loads((out / "config.json").read_text())["replay"] == bare
    assert main(["--resume", str(out), "--json", "true"]) == 0  # the file's path was saved, not the password
    assert password not in capsys.readouterr().err


def test_a_query_password_is_masked_and_a_resume_asks_for_it(redis_url, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    bare, password = split(redis_url)
    out = tmp_path / "run"
    assert main([*SHORT, "--replay", f"{bare}?password={password}", "--out", str(out)]) == 0
    assert password not in written(out) and "password=***" in (out / "config.json").read_text()
    capsys.readouterr()
    assert main(["--resume", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--replay-password-file FILE, or set REDIS_PASSWORD" in err[0]
    monkeypatch.setenv("REDIS_PASSWORD", password)
    assert main(["--resume", str(out), "--json", "true"]) == 0


def test_a_grid_with_an_inline_password_resumes_and_restarts_its_runs(ray_cluster, redis_url, tmp_path, monkeypatch,
                                                                      capsys):
    """grid.json keeps no password; `--resume GRID_DIR` with the URL again continues a run from its checkpoint
    (the retry path: each run's own resume gets the grid's URL), and without it says what to give."""
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    grid = tmp_path / "grid"
    argv = [*SHORT, "--algo", "dqn", "--seeds", "0,1", "--learner-cpus", "0.5", "--replay", redis_url]
    assert main([*argv, "--out", str(grid)]) == 0
    _, password = split(redis_url)
    assert password not in (grid / "grid.json").read_text()
    unfinished = next(grid.glob("*_s1"))
    (unfinished / "summary.json").unlink()  # as if interrupted after its last checkpoint
    capsys.readouterr()
    assert main(["--resume", str(grid)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the grid's Redis URL has a password that was not saved" in err[0]
    assert main(["--resume", str(grid), "--replay", redis_url, "--json", "true"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["done"] == 2 and summary["failed"] == 0
    assert json.loads((unfinished / "summary.json").read_text())["env_steps"] == 1200
    assert password not in (unfinished / "config.json").read_text()
