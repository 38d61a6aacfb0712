"""Any Gymnasium id with a discrete action space and a Box or Discrete observation (`actors.envs.wrappers.observable`;
after `--wrappers`), and `module:Id` (a module of the user's that
registers `Id` when imported: imported here, and in every Ray worker, which `env_modules` ships it to). Scored by
their return. The catalogue's last family: it takes every name no other family owns."""

from __future__ import annotations

import importlib

import gymnasium as gym

from actors.envs.registry import Family, UnknownEnvError, make_registered, register_last, unknown


def _import_env_module(name: str) -> str:
    """`module:Id` -> Id, the module imported (it registers Id); one line naming what was tried where not."""
    module, _, env_id = name.partition(":")
    if not module or not env_id:
        raise UnknownEnvError(f"env {name!r}: give module:Id, a module that registers the Gymnasium id Id")
    try:
        importlib.import_module(module)
    except SystemExit as e:  # it would end the command as if it had run (exit 0)
        raise UnknownEnvError(f"env {name!r}: module {module!r} called sys.exit({e.code!r}) while being imported"
                              ) from None
    except Exception as e:  # noqa: BLE001 - the user's module: whatever it raises is one line
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise UnknownEnvError(f"env {name!r}: module {module!r} cannot be imported ({type(e).__name__}: {reason}); "
                              "it must be importable from the working directory or the Python path") from None
    if env_id not in gym.registry:
        raise UnknownEnvError(f"env {name!r}: module {module!r} was imported but registers no Gymnasium id "
                              f"{env_id!r} (gymnasium.register(id={env_id!r}, entry_point=...))")
    return env_id


def registered(name: str) -> str:
    """The Gymnasium id of a name this family makes (`module:Id`: its module imported), UnknownEnvError where
    Gymnasium's registry has none; nothing is made."""
    if name.startswith("MiniGrid-"):
        import minigrid  # noqa: F401  (registers the MiniGrid ids)
    env_id = _import_env_module(name) if ":" in name else name
    if env_id not in gym.registry:
        raise UnknownEnvError(unknown(name))
    return env_id


def make(name: str, kwargs, render_mode: str | None) -> gym.Env:
    env_id = registered(name)
    return make_registered(name, env_id, kwargs, **({"render_mode": render_mode} if render_mode else {}))


register_last(Family("Other", names=(), make=make, owns=lambda name: True))
