"""What the commands (`python -m learner.main`, `.report`, `.evaluate`, `.search` and their console scripts) do
before they can start: import the module that does the work. A registry's plugin that cannot register
(`replay_service.plugins.PluginError`: a module named in BETA_DQN_METHODS or BETA_DQN_REPLAYS) is then one line
and exit status 2, as any mistake of the command line is; in Python code it stays an ImportError to catch."""

from __future__ import annotations

import os
import sys
from importlib import import_module
from pathlib import Path


def working_directory_last() -> None:
    """This project's packages first on `sys.path`, the working directory last: `python -m` puts the working
    directory first, so a `beta_dqn.py` or `replay_service/` there (a downloaded run folder's, a user's own) would
    be imported in place of this project's packages (and an editable install's finder is asked only after every path).
    Last, it still serves a user's own modules (`--env module:Id`, a plugin) and shadows nothing; a console script,
    which leaves it off, gets it too. (A `learner/` there is imported before this runs: the console scripts, or
    `python -P -m`, avoid that.)"""
    ours, cwd = str(Path(__file__).resolve().parents[1]), os.getcwd()
    sys.path[:] = [ours, *(p for p in sys.path if p not in ("", cwd, ours)), *([cwd] if cwd != ours else [])]


def run(module: str, argv: list[str] | None = None) -> int:
    """`module.main(argv)`'s exit status, or 2 with one line where importing `module` meets a plugin's failure."""
    working_directory_last()
    from replay_service.plugins import PluginError  # (after: nothing of ours is imported from the working directory)

    try:
        main = import_module(module).main
    except PluginError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return main(argv)


# the console scripts (pyproject.toml): the same as `python -m learner.<command>`
def train() -> int:
    return run("beta_dqn.launcher.main")


def report() -> int:
    return run("beta_dqn.reporting.report")


def evaluate() -> int:
    return run("beta_dqn.launcher.evaluate")


def search() -> int:
    return run("beta_dqn.launcher.search")
