"""The Python API's former name. The API is `beta_dqn`'s now (`beta_dqn.train`, `beta_dqn.load`, `beta_dqn.Agent`,
`beta_dqn.Trained`); importing this module says so in one line, an ImportError, and imports nothing."""

raise ImportError("learner.api is now beta_dqn: the Python API's names are beta_dqn.train, beta_dqn.load, "
                  "beta_dqn.Agent and beta_dqn.Trained (changelog, version 0.2.0)")
