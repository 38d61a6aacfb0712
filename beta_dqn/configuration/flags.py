"""The configuration as the packages above it import it: every name here is defined in the module beside it that
holds its concern and re-exported (imported from here by beta_dqn/driver/, beta_dqn/launcher/, beta_dqn/reporting/,
bench/, results/ and
tests/). The package's own modules import from those modules:

- `beta_dqn.configuration.fields`: `Config` and its fields, their roles and the sets of them (`FIELDS`, `AXES`, ...),
  which method reads which field (`reads`);
- `beta_dqn.configuration.compat`: what this version reads of what earlier ones wrote (`LEGACY`, `with_legacy`,
  the checkpoint's and grid.json's formats, run directories without a record);
- `beta_dqn.configuration.checks`: the values each choice allows, `validate` (run by every `Config`), `parse_seeds`,
  `replay_backend`;
- `beta_dqn.configuration.resolution`: `resolve`, the settled `auto` values, run directories' names, the configuration
as
  written (`public`) and a masked password given back (`restore_password`);
- `beta_dqn.configuration.schedule`: the ε schedule in env steps and what does not fit inside --total-steps;
- `beta_dqn.configuration.settings`: what the method and each process read of the configuration;
- `beta_dqn.configuration.commands`: a configuration as a command line again (`run_command`, `grid_command`);
- `beta_dqn.configuration.errors`: `ConfigError`, `OutputError`.
"""

from __future__ import annotations

from beta_dqn.configuration.checks import ALGOS, MAX_GRID_RUNS, parse_seeds, replay_backend
from beta_dqn.configuration.commands import cli_name, flag_text, grid_command, run_command
from beta_dqn.configuration.compat import LEGACY, with_legacy
from beta_dqn.configuration.errors import ConfigError, OutputError
from beta_dqn.configuration.fields import (
    AXES,
    BOOKKEEPING,
    FIELDS,
    GRID_RESUME_MAY_CHANGE,
    JSON_FIELDS,
    PER_SEED,
    RESUME_MAY_CHANGE,
    SECRETS,
    Config,
    fits,
    kinds,
    reads,
)
from beta_dqn.configuration.resolution import (
    public,
    resolve,
    restore_password,
    run_name,
    run_seed,
    settled_arm_exchange,
    settled_runtime,
    shorten,
)
from beta_dqn.configuration.schedule import (
    epsilon_decay_steps,
    epsilon_plan,
    epsilon_schedule,
    fit_warning,
    no_update_error,
)
from beta_dqn.configuration.settings import method_settings, settings

__all__ = [
    "ALGOS", "AXES", "BOOKKEEPING", "FIELDS", "GRID_RESUME_MAY_CHANGE", "JSON_FIELDS", "LEGACY", "MAX_GRID_RUNS",
    "PER_SEED",
    "RESUME_MAY_CHANGE",
    "SECRETS", "Config", "ConfigError", "OutputError", "cli_name", "epsilon_decay_steps", "epsilon_plan",
    "epsilon_schedule", "fit_warning", "fits", "flag_text", "grid_command", "kinds", "method_settings",
    "no_update_error", "parse_seeds", "public", "reads", "replay_backend", "resolve", "restore_password",
    "run_command", "run_name", "run_seed", "settings", "settled_arm_exchange", "settled_runtime", "shorten",
    "with_legacy",
]
