"""Plugins of the registries: modules named in an environment variable (`BETA_DQN_METHODS`, `BETA_DQN_REPLAYS`,
`BETA_DQN_ENVS`) that register a method, a replay backend or an environment family of their own when imported.
Whatever such a module does wrong while being imported (raises anything, has a syntax error, is a relative name,
calls `sys.exit`) is one `PluginError`, a line naming the variable and the module: a command says it and exits 2
(`learner.entry`), Python code gets an ImportError it can catch. (Here, the lowest of the packages that hold a
registry, so that all three can import it.)"""

from __future__ import annotations

import os
from importlib import import_module


class PluginError(ImportError):
    """A module named in a registry's environment variable could not register what it holds."""


def load_plugins(variable: str, what: str) -> None:
    """Imports each module named in `variable` (comma-separated); PluginError, one line, for the first that fails."""
    for module in filter(None, (m.strip() for m in os.environ.get(variable, "").split(","))):
        try:
            import_module(module)
        except SystemExit as e:  # a plugin that exits would end the command as if it had run
            raise PluginError(f"{variable}: cannot register the {what} of {module!r}: it called sys.exit({e.code!r}) "
                              "while being imported") from None
        except Exception as e:  # noqa: BLE001 - a user's module: whatever it raises is one line
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            reason = text if isinstance(e, (ImportError, ValueError)) else f"{type(e).__name__}: {text}".rstrip(": ")
            raise PluginError(f"{variable}: cannot register the {what} of {module!r}: {reason}") from None
