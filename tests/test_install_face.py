"""What an install shows the user: the console scripts run from any working directory, even one holding files named
like this project's packages; a run records our commit only where our packages are a checkout of this repository."""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import beta_dqn
from beta_dqn.driver.outputs import SOURCE, git_commit

ROOT = Path(__file__).resolve().parents[1]
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
    (user / "vendor" / "beta_dqn" / "driver").mkdir(parents=True)
    (user / "vendor" / "beta_dqn" / "driver" / "outputs.py").write_text("# ours\n")
    _git(user, "add", "vendor")
    _git(user, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "vendor beta-dqn")
    assert git_commit(user / "vendor") == _git(user, "rev-parse", "--short=12", "HEAD")
    (user / "notes.txt").write_text("changed, outside our code\n")
    assert git_commit(user / "vendor") == _git(user, "rev-parse", "--short=12", "HEAD")  # not "+dirty"
    (user / "vendor" / "beta_dqn" / "driver" / "outputs.py").write_text("# ours, edited\n")
    assert git_commit(user / "vendor").endswith("+dirty")
    assert git_commit(user) is None  # their repository's top holds no code of ours
    assert git_commit(tmp_path / "not-a-repository") is None  # (no such directory: nothing to run git in)


def test_this_checkout_records_its_own_commit():
    if not (SOURCE / ".git").exists():
        pytest.skip("the packages are not a git checkout here")
    assert git_commit().split("+")[0] == _git(SOURCE, "rev-parse", "--short=12", "HEAD")


def _packages_of_the_users_own(folder: Path) -> None:
    """A working directory holding a user's own modules named like this project's packages, and like the generic
    ones it had before 0.2.0 (`python -m` puts the working directory first on `sys.path`): importing any says so."""
    for name in ("beta_dqn.py", "configuration.py", "driver.py", "filesystem.py"):
        (folder / name).write_text(f"raise SystemExit('the user {name} was imported')\n")
    for name in ("methods", "replay_service", "actors", "meta_controller", "reporting", "launcher"):
        (folder / name).mkdir()
        (folder / name / "__init__.py").write_text(f"raise SystemExit('the user {name}/ was imported')\n")


@pytest.mark.parametrize("command", ["learner.main", "learner.report", "learner.evaluate", "learner.search"])
def test_the_python_m_commands_run_beside_files_named_like_our_packages(tmp_path, command):
    _packages_of_the_users_own(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # our checkout, as an install would put it on the path
    done = subprocess.run([sys.executable, "-m", command, "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "was imported" not in done.stdout + done.stderr


def test_the_installed_import_names_are_the_design_cards_four_and_ours(tmp_path):
    """`pip install .` installs these five import names and no other (the wheel's top_level.txt, and its files)."""
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", "results", "runs", "build", "site",
                                                                "*.egg-info", "__pycache__", ".*_cache"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(tmp_path), str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("beta_dqn-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        listed = set(z.read(top).decode().split())
    allowed = {"actors", "learner", "replay_service", "meta_controller", "beta_dqn"}
    assert listed == allowed, listed
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == allowed
    assert f"beta_dqn-{beta_dqn.__version__}-" in wheel.name
    assert "beta_dqn/configuration/defaults.toml" in names  # the environments' γ and learning rates travel with it


def test_the_python_api_is_one_import_and_loads_nothing_heavy_until_used():
    code = ("import sys, beta_dqn; v = beta_dqn.__version__; "
            "assert not {'torch', 'ray'} & set(sys.modules), 'import beta_dqn loaded torch or Ray'; "
            "from beta_dqn import Agent, Trained, load, train; print(v, callable(train), callable(load))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [beta_dqn.__version__, "True", "True"]
    done = subprocess.run([sys.executable, "-c", "import learner.api"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1] == (
        "ImportError: learner.api is now beta_dqn: the Python API's names are beta_dqn.train, beta_dqn.load, "
        "beta_dqn.Agent and beta_dqn.Trained (changelog, version 0.2.0)")


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_console_scripts_run_beside_files_named_like_our_packages(tmp_path, script):
    path = Path(sys.executable).parent / script
    assert path.is_file(), f"{script} is not installed beside {sys.executable}: pip install -e . (deploy/install.sh)"
    _packages_of_the_users_own(tmp_path)
    done = subprocess.run([str(path), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "was imported" not in done.stdout + done.stderr
