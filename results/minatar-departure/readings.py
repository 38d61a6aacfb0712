"""Stage 2b's report and rule (PLAN.md beside this file: "Stage 2b: when a default changes" as its dated note of
2026-12-06 replaced it): for each reading (`run.READINGS`: ε on β-DQN, the target copy every 1,000 updates for each
method, β-DQN without the count augmentation), P(reading > its method's default flags) averaged over the five
MinAtar games, at the method's rate chosen in stage 2a, seeds 3-5, with its 95% stratified bootstrap interval
(50,000 resamples, seed 0; the bound against 0.5 as an exact fraction, as stage 1b's rule). The rule, applied once:
a lower bound above 0.5 makes the reading the default for the five MinAtar games (the target period only if both
target4k readings pass); otherwise the default stays. Beside it, not deciding: P per game (2,000 resamples), and the
IQM of final scores over DQN's mean at the default flags and DQN's chosen rate (seeds 3-5), the reading's and the
default's, with 95% intervals. Run from anywhere, at any point of the stage:

    python results/minatar-departure/readings.py      # prints the report and writes readings.txt beside it

The default flags' seeds 3-4 are stage 2a's held-out runs at the chosen rate, or where that is the game's default
stage 1a's (β-DQN) and Table 1's serial DQN column's (PLAN.md's reused runs); seed 5's and every reading's runs are
stage 2b's own, each checked against the plan's flags and the study's commit. A reading whose runs are not all
recorded says what it waits for; nothing is decided on part of its runs.
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
TEXT = HERE / "readings.txt"
FIELD = {"--beta-epsilon": ("beta_epsilon", True), "--target-update": ("target_update", 4000),
         "--count-mode": ("count_mode", "off")}  # each reading's flag as config.json has it
_lines: list[str] = []


def say(text: str = "") -> None:
    print(text)
    _lines.append(text)


def label(method: str, reading: str) -> str:
    return f"{reading} ({'β-DQN' if method == 'beta' else 'DQN'})"


def cell(game: str, method: str, reading: str, seed: int, rate: str) -> runner.Cell:
    return runner.Cell("2b", f"MinAtar/{game}", method, seed, 1_000_000, rate, reading)


def plan(method: str, reading: str, rate: str) -> dict:
    """A stage-2b run's flags that change what it computes (verdict.off_plan's check): PLAN.md's at 1M, the chosen
    rate, and the reading's flag."""
    out = {**verdict.PLAN, "total_steps": 1_000_000, "eps_decay_steps": 200_000, "lr": float(rate)}
    if reading:
        field, value = FIELD[runner.READINGS[method, reading][0]]
        out[field] = value
    return out


def score(game: str, method: str, reading: str, seed: int, rate: str, commit: str) -> float | None:
    """A run's final score (None while unrecorded): stage 2b's own, checked against its plan, or a reused one."""
    if not reading and seed in (3, 4):
        exact = rates.final_score(rates.record(game, method, seed, rate), (verdict.ROOT,))
        return None if exact is None else float(exact)
    record = verdict.ROOT / cell(game, method, reading, seed, rate).record
    if not (record / "runs.csv").is_file():
        return None
    (run,), _ = verdict.load_all(record)
    why = verdict.off_plan(run, commit, plan(method, reading, rate), games=(f"MinAtar/{game}",), seeds=SEEDS)
    if why:
        raise verdict.ReportError(f"{record.name}: {why}")
    return float(rates.final_score(cell(game, method, reading, seed, rate).record, (verdict.ROOT,)))


def matrix(method: str, reading: str, at: dict[str, str], commit: str) -> tuple[np.ndarray | None, int]:
    """Seeds 3-5 × the five games (None while any is missing) and how many of its runs are recorded."""
    found = [[score(g, method, reading, s, at[g], commit) for g in GAMES] for s in SEEDS]
    done = sum(x is not None for row in found for x in row)
    return (np.array(found, dtype=np.float64) if done == len(GAMES) * len(SEEDS) else None), done


def rule(x: np.ndarray, y: np.ndarray, reps: int) -> tuple[str, bool]:
    """The line of the rule's computation and whether the reading passes (its lower bound above 0.5, exactly)."""
    p, low, high = verdict.stats.exact_improvement(x, y, reps)
    return (f"P = {float(p):.4f} [{float(low):.4f}, {float(high):.4f}] (exact: {p}, [{low}, {high}])",
            low > Fraction(1, 2))


def main(reps: int = REPS) -> int:
    _lines.clear()
    try:
        commit = verdict.study_commit()
        why = runner.waiting("2b")
        if why:
            say(why)
            return 1
        found = {(g, m): rates.chosen(g, m, (verdict.ROOT,)) for g in GAMES for m in ("beta", "dqn")}
        if None in found.values():
            say("Stage 2b waits for stage 2a's choices: " + ", ".join(label(m, g) for (g, m), r in found.items()
                                                                     if r is None))
            return 1
        chosen = {k: r for k, r in found.items() if r is not None}
        dqn = {g: chosen[g, "dqn"] for g in GAMES}
        base, _ = matrix("dqn", "", dqn, commit)
        say(f"Stage 2b: each reading against its method's default flags at the method's chosen rate, seeds "
            f"{SEEDS[0]}-{SEEDS[-1]}, the five MinAtar games; P(reading > default) with its 95% stratified bootstrap "
            f"interval ({reps:,} resamples, seed 0){'' if reps == REPS else ' (NOT the rule: not 50,000)'}.")
        passed = {}
        for method, reading in runner.READINGS:
            at = {g: chosen[g, method] for g in GAMES}
            x, done = matrix(method, reading, at, commit)
            y, base_done = matrix(method, "", at, commit)
            name = label(method, reading)
            if x is None or y is None:
                say(f"  {name:18s} waits: {done}/15 of its runs and {base_done}/15 of the default's recorded")
                continue
            line, passed[method, reading] = rule(x, y, reps)
            say(f"  {name:18s} {line}: {'passes' if passed[method, reading] else 'does not pass'}")
            per_game = [verdict.stats.improvement(x[:, [i]], y[:, [i]], reps=min(reps, 2_000), seed=0)
                        for i in range(len(GAMES))]
            say("    per game: " + ", ".join(f"{g} {p:.2f} [{lo:.2f}, {hi:.2f}]"
                                             for g, (p, lo, hi) in zip(GAMES, per_game, strict=True)))
            if base is not None:
                scale = base.mean(axis=0)
                iqm = {k: verdict.stats.aggregates(m / scale, reps=min(reps, 2_000))["IQM"]
                       for k, m in (("reading", x), ("default", y))}
                say("    IQM over DQN's default-flag mean: " + ", ".join(
                    f"{k} {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" for k, v in iqm.items()))
        if len(passed) == len(runner.READINGS):
            target = passed["beta", "target4k"] and passed["dqn", "target4k"]
            say("Defaults for the five MinAtar games (PLAN.md's rule, applied once): "
                + "; ".join(f"{label(m, r)} {'changes' if ok else 'stays'}" for (m, r), ok in passed.items()
                            if r != "target4k")
                + f"; the target period {'changes' if target else 'stays'} (only if both target4k readings pass)")
    except verdict.ReportError as e:
        print(f"readings.py: error: {e}", file=sys.stderr)
        return 2
    TEXT.write_text("\n".join(_lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
