"""What the commands (`python -m learner.main`, `.report`, `.evaluate`, `.search` and their console scripts) do
before they can start: import the module that does the work. A registry's plugin that cannot register
(`replay_service.plugins.PluginError`: a module named in BETA_DQN_METHODS or BETA_DQN_REPLAYS) is then one line
and exit status 2, as any mistake of the command line is; in Python code it stays an ImportError to catch."""

from __future__ import annotations

import sys
from importlib import import_module

from replay_service.plugins import PluginError


def run(module: str, argv: list[str] | None = None) -> int:
    """`module.main(argv)`'s exit status, or 2 with one line where importing `module` meets a plugin's failure."""
    try:
        main = import_module(module).main
    except PluginError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return main(argv)


# the console scripts (pyproject.toml): the same as `python -m learner.<command>`
def train() -> int:
    return run("launcher.main")


def report() -> int:
    return run("reporting.report")


def evaluate() -> int:
    return run("launcher.evaluate")


def search() -> int:
    return run("launcher.search")
