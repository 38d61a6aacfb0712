"""`python -m learner.evaluate RUN_DIR`: a trained run's policy for N episodes (`beta_dqn.launcher.evaluate` does the
work)."""

import sys

from learner.entry import run  # (a plugin's failure while importing beta_dqn.launcher.evaluate is one line)

if __name__ == "__main__":
    sys.exit(run("beta_dqn.launcher.evaluate"))
