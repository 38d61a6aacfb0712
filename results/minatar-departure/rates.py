"""The MinAtar-departure study's stage 2a (PLAN.md beside this file): its learning rates, each game's default, and
the choice of each method's rate from the records of seeds 0-2. `run.py` adds the held-out runs by it; the report
of stage 2a reads the same choice."""

from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")  # the study's five MinAtar games
RATES = ("3e-4", "1e-4", "3e-5")  # as --lr takes them
RECORDS = Path("results/minatar-departure")


def default(game: str) -> str:
    """The game's learning rate in the defaults at the study's commit (a test checks the code's)."""
    return {"Asterix": "3e-5", "Seaquest": "1e-4"}.get(game, "3e-4")


def record(game: str, method: str, seed: int, rate: str) -> Path:
    """The record of a run at `rate`: stage 2a's where it is not the game's default; at the default, β-DQN's from
    stage 1a and DQN's from Table 1's serial column (PLAN.md's "Reused runs")."""
    if rate != default(game):
        return RECORDS / f"2a/{game.lower()}-{method}-lr{rate}-s{seed}"
    if method == "beta":
        return RECORDS / f"1a/{game.lower()}-beta-s{seed}"
    return Path(f"results/table1-protocol/{game.lower()}-dqn-s{seed}")


def curve(record: Path) -> dict[int, float]:
    """A record's evaluations, from its copy of `evals.csv`: env steps -> the mean return over its episodes."""
    (path,) = sorted(record.glob("runs/*/evals.csv"))
    with open(path, newline="") as f:
        return {int(row["env_steps"]): float(row["return_mean"]) for row in csv.DictReader(f)}


def final_score(path: Path, roots, check=None) -> Fraction | None:
    """A record's final score, exactly: its run's last evaluation (the record's copy of `evals.csv`, unrounded,
    where `runs.csv` rounds to 4 places), a mean of `eval_episodes` whole MinAtar returns, so k / episodes. From
    the first of `roots` that holds the record; None where none does. `check(path, root)`, where given, sees the
    record first (the reports' check against the plan: `verdict.checker`; it raises where the run departs)."""
    for root in roots:
        if not (root / path / "runs.csv").is_file():
            continue
        if check is not None:
            check(path, root)
        (run,) = sorted((root / path).glob("runs/*/evals.csv"))
        with open(run, newline="") as f:
            last = list(csv.DictReader(f))[-1]
        episodes = json.loads((run.parent / "config.json").read_text())["eval_episodes"]
        mean = float(last["return_mean"])
        exact = Fraction(round(mean * episodes), episodes)
        if abs(mean - exact) > 1e-9:
            raise ValueError(f"{run}: the last return_mean {mean!r} is no mean of {episodes} whole returns")
        return exact
    return None


def means(game: str, method: str, roots, check=None) -> dict[str, Fraction] | None:
    """The mean final score over seeds 0-2 at each rate, or None until all nine runs are recorded."""
    found = {}
    for rate in RATES:
        scores = [final_score(record(game, method, s, rate), roots, check) for s in range(3)]
        if any(x is None for x in scores):
            return None
        found[rate] = sum(scores, Fraction(0)) / 3
    return found


def chosen(game: str, method: str, roots, check=None) -> str | None:
    """PLAN.md's choice: the rate with the highest mean final score over seeds 0-2; where two means are exactly
    equal, the game's default among them, else the larger rate. None until its nine runs are recorded. (The runner
    schedules by it unchecked; the reports pass `check`.)"""
    found = means(game, method, roots, check)
    if found is None:
        return None
    best = max(found.values())
    tied = [r for r in RATES if found[r] == best]
    return default(game) if default(game) in tied else max(tied, key=float)
