"""`--config FILE`: the command line's flags from a TOML (.toml) or YAML (.yaml, .yml) file.

    total_steps = 500000                 # top level: every run (a list is a grid axis, as a comma list is)
    algo = ["beta_dqn", "dqn"]
    [algos.dqn]                          # the runs of one method
    eps_decay_fraction = 0.1
    [envs."MinAtar/Asterix"]             # the runs of one environment
    lr = 3e-5
    [envs.DoorKey.algos.beta_dqn]        # one method on one environment
    bandit_window = 500

A key is a flag without its dashes (`total_steps` or `total-steps`). The more specific wins: the top level,
then `algos.<method>`, then `envs.<env>`, then `envs.<env>.algos.<method>`; the command line wins over all of
the file. A section sets only what its run's method reads (as a grid gives the others their default). Below
every file lie the environments' own γ and learning rates (`beta_dqn/configuration/defaults.toml`, the same format,
shipped with the project). A run's `config.json` records what the file gave it; a grid keeps the file's
sections in grid.json, so a resume runs what the grid ran whatever became of the file.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import tomllib
from pathlib import Path

from actors.envs import MAX_NESTING, canonical_name, known_names, nesting
from beta_dqn.configuration.errors import ConfigError
from beta_dqn.configuration.fields import AXES, FIELDS, JSON_FIELDS, fits, kinds, reads
from beta_dqn.files import Unreadable, read_bounded
from learner.methods import METHODS

MAX_BYTES = 1 << 20  # a configuration file is a page of settings, not data
SUFFIXES = (".toml", ".yaml", ".yml")
# not in a file: the file itself and what a grid sets for its runs. A section sets only what changes what a
# run computes (`AXES`: where and how runs execute is the command's, or the file's top level), less what names
# its runs (`env`, `algo`)
# `overwrite` and `take_run_id` too: what removes a run's outputs or takes another run's replay is said on the command
# line each time, never carried by a shared settings file
NOT_IN_FILE = frozenset({"config", "resume", "grid", "variant", "overwrite", "take_run_id"})
MAX_DEPTH = MAX_NESTING  # nesting of tables and lists in a file (settings need 4: envs.<env>.algos.<method>, a list)
IN_SECTION = AXES - {"env", "algo"}


@dataclasses.dataclass(frozen=True)
class Section:
    """Settings for the runs of one environment, one method, or both (None: any)."""

    env: str | None
    algo: str | None
    values: dict

    def matches(self, env: str, algo: str) -> bool:
        return (self.env is None or self.env == canonical_name(env)) and (self.algo is None or self.algo == algo)

    @property
    def rank(self) -> int:  # the more specific wins: top level < method < environment < both
        return (self.algo is not None) + 2 * (self.env is not None)

    def header(self) -> str:
        env = f'envs."{self.env}"' if self.env is not None else ""
        algo = f"algos.{self.algo}" if self.algo is not None else ""
        return f"[{'.'.join(x for x in (env, algo) if x)}]"

    def as_json(self) -> dict:
        return {"env": self.env, "algo": self.algo, "values": self.values}

    @classmethod
    def from_json(cls, d: dict) -> Section:
        """A section as grid.json saved it (a field this program does not have, an older version's, is left out, as
        grid.json's own arguments' are)."""
        return cls(d.get("env"), d.get("algo"), {k: v for k, v in d.get("values", {}).items() if k in FIELDS})


@dataclasses.dataclass(frozen=True)
class ConfigFile:
    path: str
    top: dict  # field -> value (a list: a grid axis)
    sections: tuple[Section, ...]


def _fail(path, message: str) -> ConfigError:
    return ConfigError("config", f"{path}: {message}")


def _read_text(path: Path) -> str:
    """The file's text: a regular file of at most MAX_BYTES, UTF-8 (`read_bounded`); anything else one line."""
    try:
        return read_bounded(path, MAX_BYTES)
    except Unreadable as e:
        more = "; a configuration file holds settings" if str(e).startswith("is larger") else ""
        raise _fail(path, f"{e}{more}") from None


