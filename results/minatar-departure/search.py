"""Stage 2a's report (PLAN.md beside this file, "Stage 2a: choosing each method's rate, and when a default rate
changes"): per MinAtar game and method, the mean final score over seeds 0-2 at each rate of {3e-4, 1e-4, 3e-5},
the rate chosen by PLAN.md's rule (`rates.chosen`), the held-out seeds 3-4 at the chosen rate beside the default
rate's, and the rule for a default rate; then P(β-DQN > DQN) over the five games at the chosen rates, seeds 3-4
(what PLAN.md reports) and seeds 0-4 (labelled: they hold the seeds the choice was made on), beside the same at the
default rates. Run from anywhere, at any point of the stage:

    python results/minatar-departure/search.py      # prints the report and writes results/minatar-departure/search.txt

A cell whose runs are not all recorded says what it waits for (`k/3 runs` at a rate, `seeds 3-4 waiting`); nothing
is chosen or compared on part of its runs. Final scores are exact (k / 30, `rates.final_score`), printed to two
places. Every run it reads is checked first (`verdict.check_record`: its method, seed, the plan's flags at 1M and the
rate, and its commit, the study's or Table 1's DQN column's for its reused runs); one that departs is a one-line error
(exit status 2)."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import rates  # noqa: E402 - the stage's rates, records and choice
import verdict  # noqa: E402 - the plan's flags and the check of a record against them

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402

GAMES = rates.GAMES
METHODS = {"beta": "β-DQN", "dqn": "DQN"}
TEXT = Path("results/minatar-departure/search.txt")
ROOTS = (ROOT,)
_lines: list[str] = []


def say(text: str = "") -> None:
    print(text)
    _lines.append(text)


_check = None  # verdict.checker, made on first use (a report starts a new one)


def check(path: Path, root: Path) -> None:
    global _check
    if _check is None:
        _check = verdict.checker(verdict.study_commit())
    _check(path, root)


def final(game: str, method: str, seed: int, rate: str) -> Fraction | None:
    """A run's final score, exactly (None while unrecorded), once its record is checked against the plan."""
    return rates.final_score(rates.record(game, method, seed, rate), ROOTS, check)


def choice(game: str, method: str) -> str | None:
    """PLAN.md's choice of the method's rate (`rates.chosen`), on checked records."""
    return rates.chosen(game, method, ROOTS, check)


def scores(game: str, method: str, rate: str, seeds) -> list[Fraction] | None:
    """The final scores of the seeds at the rate, or None while any is unrecorded."""
    found = [final(game, method, s, rate) for s in seeds]
    return None if any(x is None for x in found) else found  # type: ignore[return-value]


def mean(xs) -> Fraction:
    return sum(xs, Fraction(0)) / len(xs)


def default_changes(game: str) -> tuple[str | None, str]:
    """PLAN.md's rule for the game's default rate: the new rate (None: no change) and why."""
    chosen = {m: choice(game, m) for m in METHODS}
    if None in chosen.values():
        return None, "waits for both methods' choices"
    if chosen["beta"] != chosen["dqn"] or chosen["beta"] == rates.default(game):
        return None, "stays: " + ("the methods chose different rates" if chosen["beta"] != chosen["dqn"]
                                  else "both chose the default")
    rate, held, base = chosen["beta"], {}, {}
    for m in METHODS:
        held[m], base[m] = scores(game, m, rate, (3, 4)), scores(game, m, rates.default(game), (3, 4))
    if any(x is None for x in (*held.values(), *base.values())):
        return None, f"both chose {rate}; waits for seeds 3-4"
    above = [m for m in METHODS if mean(held[m]) > mean(base[m])]
    if len(above) == len(METHODS):
        return rate, f"changes to {rate}: both chose it and both score above the default at seeds 3-4"
    return None, (f"stays: both chose {rate}, but at seeds 3-4 "
                  f"{' and '.join(METHODS[m] for m in METHODS if m not in above)} does not score above the default")


