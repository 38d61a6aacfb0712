"""`python -m learner.report RUN_OR_GRID_DIR ...`: tables and figures (the driver, `driver.report`, draws them)."""

import sys

from driver.report import main

if __name__ == "__main__":
    sys.exit(main())
