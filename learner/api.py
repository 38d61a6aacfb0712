"""The Python API, `from learner.api import train, load` (the work is `launcher.api`'s)."""

from launcher.api import Agent, Trained, load, train

__all__ = ["Agent", "Trained", "load", "train"]
