"""`python -m learner.search`: a grid's command line as a Ray Tune search (`beta_dqn.launcher.search` does the
work; for Tune from Python, its `trainable` and `best`)."""

import sys

from learner.entry import run  # (a plugin's failure while importing beta_dqn.launcher.search is one line)

if __name__ == "__main__":
    sys.exit(run("beta_dqn.launcher.search"))