def row(game: str, method: str) -> tuple[str, str | None]:
    """One line of the table and the chosen rate (None until its nine runs are recorded)."""
    cells = []
    for rate in rates.RATES:
        got = [final(game, method, s, rate) for s in range(3)]
        done = [x for x in got if x is not None]
        mark = "*" if rate == rates.default(game) else " "
        cells.append(f"{float(mean(done)):7.2f}{mark}" if len(done) == 3 else f"{len(done)}/3 runs{mark}")
    chosen = choice(game, method)
    held = scores(game, method, chosen, (3, 4)) if chosen else None
    if chosen is None:
        tail = "waits for its 9 runs"
    elif held is None:
        tail = f"{chosen:5s}  seeds 3-4 waiting"
    else:
        base = scores(game, method, rates.default(game), (3, 4))
        every = scores(game, method, chosen, range(5))
        tail = (f"{chosen:5s}  seeds 3-4 {float(mean(held)):6.2f} (default {float(mean(base)):6.2f})  "
                f"seeds 0-4 {float(mean(every)):6.2f}" if base and every else f"{chosen:5s}  seeds 3-4 "
                f"{float(mean(held)):6.2f}")
    return f"  {game:13s} {METHODS[method]:6s} " + " ".join(f"{c:>9s}" for c in cells) + f"  {tail}", chosen


def improvement(at: dict[tuple[str, str], str], seeds, reps: int) -> tuple[float, float, float] | None:
    """P(β-DQN > DQN) over the five games, each method at `at`'s rate per game, the given seeds; None while a
    run is missing."""
    from beta_dqn.reporting.stats import improvement as p_improvement

    matrix = {}
    for m in METHODS:
        columns = [scores(g, m, at[g, m], seeds) for g in GAMES]
        if any(c is None for c in columns):
            return None
        matrix[m] = [[float(columns[j][i]) for j in range(len(GAMES))] for i in range(len(seeds))]
    return p_improvement(matrix["beta"], matrix["dqn"], reps=reps)


def main(reps: int = 2000) -> int:
    try:
        return report(reps)
    except (verdict.ReportError, ValueError, OSError) as e:
        print(f"search.py: error: {e}", file=sys.stderr)
        return 2


def report(reps: int) -> int:
    global _check
    _lines.clear()
    _check = None  # (records may have changed since the last report)
    say("Stage 2a: mean final score over seeds 0-2 at each rate (* the game's default rate: β-DQN's runs from "
        "stage 1a, DQN's from Table 1's serial column), the rate chosen by PLAN.md's rule, and at the chosen rate "
        "the held-out seeds 3-4 (the reported score) beside the default rate's seeds 3-4, and seeds 0-4 "
        "(labelled: they hold the seeds the choice was made on).")
    say(f"  {'game':13s} {'method':6s} " + " ".join(f"{r:>9s}" for r in rates.RATES) + "  chosen")
    chosen = {}
    for game in GAMES:
        for method in METHODS:
            line, chosen[game, method] = row(game, method)
            say(line)
    say("\nA default rate changes only where both methods chose the same other rate and both score above the "
        "default at seeds 3-4 (PLAN.md):")
    for game in GAMES:
        say(f"  {game:13s} {default_changes(game)[1]}")
    say(f"\nP(β-DQN > DQN) over the five games, 95% stratified bootstrap interval ({reps} resamples):")
    default = {(g, m): rates.default(g) for g in GAMES for m in METHODS}
    for label, at, seeds in (("default rates, seeds 3-4", default, (3, 4)),
                             ("chosen rates, seeds 3-4 (the reported)", chosen, (3, 4)),
                             ("default rates, seeds 0-4", default, range(5)),
                             ("chosen rates, seeds 0-4 (holds the choice's seeds)", chosen, range(5))):
        got = None if None in at.values() else improvement(at, tuple(seeds), reps)
        say(f"  {label:52s} " + ("waits for runs" if got is None else "{:.2f} [{:.2f}, {:.2f}]".format(*got)))
    (ROOT / TEXT).write_text("\n".join(_lines) + "\n")
    return 0


if __name__ == "__main__":
    OneLineParser.script("python results/minatar-departure/search.py", __doc__).parse_args()  # --help; no options
    sys.exit(main())
