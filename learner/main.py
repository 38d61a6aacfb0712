"""`python -m learner.main`: train one run or a grid (`launcher.main` does the work)."""

import sys

from learner.entry import run  # (a plugin's failure while importing launcher.main is one line)

if __name__ == "__main__":
    sys.exit(run("launcher.main"))
