"""Stage 2b's report and rule (PLAN.md beside this file: "Stage 2b: when a default changes" as its dated note of
2026-12-06 replaced it): for each reading (`run.READINGS`: ε on β-DQN, the target copy every 1,000 updates for each
method, β-DQN without the count augmentation), P(reading > its method's default flags) averaged over the five
MinAtar games, at the method's rate chosen in stage 2a, seeds 3-5, with its 95% stratified bootstrap interval
(50,000 resamples, seed 0; the bound against 0.5 as an exact fraction, as stage 1b's rule). The rule, applied once:
a lower bound above 0.5 makes the reading the default for the five MinAtar games (the target period only if both
target4k readings pass); otherwise the default stays. Beside it, not deciding: P per game (2,000 resamples), and the
IQM of final scores over DQN's mean at the default flags and DQN's chosen rate (seeds 3-5), the reading's and the
default's, with 95% intervals, and the games where every run of the reading is below every default run (a pass can
hold with such games). A reading that does not pass is reported as not shown, not as shown to do nothing. Run from
anywhere, at any point of the stage:

    python results/minatar-departure/readings.py      # prints the report and writes readings.txt beside it

The default flags' seeds 3-4 are stage 2a's held-out runs at the chosen rate, or where that is the game's default
stage 1a's (β-DQN) and Table 1's serial DQN column's (PLAN.md's reused runs); seed 5's and every reading's runs are
stage 2b's own. Every run it reads is checked: its method and seed, the plan's flags at 1M with the rate and the
reading's flag, and its commit (the study's; Table 1's DQN column's f7c4e83 for its reused runs). A reading whose runs
are not all recorded names the runs it waits for; nothing is decided on part of its runs. Exit status: 0 with the
report, 1 while it waits, 2 on a record that does not read or departs from the plan.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import rates  # noqa: E402 - stage 2a's choice
import run as runner  # noqa: E402 - stage 2b's cells (READINGS, the records' names)
import verdict  # noqa: E402 - the plan's flags, the study's commit, the exact rule

GAMES = runner.MINATAR
SEEDS = runner.READING_SEEDS
REPS = verdict.REPS
ROOT = verdict.ROOT  # main: the committed records
TEXT = HERE / "readings.txt"
ALGO = verdict.SHORT  # the records' method names, as the runner's cells have them
NAME = {"beta": "β-DQN", "dqn": "DQN"}
FIELD = {"--beta-epsilon": ("beta_epsilon", True), "--target-update": ("target_update", 4000),
         "--count-mode": ("count_mode", "off")}  # each reading's flag as config.json has it
_lines: list[str] = []


def say(text: str = "") -> None:
    print(text)
    _lines.append(text)


def label(method: str, reading: str) -> str:
    return f"{reading or 'default flags'} ({NAME[method]})"


def cell(game: str, method: str, reading: str, seed: int, rate: str) -> runner.Cell:
    return runner.Cell("2b", f"MinAtar/{game}", method, seed, 1_000_000, rate, reading)


def record(game: str, method: str, reading: str, seed: int, rate: str) -> Path:
    """The record of a run this stage reads: the default flags' seeds 3-4 are reused (stage 2a's held-out runs, or
    stage 1a's and Table 1's DQN column's at the game's default rate); the rest are stage 2b's own."""
    if not reading and seed in (3, 4):
        return rates.record(game, method, seed, rate)
    return cell(game, method, reading, seed, rate).record


def plan(method: str, reading: str, rate: str) -> dict:
    """The flags that change what a run computes (verdict.off_plan's check): PLAN.md's at 1M, the rate, and the
    reading's flag."""
    if not reading:
        return verdict.at_1m(rate)
    field, value = FIELD[runner.READINGS[method, reading][0]]
    return verdict.at_1m(rate, **{field: value})


def score(game: str, method: str, reading: str, seed: int, rate: str, commit: str) -> float | None:
    """A run's final score, exactly as the record's last evaluation has it (None while unrecorded), once the run is
    checked: the method, the seed, the plan's flags and the commit (`commit`, the study's; f7c4e83 for Table 1's
    DQN column). A ReportError where it departs or does not read."""
    path = record(game, method, reading, seed, rate)
    if not (ROOT / path / "runs.csv").is_file():
        return None
    verdict.check_record(path, ROOT, ALGO[method], f"MinAtar/{game}", seed, plan(method, reading, rate), commit)
    return float(rates.final_score(path, (ROOT,)))  # type: ignore[arg-type]


def matrix(method: str, reading: str, at: dict[str, str], commit: str) -> tuple[np.ndarray | None, list[str]]:
    """Seeds 3-5 × the five games (None while any is missing) and the records it still waits for."""
    found = [[score(g, method, reading, s, at[g], commit) for g in GAMES] for s in SEEDS]
    missing = [str(record(g, method, reading, s, at[g]).relative_to("results/")) for j, s in enumerate(SEEDS)
               for i, g in enumerate(GAMES) if found[j][i] is None]
    return (None if missing else np.array(found, dtype=np.float64)), missing


def rule(x: np.ndarray, y: np.ndarray, reps: int) -> tuple[str, bool]:
    """The line of the rule's computation and whether the reading passes (its lower bound above 0.5, exactly)."""
    p, low, high = verdict.stats.exact_improvement(x, y, reps)
    return (f"P = {float(p):.4f} [{float(low):.4f}, {float(high):.4f}] (exact: {p}, [{low}, {high}])",
            low > Fraction(1, 2))


