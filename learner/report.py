"""`python -m learner.report RUN_OR_GRID_DIR ...`: tables and figures (the driver, `beta_dqn.reporting.report`, draws
them)."""

import sys

from learner.entry import run  # (a plugin's failure while importing beta_dqn.reporting.report is one line)

if __name__ == "__main__":
    sys.exit(run("beta_dqn.reporting.report"))
