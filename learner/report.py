"""`python -m learner.report RUN_OR_GRID_DIR ...`: tables and figures (the driver, `reporting.report`, draws them)."""

import sys

from reporting.report import main

if __name__ == "__main__":
    sys.exit(main())