def _parse(path: Path) -> dict:
    if path.suffix not in SUFFIXES:
        raise _fail(path, f"unknown format {path.suffix or '(no suffix)'!r}; allowed: {', '.join(SUFFIXES)}")
    text = _read_text(path)
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise _fail(path, f"is not valid TOML ({e})") from None
        except RecursionError:  # tomllib recurses per level of nesting
            raise _fail(path, f"nests tables or lists deeper than Python can read; settings nest {MAX_DEPTH} deep "
                              "at most") from None
    else:
        import yaml  # (PyYAML: Ray's dependency)

        try:
            data = yaml.load(text, Loader=_yaml_loader())  # plain data only: no object a file could name is built
        except yaml.YAMLError as e:
            raise _fail(path, f"is not valid YAML ({str(e).splitlines()[0]})") from None
        data = {} if data is None else data
    if not isinstance(data, dict):
        raise _fail(path, "must hold a table of settings (key = value)")
    if nesting(data, MAX_DEPTH + 1) > MAX_DEPTH:
        raise _fail(path, f"nests tables or lists more than {MAX_DEPTH} deep; settings need 4 at most")
    return data


def _yaml_loader():
    """PyYAML's safe loader with YAML 1.2's plain scalars: true/false only as booleans (not yes, no, on, off),
    decimal integers only (not 0x10, 010 or 1:40, which YAML 1.1 reads as 16, 8 and 100), and floats with or
    without a point (1e-4 too, which YAML 1.1 reads as text)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        """Refuses what a page of settings never needs and a hostile file uses: aliases (`*name`, which expand a
        1 KB file into 10⁹ nodes), nesting deeper than MAX_DEPTH (read recursively) and a key given twice
        (TOML refuses it too)."""

        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(None, None, f"an alias (*{event.anchor}): a configuration file "
                                                  "may not repeat a node by reference; write it out",
                                                  event.start_mark)
            if self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
                if self.depth >= MAX_DEPTH:
                    raise yaml.composer.ComposerError(None, None, f"tables or lists nest more than {MAX_DEPTH} "
                                                      "deep; settings need 4 at most", self.peek_event().start_mark)
                self.depth += 1
                try:
                    return super().compose_node(parent, index)
                finally:
                    self.depth -= 1
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                            key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    tags = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
    Loader.yaml_implicit_resolvers = {first: [(tag, rx) for tag, rx in resolvers if tag not in tags]
                                      for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"),
                                 list("-+0123456789"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(
        r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
        list("-+0123456789."))
    return Loader


def _value(path, where: str, name: str, value, axis_ok: bool):
    """`value` for field `name`, as the field's type (a list where it may be a grid axis; --wrappers' list is its
    value)."""
    if name == "wrappers" and isinstance(value, list):
        value = json.dumps(value)
    if isinstance(value, list):
        if not axis_ok or name not in AXES:
            allowed = ("lists (grid axes) go at the top level of the file or on the command line" if not axis_ok
                       else "only a flag that changes what a run computes may be a list (a grid axis)")
            raise _fail(path, f"{where}{name} is a list; {allowed}")
        if not value:
            raise _fail(path, f"{where}{name} is an empty list")
        values = [_value(path, where, name, v, False) for v in value]
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise _fail(path, f"{where}{name} lists {repeated[0]!r} twice")
        return values
    if name in JSON_FIELDS and isinstance(value, (dict, list)):  # the natural form in a file
        value = json.dumps(value)
    if name in JSON_FIELDS and isinstance(value, str):
        try:
            return JSON_FIELDS[name](value)
        except ValueError as e:
            raise _fail(path, f"{where}{name}: {e}") from None
    if not fits(name, value):
        words = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}
        raise _fail(path, f"{where}{name} = {value!r}: expected {' or '.join(words[k] for k in kinds(name))}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and float in kinds(name):
        if not math.isfinite(value):
            raise _fail(path, f"{where}{name} = {value!r}: expected a finite number")
        return float(value)
    return value


def _settings(path, where: str, table: dict, in_section: bool, algo: str | None = None) -> dict:
    out = {}
    for key, value in table.items():
        name = str(key).replace("-", "_")
        if name not in FIELDS:
            close = difflib.get_close_matches(name, FIELDS, n=1, cutoff=0.75)
            guess = f" (did you mean {close[0]}?)" if close else ""
            raise _fail(path, f"unknown setting {where}{key!r}{guess}; a key is a flag without its dashes "
                              "(total_steps or total-steps; python -m learner.main --help lists them)")
        if name in NOT_IN_FILE or (in_section and name not in IN_SECTION):
            reason = ("it is given on the command line" if name in NOT_IN_FILE
                      else "a section names its runs by its header" if name in ("env", "algo")
                      else "a section sets only what changes what a run computes; put it at the top level")
            raise _fail(path, f"{where}{name} cannot be set {'in a section' if in_section else 'in a file'} "
                              f"({reason})")
        if algo is not None and not reads(algo, name):
            raise _fail(path, f"{where}{name}: {algo} does not read it (read by "
                              f"{', '.join(FIELDS[name].algos)})")
        if name in out:
            raise _fail(path, f"{where}{name} is given twice")
        out[name] = _value(path, where, name, value, axis_ok=not in_section)
    return out


def _tables(path, where: str, value) -> dict:
    if not isinstance(value, dict):
        raise _fail(path, f"{where} must be a table of sections ([{where}.NAME])")
    return value


def _check_env(path, where: str, env: str) -> None:
    """A section's environment is one a run can name: a known name, a registered Gymnasium id, or module:Id
    (a misspelt name would match no run, and its settings would be lost without a word)."""
    if ":" in env or canonical_name(env) in known_names():
        return
    import gymnasium as gym

    if env not in gym.registry:
        raise _fail(path, f"{where}names no environment a run can have; known: {', '.join(known_names())}, a "
                          "registered Gymnasium id, or module:Id")


def read(path: str | Path) -> ConfigFile:
    """A configuration file, checked: every key a flag, every value of its type; one line for any mistake."""
    path = Path(path)
    data = _parse(path)
    top_keys = {k: v for k, v in data.items() if k not in ("envs", "algos")}
    top = _settings(path, "", top_keys, in_section=False)
    sections = []

    def method_sections(where: str, env: str | None, table) -> None:
        for algo, values in _tables(path, where, table).items():
            if algo not in METHODS:
                raise _fail(path, f"[{where}.{algo}]: unknown method; known: {', '.join(METHODS)}")
            here = f"[{where}.{algo}] "
            if not isinstance(values, dict):
                raise _fail(path, f"{here}must be a table of settings")
            sections.append(Section(env, algo, _settings(path, here, values, in_section=True, algo=algo)))

    method_sections("algos", None, data.get("algos", {}))
    for env, table in _tables(path, "envs", data.get("envs", {})).items():
        here = f'[envs."{env}"] '
        if not isinstance(table, dict):
            raise _fail(path, f"{here}must be a table of settings")
        _check_env(path, here, env)
        values = {k: v for k, v in table.items() if k != "algos"}
        sections.append(Section(canonical_name(env), None, _settings(path, here, values, in_section=True)))
        if "algos" in table:
            method_sections(f'envs."{env}".algos', canonical_name(env), table["algos"])
    return ConfigFile(str(path), top, tuple(sections))


def apply(args: dict, named: frozenset[str]) -> tuple[dict, tuple[Section, ...], frozenset[str]]:
    """The command line's values (`args`, every field; `named`: the flags it gave) with `--config`'s file
    under them: its top level set where the command line is silent, and its sections, less what the command
    line gave, to be applied to each run by `for_run` once its environment and method are known; and the
    fields the file's top level gave (given, as the command line's are: a grid keeps them as given)."""
    if not args.get("config"):
        return args, (), frozenset()
    if args.get("resume"):
        raise ConfigError("config", "with --resume: a resumed run or grid keeps the configuration it started with")
    file = read(args["config"])
    merged = {**args, **{k: v for k, v in file.top.items() if k not in named}}
    sections = tuple(Section(s.env, s.algo, {k: v for k, v in s.values.items() if k not in named})
                     for s in file.sections)
    for section in sections:
        axis = next((k for k in section.values if isinstance(merged.get(k), list)), None)
        if axis:
            raise _fail(file.path, f"{section.header()} sets {axis}, which is a grid axis (a list); a run's value "
                                   "of an axis is the axis's")
    return merged, tuple(s for s in sections if s.values), frozenset(k for k in file.top if k not in named)


def for_run(run: dict, sections: tuple[Section, ...]) -> dict:
    """One run's values with the sections that match its environment and method, the more specific last;
    a section sets only what the run's method reads."""
    merged: dict = {}
    for section in sorted((s for s in sections if s.matches(run["env"], run["algo"])), key=lambda s: s.rank):
        merged.update(section.values)
    given = {**run, **merged}  # (whether a method reads a field may hang on a switch a section turns on)
    return {**run, **{name: value for name, value in merged.items() if reads(run["algo"], name, given)}}
