"""One module per method: its networks and its loss. Acting lives in `actors.policies`."""

from learner.algorithms import beta_dqn, dqn

ALGORITHMS = {"beta_dqn": beta_dqn, "dqn": dqn}