def beside(x: np.ndarray, y: np.ndarray, base: np.ndarray | None, waits: int, reps: int) -> None:
    """Not deciding: P per game, and the IQM of the reading's and the default's scores over DQN's mean at the
    default flags and DQN's chosen rate."""
    per_game = [verdict.stats.improvement(x[:, [i]], y[:, [i]], reps=min(reps, 2_000), seed=0)
                for i in range(len(GAMES))]
    say("    per game: " + ", ".join(f"{g} {p:.2f} [{lo:.2f}, {hi:.2f}]"
                                     for g, (p, lo, hi) in zip(GAMES, per_game, strict=True)))
    if base is None:
        say(f"    IQM over DQN's default-flag mean waits for {waits} of DQN's default-flag runs")
        return
    scale = base.mean(axis=0)
    if (scale <= 0).any():
        zero = ", ".join(g for g, v in zip(GAMES, scale, strict=True) if v <= 0)
        say(f"    IQM over DQN's default-flag mean not computed: that mean is not above 0 on {zero}")
        return
    iqm = {k: verdict.stats.aggregates(m / scale, reps=min(reps, 2_000))["IQM"] for k, m in (("reading", x),
                                                                                             ("default", y))}
    say("    IQM over DQN's default-flag mean: " + ", ".join(f"{k} {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"
                                                            for k, v in iqm.items()))


def report(reps: int) -> int:
    commit = verdict.study_commit()
    outcome = verdict.stage_2b_runs()
    if outcome is None:
        say("Stage 2b waits for stage 1b's rule (verdict.py): stage 1b's 18 runs are not all recorded")
        return 1
    if not outcome:
        say("Stage 2b is not run: stage 1b's rule says the MinAtar departure at 1M is the budget (verdict.py)")
        return 0
    check = verdict.checker(commit)  # the records behind each choice, checked as search.py checks them
    found = {(g, m): rates.chosen(g, m, (ROOT,), check) for g in GAMES for m in ALGO}
    if None in found.values():
        say("Stage 2b waits for stage 2a's choices (search.py): " + ", ".join(
            f"{g} {NAME[m]}" for (g, m), r in found.items() if r is None))
        return 1
    chosen = {k: r for k, r in found.items() if r is not None}
    base, base_missing = matrix("dqn", "", {g: chosen[g, "dqn"] for g in GAMES}, commit)
    tag = "" if reps == REPS else f" (NOT the rule: {reps:,} resamples, not {REPS:,})"
    say(f"Stage 2b: each reading against its method's default flags at the method's chosen rate, seeds "
        f"{SEEDS[0]}-{SEEDS[-1]}, the five MinAtar games; P(reading > default) with its 95% stratified bootstrap "
        f"interval ({reps:,} resamples, seed 0){tag}.")
    passed = {}
    for method, reading in runner.READINGS:
        at = {g: chosen[g, method] for g in GAMES}
        (x, x_missing), (y, y_missing) = matrix(method, reading, at, commit), matrix(method, "", at, commit)
        if x is None or y is None:
            say(f"  {label(method, reading):18s} waits for {len(x_missing + y_missing)} runs: "
                + ", ".join(x_missing + y_missing))
            continue
        line, passed[method, reading] = rule(x, y, reps)
        say(f"  {label(method, reading):18s} {line}: "
            + ("passes" if passed[method, reading] else "does not pass (not shown either way)") + tag)
        lost = [g for i, g in enumerate(GAMES) if (x[:, i][:, None] < y[:, i][None, :]).all()]
        if lost:  # a pass can hold with games where every reading run is below every default run
            say(f"    every run of the reading below every default run on: {', '.join(lost)}")
        beside(x, y, base, len(base_missing), reps)
    if len(passed) == len(runner.READINGS):
        target = passed["beta", "target4k"] and passed["dqn", "target4k"]
        say(f"Defaults for the five MinAtar games (PLAN.md's rule, applied once){tag}: "
            + "; ".join(f"{label(m, r)} {'changes' if ok else 'stays'}" for (m, r), ok in passed.items()
                        if r != "target4k")
            + f"; the target period {'changes' if target else 'stays'} (only if both target4k readings pass)")
    return 0


def main(argv: list[str] | None = None, reps: int | None = None) -> int:
    """The command line (`--reps`); tests give `reps` directly."""
    if reps is None:
        parser = verdict.OneLineParser.script("python results/minatar-departure/readings.py", __doc__)
        parser.add_argument("--reps", type=int, default=REPS,
                            help=f"bootstrap resamples (default {REPS:,}, the preregistered count; fewer for a quick "
                                 "look, and the output then says it is not the rule)")
        reps = parser.parse_args(argv).reps
        if not 100 <= reps <= verdict.stats.MAX_REPS:
            print(f"readings.py: error: --reps {reps}: give 100 to {verdict.stats.MAX_REPS:,} resamples",
                  file=sys.stderr)
            return 2
    _lines.clear()
    try:
        status = report(reps)
    except (verdict.ReportError, ValueError, OSError) as e:
        print(f"readings.py: error: {e}", file=sys.stderr)
        return 2
    if status == 0:  # (a report that only waits is not kept)
        TEXT.write_text("\n".join(_lines) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
