"""A configuration as a command line again: each field's `--flag` and value as the command line gives them
(`cli_name`, `flag_text`), and the command of a run (`run_command`) or a grid (`grid_command`) that names what it
computes (`command_line`)."""

from __future__ import annotations

import shlex

from beta_dqn.configuration.compat import LEGACY, with_legacy
from beta_dqn.configuration.defaults import env_defaults
from beta_dqn.configuration.fields import AXES, FIELDS, reads


def cli_name(name: str) -> str:
    """Field `name` as its command-line option: `--` and the name with dashes for underscores."""
    return "--" + name.replace("_", "-")


def flag_text(value) -> str:
    """A value as the command line gives it (booleans as true/false; a list as a grid axis)."""
    if isinstance(value, list):
        return ",".join(flag_text(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def command_line(values: dict, always: tuple[str, ...] = ("env", "algo")) -> str:
    """`python -m learner.main` with the flags among `values` whose value is not the default (and `always`)."""
    parts = ["python -m learner.main"]
    for name, f in FIELDS.items():
        if name in values and (values[name] != f.default or (name in always and values[name] is not None)):
            parts += [cli_name(name), shlex.quote(flag_text(values[name]))]
    return " ".join(parts)


def grid_command(args: dict) -> str:
    """The command of a grid (its grid.json's `args`): the flags that one of its methods reads and that are not
    the default, and a field whose default is under study (LEGACY) whatever its value where a method of the grid
    reads it, as in run_command; a grid.json that lacks such a field gets LEGACY's value, as its resume does."""
    algos = args["algo"] if isinstance(args["algo"], list) else [a.strip() for a in str(args["algo"]).split(",")]
    legacy = {k: v for k, v in LEGACY.items() if any(reads(algo, k, args) for algo in algos)}
    values = {k: v for k, v in {**legacy, **args}.items()
              if k in FIELDS and k not in ("resume", "variant") and any(reads(algo, k, args) for algo in algos)}
    # the ε decay's fraction, named where read: a grid command that names neither it nor --eps-decay-steps reads
    # as ε decaying over 1M steps (beta_dqn.reporting.records.pinned_command)
    fraction = ("eps_decay_fraction",) if "eps_decay_fraction" in values else ()
    return command_line(values, always=("env", "algo", *legacy, *fraction))


def run_command(config: dict, device: str = "cpu") -> str:
    """The command line that computes the run of `config` (config.json) again on `device` (its summary's):
    every field that changes what it computes (and its seed), where it differs from the default (γ and the
    learning rate: the env's); the device and the learner's threads, which change its floating point."""
    gamma, lr = env_defaults(config["env"])
    config = with_legacy(config)
    values = {k: v for k, v in config.items()
              if k in FIELDS and (k in AXES or k == "seed") and reads(config["algo"], k, config)}
    for name, default in (("gamma", gamma), ("lr", lr)):
        if values.get(name) == default:
            del values[name]
    values["device"] = device.split(":")[0]
    values["learner_threads"] = config.get("learner_threads", 1)
    # a field whose default is under study is named whatever its value: the command reads the same after a change
    named = tuple(k for k in LEGACY if reads(config["algo"], k, config))
    return command_line(values, always=("env", "algo", "seed", "device", *named))
