"""This project's version (`beta_dqn.__version__`, the distribution's, pyproject.toml reads it here)."""

__version__ = "0.2.0"
