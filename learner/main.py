"""`python -m learner.main`: parse, validate, start or join Ray, run, report.

With no flag but `--actors`, it runs the paper's configuration: β-DQN on MinAtar/Breakout, 5M steps.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import typing

from learner.config import Config, ConfigError, resolve


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> typing.NoReturn:  # one line, status 2, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m learner.main", description=__doc__,
                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    hints = typing.get_type_hints(Config)
    for f in dataclasses.fields(Config):
        kind = hints[f.name]
        if kind is bool:
            conv = _bool
        elif kind in (int, float, str):
            conv = kind
        else:  # float | None
            conv = float
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=conv, default=f.default,
                            metavar=f.name.upper() if conv is not _bool else "BOOL", help=f.metadata["help"])
    return parser


def parse_config(argv: list[str] | None = None) -> Config:
    args = build_parser().parse_args(argv)
    return Config(**vars(args))


def main(argv: list[str] | None = None) -> int:
    try:
        cfg, spec = resolve(parse_config(argv))
        from learner.run import train  # torch and Ray load only for a valid config

        # stdout carries the summary alone: what Ray prints while the run goes on (e.g. raylet warnings
        # about worker start-up with many actors) goes to stderr with the progress bar
        with contextlib.redirect_stdout(sys.stderr):
            summary = train(cfg, spec)
    except ConfigError as e:
        print(f"python -m learner.main: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
