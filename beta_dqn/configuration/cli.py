"""The command line of `python -m learner.main`: one flag per `Config` field (a comma list of a flag that
changes what a run computes is a grid axis); `beta_dqn.driver.resume` reads `--resume DIR`'s saved configuration."""

from __future__ import annotations

import argparse
import typing
from pathlib import Path

from beta_dqn.configuration import config_file
from beta_dqn.configuration.checks import ALGOS
from beta_dqn.configuration.commands import cli_name, flag_text
from beta_dqn.configuration.config_file import Section
from beta_dqn.configuration.errors import OneLineParser
from beta_dqn.configuration.fields import AXES, EPSILON_FIELDS, FIELDS, JSON_FIELDS, Config, epsilon_gate

PROG = "python -m learner.main"
GRID_FILE = "grid.json"  # in a grid's directory: what the grid was asked (beta_dqn.launcher.grid_runs)


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


read_bool = _bool  # true/false on any command line of the project (learner.evaluate's --json too)


def _axis(conv):
    """A converter that reads a comma list as a grid axis: the list of the converted values."""

    def convert(text: str):
        if "," not in text:
            return conv(text)
        if any(not v.strip() for v in text.split(",")):
            raise argparse.ArgumentTypeError(f"an empty item in the list {text!r}")
        values = [conv(v.strip()) for v in text.split(",")]
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise argparse.ArgumentTypeError(f"{flag_text(repeated[0])!r} appears twice in the list {text!r}")
        return values

    convert.__name__ = conv.__name__  # argparse names it in "invalid <type> value"
    return convert


def _json(name: str) -> typing.Callable[[str], str]:
    """The reader of a JSON field (`JSON_FIELDS`: --env-kwargs, --wrappers): one value, in its canonical spelling.
    Not a grid axis: JSON has commas of its own, and a run's name and its grid's command could not carry a list
    of objects."""

    def read(text: str) -> str:
        try:
            return JSON_FIELDS[name](text)
        except ValueError as e:  # UnknownEnvError (argparse names the flag: not twice)
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{cli_name(name)}: ")) from None

    read.__name__ = "JSON object" if name == "env_kwargs" else "import path or JSON array"
    return read


# `--help` in groups, each flag once; a method's own flags (and the shared ones whose roles name some methods, as
# the ε schedule) are "the method", whatever their group here would be. tests/test_cli.py checks that every field
# is in exactly one group.
HELP_GROUPS = {
    "what to run": ("env", "env_kwargs", "wrappers", "algo", "seed", "seeds", "total_steps", "runtime", "actors",
                    "envs_per_actor", "chunk_steps", "config", "resume"),
    "the method": (),
    "replay": ("replay", "replay_shards", "replay_capacity", "replay_password_file", "replay_timeout",
               "replay_persist", "run_id", "take_run_id"),
    "cluster and resources": ("address", "actor_cpus", "learner_cpus", "learner_gpus", "retries", "pack_seeds"),
    "learner": ("device", "learner_threads", "cuda_graphs", "obs_layout", "network", "pixels", "batch_size",
                "replay_ratio", "target_update", "learning_starts", "gamma", "lr", "loss", "publish_every"),
    "evaluation": ("eval_every", "eval_episodes", "eval_epsilon"),
    "outputs": ("out", "overwrite", "checkpoint_every", "log_every", "wandb", "wandb_entity", "wandb_project",
                "progress", "json"),
    "set by a grid for its runs": ("grid", "variant"),
}


def help_group(name: str) -> str:
    """The `--help` group of field `name` (`HELP_GROUPS`)."""
    if FIELDS[name].algos != ALGOS:
        return "the method"
    if FIELDS[name].replay is not None and not any(name in names for names in HELP_GROUPS.values()):
        return "replay"  # (a backend's own, where the group does not list it: a backend registered from outside)
    return next((group for group, names in HELP_GROUPS.items() if name in names), "")


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """`--help` with each flag's default appended, but where its help says the default itself, or there is
    none to show (an empty string, None: the help says what stands in)."""

    def _get_help_string(self, action):
        if "default:" in (action.help or "") or action.default in ("", None):
            return action.help
        return super()._get_help_string(action)


