"""`python -m learner.evaluate RUN_DIR`: a trained run's policy for N episodes (`launcher.evaluate` does the work)."""

import sys

from launcher.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
