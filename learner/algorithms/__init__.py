"""One module per method: its networks and its loss (the contract is in `dqn`'s docstring).
Acting lives in `actors.policies`."""

from learner.algorithms import beta_dqn, bootstrapped_dqn, dqn, ez_greedy, lesson, rnd

ALGORITHMS = {"beta_dqn": beta_dqn, "dqn": dqn, "bootstrapped_dqn": bootstrapped_dqn, "ez_greedy": ez_greedy,
              "rnd": rnd, "lesson": lesson}