def _readers(name: str) -> str:
    """The methods that read field `name`, for `--help`: a method that reads it only while a flag of its own
    is on says so."""
    names = []
    for algo in FIELDS[name].algos:
        gate = epsilon_gate(algo) if name in EPSILON_FIELDS else None
        names.append(f"{algo} (with {cli_name(gate)} true)" if gate else algo)
    return ", ".join(names)


def build_parser(defaults: bool = True, prog: str = PROG) -> argparse.ArgumentParser:
    """learner.main's flags, one per Config field, in `--help`'s groups; `defaults=False`: a flag not given is
    absent from the result (the fields a command names, e.g. a recorded run's); `prog`: the command whose mistakes
    its errors name (`learner.search` takes the same flags)."""
    parser = OneLineParser(prog=prog, usage=f"{prog} [--FLAG VALUE ...]", description=_DESCRIPTION, epilog=_EPILOG,
                           formatter_class=_DefaultsFormatter)
    groups = {title: parser.add_argument_group(title) for title in HELP_GROUPS}
    for f in FIELDS.values():
        kind = f.kind
        conv: typing.Callable[[str], object]
        if kind is bool:
            conv = _bool
        elif kind in (int, float, str):
            conv = kind
        else:  # float | None, int | None
            conv = int if int in typing.get_args(kind) else float
        whose = f.algos
        read = _json(f.name) if f.name in JSON_FIELDS else _axis(conv) if f.name in AXES else conv
        groups[help_group(f.name)].add_argument(cli_name(f.name), dest=f.name, type=read,
                            default=f.default if defaults else argparse.SUPPRESS,
                            metavar={"env_kwargs": "JSON", "wrappers": "WRAPPERS"}.get(f.name) or (
                                f.name.upper() if conv is not _bool else "BOOL"),
                            help=f.help + ("" if whose == ALGOS else f" [read by {_readers(f.name)}]"))
    return parser


_DESCRIPTION = ("Train one run of a method on an environment, or a grid of runs; --resume DIR continues one. "
                "Every default is the specification's but --bandit-returns raw (docs/method.md says why). The "
                "flags, by group (a method's own say which methods read them); docs/running.md explains each.")
_EPILOG = ("A grid: any flag that changes what a run computes, given as a comma list, is an axis, and --seeds "
           "lists seeds; every combination runs (e.g. --algo beta_dqn,dqn --bandit-returns minmax,raw --seeds "
           "0-9). A flag a method does not read keeps its default for that method's runs.")


def parse_command(argv: list[str] | None = None, prog: str = PROG) -> tuple[dict, frozenset[str], tuple[Section, ...]]:
    """The command line's values with `--config`'s file under them (every field), the flags the command line
    or the file's top level named, and the file's sections for each run (`config_file.for_run`)."""
    args = vars(build_parser(prog=prog).parse_args(argv))
    named = frozenset(vars(build_parser(defaults=False, prog=prog).parse_args(argv)))
    args, sections, from_file = config_file.apply(args, named)
    return args, named | from_file, sections


def parse_config(argv: list[str] | None = None) -> Config:
    """One run's configuration from its command line (and `--config`'s file)."""
    args, _, sections = parse_command(argv)
    return Config.of(**config_file.for_run(args, sections))


def is_grid(args: dict) -> bool:
    """Whether the command line asks for a grid: a flag given as a comma list (an axis), `--seeds`, or
    `--resume` of a grid directory."""
    resume = args.get("resume") or ""
    return (any(isinstance(v, list) for v in args.values()) or bool(args.get("seeds"))
            or bool(resume and (Path(resume) / GRID_FILE).is_file()))
