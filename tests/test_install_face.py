"""What an install shows the user: the console scripts run from any working directory, even one holding files named
like this project's packages; a run records our commit only where our packages are a checkout of this repository."""

import subprocess
import sys
from pathlib import Path

import pytest

from driver.outputs import SOURCE, git_commit

SCRIPTS = ("beta-dqn-train", "beta-dqn-report", "beta-dqn-evaluate", "beta-dqn-search")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_a_run_records_our_commit_never_that_of_a_repository_around_an_install(tmp_path):
    user = tmp_path / "their-project"
    (user / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    _git(user, "init", "-q")
    (user / "notes.txt").write_text("theirs\n")
    _git(user, "add", "notes.txt")
    _git(user, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "their commit")
    # our packages installed into their venv: the enclosing repository is theirs, so no commit is ours to record
    assert git_commit(user / ".venv" / "lib" / "site-packages") is None
    # where our packages are tracked (the repository, an editable install, a repository that vendors them), the
    # commit that holds them
    (user / "vendor" / "driver").mkdir(parents=True)
    (user / "vendor" / "driver" / "outputs.py").write_text("# ours\n")
    _git(user, "add", "vendor")
    _git(user, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "vendor beta-dqn")
    assert git_commit(user / "vendor") == _git(user, "rev-parse", "--short=12", "HEAD")
    (user / "notes.txt").write_text("changed, outside our code\n")
    assert git_commit(user / "vendor") == _git(user, "rev-parse", "--short=12", "HEAD")  # not "+dirty"
    (user / "vendor" / "driver" / "outputs.py").write_text("# ours, edited\n")
    assert git_commit(user / "vendor").endswith("+dirty")
    assert git_commit(user) is None  # their repository's top holds no code of ours
    assert git_commit(tmp_path / "not-a-repository") is None  # (no such directory: nothing to run git in)


def test_this_checkout_records_its_own_commit():
    if not (SOURCE / ".git").exists():
        pytest.skip("the packages are not a git checkout here")
    assert git_commit().split("+")[0] == _git(SOURCE, "rev-parse", "--short=12", "HEAD")


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_console_scripts_run_beside_files_named_like_our_packages(tmp_path, script):
    path = Path(sys.executable).parent / script
    assert path.is_file(), f"{script} is not installed beside {sys.executable}: pip install -e . (deploy/install.sh)"
    # a user's own configuration.py and methods/ in the working directory: `python -m` would import them first
    (tmp_path / "configuration.py").write_text("raise SystemExit('the user configuration.py was imported')\n")
    (tmp_path / "methods").mkdir()
    (tmp_path / "methods" / "__init__.py").write_text("raise SystemExit('the user methods/ was imported')\n")
    done = subprocess.run([str(path), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "was imported" not in done.stdout + done.stderr
