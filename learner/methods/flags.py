"""A method's own flags: a frozen dataclass in its folder (`<method>/flags.py`) whose fields are `flag`s, each
with its default and help text, and whose `check()` raises `FlagError` at the first bad value.
`beta_dqn.configuration.fields.Config` holds an instance of every registered method's `Flags` (`config.methods`), and
the command line, grids and resume name each flag flat, by its own name (a flag is read by its method, and by the
methods its `also` names). The declaration and the checks are the ones replay backends' flags use too
(`replay_service.flags`).
"""

from __future__ import annotations

from replay_service.flags import FlagError, choice, flag, non_negative, open_unit, positive

__all__ = ["FlagError", "choice", "flag", "non_negative", "open_unit", "positive"]
