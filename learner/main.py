"""`python -m learner.main`: train one run or a grid (`launcher.main` does the work)."""

import sys

from launcher.main import main

if __name__ == "__main__":
    sys.exit(main())
