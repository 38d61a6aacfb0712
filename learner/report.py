"""`python -m learner.report RUN_OR_GRID_DIR ...`: tables and figures (the driver, `reporting.report`, draws them)."""

import sys

from learner.entry import run  # (a plugin's failure while importing reporting.report is one line)

if __name__ == "__main__":
    sys.exit(run("reporting.report"))
