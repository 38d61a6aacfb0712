"""`python -m learner.search`: a grid's command line as a Ray Tune search (`launcher.search` does the work);
`from learner.search import trainable, best` for Tune from Python."""

import sys

from launcher.search import best, main, table, trainable

__all__ = ["best", "main", "table", "trainable"]

if __name__ == "__main__":
    sys.exit(main())
