"""`python -m learner.main`: train one run or a grid (`beta_dqn.launcher.main` does the work)."""

import sys

from learner.entry import run  # (a plugin's failure while importing beta_dqn.launcher.main is one line)

if __name__ == "__main__":
    sys.exit(run("beta_dqn.launcher.main"))
