"""The configuration's errors (`ConfigError`: a user's mistake, one line naming the flag; `OutputError`: a run's
output that could not be written), and one way every command of the project says a user's mistake: one line on
standard error, `<program>: error: <what>`, and exit status 2 (`USER_ERROR`); no usage dump, no traceback."""

from __future__ import annotations

import argparse
import difflib
import sys
import typing
from pathlib import Path

from beta_dqn.files import write_error

USER_ERROR = 2  # the exit status of a user's mistake, in every command (argparse's own)


class ConfigError(ValueError):
    """A user mistake in the configuration: one line naming the field and what is allowed."""

    def __init__(self, name: str, message: str):
        super().__init__(f"--{name.replace('_', '-')}: {message}")
        self.field, self.message = name, message

    def __reduce__(self):  # rebuilt from its two arguments where it crosses a process (a grid's run on Ray)
        return type(self), (self.field, self.message)


class OutputError(RuntimeError):
    """A run's output could not be written (a full disk, a directory made read-only): one line naming the file
    and the cause (`beta_dqn.files.write_error`)."""

    @classmethod
    def of(cls, path: Path, e: BaseException) -> OutputError:
        return cls(write_error(path, e))


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and status `USER_ERROR`; a flag it does not know is given the
    closest one it does (`did you mean`)."""

    @classmethod
    def script(cls, prog: str, doc: str | None) -> OneLineParser:
        """A script's parser: its docstring (`doc`) is `--help`'s description, line breaks as written."""
        return cls(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)

    def error(self, message: str) -> typing.NoReturn:
        if message.startswith("unrecognized arguments: "):
            known = [s for s in self._option_string_actions if s.startswith("--")]
            unknown = dict.fromkeys(a.split("=", 1)[0] for a in message.removeprefix("unrecognized arguments: ").split()
                                    if a.startswith("--"))  # (each once, in order)
            guesses = [f"{a}: did you mean {close[0]}?" for a in unknown
                       if (close := difflib.get_close_matches(a, known, n=1, cutoff=0.75))]
            message += f" ({'; '.join(guesses)})" if guesses else ""
        self.exit(USER_ERROR, f"{self.prog}: error: {message}\n")


def user_error(prog: str, message: str) -> int:
    """Say the mistake in one line; the status to exit with."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return USER_ERROR


def run_script(prog: str, main: typing.Callable[[], int | None]) -> typing.NoReturn:
    """A script's `__main__`: `main()`'s status, or one line and `USER_ERROR` for a `ConfigError` (a bad
    --env or --device: what `python -m learner.main` says of it)."""
    try:
        status = main()
    except ConfigError as e:
        status = user_error(prog, str(e))
    sys.exit(status)
