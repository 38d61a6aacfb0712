"""β-DQN and its baselines as a distributed actor-learner system: this project's own import name.

    from beta_dqn import train, load
    agent = train(env="MinAtar/Breakout", algo="beta_dqn", total_steps=100_000)

The design card's four packages keep their names (`actors`, `learner`, `replay_service`, `meta_controller`);
everything else of the project lives here: `configuration` (what a run is, and whether it is valid), `files` (files
written safely), `reporting` (tables, statistics, figures), `driver` (one run: its parts, loop, checkpoints and
outputs) and `launcher` (the commands, grids, searches and the Python API). A package imports only from its own
floor and the floors below: the four packages below all of these, and here in that order.

`train`, `load`, `Agent` and `Trained` are `beta_dqn.launcher.api`'s, imported when first used, so that
`import beta_dqn` (for `__version__`) loads neither torch nor Ray.
"""

from __future__ import annotations

from beta_dqn.version import __version__

__all__ = ["Agent", "Trained", "__version__", "load", "train"]


def __getattr__(name: str):
    if name in ("Agent", "Trained", "load", "train"):
        from beta_dqn.launcher import api

        return getattr(api, name)
    raise AttributeError(f"module 'beta_dqn' has no attribute {name!r}")
