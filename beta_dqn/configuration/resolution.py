"""The configuration a run runs with, from the flags it was given: `resolve` fills the environment's defaults,
the run's directory and id, and settles the `auto` values (`settled_runtime`, `settled_arm_exchange`); a run
directory's name (`run_name`, `run_seed`, `shorten`); the configuration as the run writes it, its secrets masked
(`public`), and a masked Redis password given back on resume (`restore_password`)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from actors.envs import EnvSpec, UnknownEnvError, canonical_kwargs, canonical_name, canonical_wrappers, env_spec
from beta_dqn.configuration.checks import replay_backend
from beta_dqn.configuration.defaults import env_defaults
from beta_dqn.configuration.errors import ConfigError
from beta_dqn.configuration.fields import SECRETS, Config
from beta_dqn.configuration.schedule import epsilon_decay_steps
from learner.methods.reading import ReadingError
from replay_service.backends import masked
from replay_service.contract import BackendError


def public(values: Config | dict) -> dict:
    """A configuration as written to config.json, checkpoints, grid.json and W&B: every field whose role is
    "secret" masked (Redis URLs: their passwords)."""
    out = values.flat() if isinstance(values, Config) else dict(values)
    return {k: masked(v) if k in SECRETS and isinstance(v, str) else v for k, v in out.items()}


def restore_password(replay: str, what: str, flags: Mapping[str, Any]) -> str:
    """A saved --replay with what its backend masked (a Redis URL's password, ***) given back from off the
    command line (--replay-password-file, else REDIS_PASSWORD), for resuming `what` (a run or a grid); one line
    saying what to provide when none is given."""
    try:
        return replay_backend(replay).unmask(replay, flags, what)
    except BackendError as e:
        raise ConfigError(e.name, e.message) from None


def run_name(env: str, algo: str, seed: int, variant: str = "") -> str:
    """A run directory's name: `<env>_<algo>[_<variant>]_s<seed>`, e.g. CliffWalk_beta_dqn_bandit-returns=raw_s3."""
    # a directory name has 255 bytes at most
    middle = shorten(f"_{variant.replace(',', '_').replace('/', '-')}", 160) if variant else ""
    return f"{canonical_name(env).replace('/', '-').replace(':', '-')}_{algo}{middle}_s{seed}"


def run_seed(name: str) -> int | None:
    """The seed `run_name` wrote into a run directory's name; None where the name does not say."""
    match = re.search(r"_s(\d+)$", name)
    return int(match.group(1)) if match else None


def shorten(text: str, limit: int) -> str:
    """`text` within `limit` characters: a longer one cut, ending in a hash of the whole (names stay unique)."""
    if len(text) <= limit:
        return text

    return f"{text[:limit - 9]}~{hashlib.sha1(text.encode()).hexdigest()[:8]}"


def settled_runtime(runtime: str, in_grid: bool, joins_cluster: bool = False) -> str:
    """`--runtime auto`: Ray for one run (its actors in processes of their own), and for a grid that joins a cluster
    (--address or RAY_ADDRESS: its runs' actors spread over the nodes); serial for a run of a grid on this machine
    (the grid places one such process a core: on 2 cores, 2.3× the env steps per second of Ray runs placed one at
    a time for DQN; `bench/grid.py`, docs/benchmarks.md)."""
    if runtime != "auto":
        return runtime
    return "serial" if in_grid and not joins_cluster else "ray"


def settled_arm_exchange(algo: str, runtime: str, value: str) -> str:
    """`--arm-exchange auto` for β-DQN: a call per episode on the serial runtime (it costs nothing in one
    process), per chunk on Ray."""
    if value == "auto" and algo == "beta_dqn":
        return "episode" if runtime == "serial" else "chunk"
    return value


def _flag_error(text: str) -> ConfigError:
    """An environment's refusal as the ConfigError of the flag it names first (--wrappers, --obs-layout, --network,
    --pixels; else --env)."""
    for name in ("wrappers", "obs_layout", "network", "pixels"):
        flag = f"--{name.replace('_', '-')}"
        if text.startswith(flag):
            return ConfigError(name, text.removeprefix(flag).lstrip(": "))
    return ConfigError("env", text)


def resolve(cfg: Config) -> tuple[Config, EnvSpec]:
    """Fill environment defaults (γ, lr, out) and return (config, EnvSpec); unknown env -> ConfigError."""
    try:
        kwargs = canonical_kwargs(cfg.env_kwargs)
    except UnknownEnvError as e:
        raise ConfigError("env_kwargs", str(e)) from None
    try:
        wrappers = canonical_wrappers(cfg.wrappers)
        spec = env_spec(cfg.env, kwargs, wrappers, cfg.obs_layout, cfg.network, cfg.pixels)
    except (UnknownEnvError, ReadingError) as e:
        raise _flag_error(str(e)) from None
    out = cfg.out or f"runs/{run_name(cfg.env, cfg.algo, cfg.seed)}"
    run_id = cfg.run_id or f"{Path(out).name}-{secrets.token_hex(4)}"
    runtime = settled_runtime(cfg.runtime, bool(cfg.grid), bool(cfg.address or os.environ.get("RAY_ADDRESS")))
    gamma, lr = env_defaults(spec.name)
    cfg = cfg.replaced(
        env=spec.name, env_kwargs=kwargs, wrappers=wrappers, out=out, runtime=runtime, run_id=run_id,
        arm_exchange=settled_arm_exchange(cfg.algo, runtime, cfg.value("arm_exchange")),
        gamma=gamma if cfg.gamma is None else cfg.gamma, lr=lr if cfg.lr is None else cfg.lr,
        eps_decay_steps=epsilon_decay_steps(cfg), **replay_backend(cfg.replay).settle(cfg))
    return cfg, spec
