"""`python -m learner.search`: a grid's command line as a Ray Tune search (`launcher.search` does the work);
`from learner.search import trainable, best` for Tune from Python."""

import sys

if __name__ == "__main__":  # the command: a plugin's failure is one line (`learner.entry`)
    from learner.entry import run

    sys.exit(run("launcher.search"))

from launcher.search import best, main, table, trainable  # noqa: E402  (Python's names: Tune's trainable, best)

__all__ = ["best", "main", "table", "trainable"]
