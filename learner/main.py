"""`python -m learner.main`: train one run or a grid (the driver, `driver.main`, does the work)."""

import sys

from driver.main import main

if __name__ == "__main__":
    sys.exit(main())
