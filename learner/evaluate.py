"""`python -m learner.evaluate RUN_DIR`: a trained run's policy for N episodes (`launcher.evaluate` does the work)."""

import sys

from learner.entry import run  # (a plugin's failure while importing launcher.evaluate is one line)

if __name__ == "__main__":
    sys.exit(run("launcher.evaluate"))
