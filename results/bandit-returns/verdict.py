"""The bandit-returns study's verdict (PLAN.md's decision rule), printed from the committed records.

    python results/bandit-returns/verdict.py            # the preregistered computation (50,000 resamples)

Reads the report records of the study's runs (every directory under results/bandit-returns/ with a runs.csv) and
of the earlier runs PLAN.md reuses, takes each run's final greedy score, and computes with rliable the
probability that a raw run ends above a min–max run of the same environment, averaged over the 9
environments, with its 95% stratified bootstrap interval; then applies the rule: on seeds 0–2 first, and on
seeds 0–4 only where that interval holds 0.5. Runs that depart from PLAN.md's flags are refused. Beside it,
not deciding: per environment the raw / min–max / DQN means with intervals, the IQM of scores over DQN's mean
per environment, and each β-DQN run's window at the end (π_cov / π_cor(α>0) / π_cor(0)) and training score.

Exit status: 0 with a verdict, 1 when runs are missing (listed), 2 on a bad argument or a record that does not
read.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from beta_dqn.configuration.errors import OneLineParser
from beta_dqn.reporting import stats
from beta_dqn.reporting.records import load_all
from beta_dqn.reporting.results import ReportError, column_by, config_value, final_score, train_score, window_shares

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REUSED = ("table1-minatar", "table1-minatar-rest", "asterix-bandit-returns", "seaquest-bandit-returns")
ENVS = ("MinAtar/Asterix", "MinAtar/Breakout", "MinAtar/Freeway", "MinAtar/Seaquest", "MinAtar/SpaceInvaders",
        "DoorKey", "Unlock", "SimpleCrossing-Hard", "LavaCrossing-Easy")
VARIANTS = ("raw", "minmax")
REPS = 50_000  # PLAN.md: rliable's get_interval_estimates with reps=50000, percentile, 95%, seed 0


def records() -> list[Path]:
    return [ROOT / "results" / name for name in REUSED] + sorted(p.parent for p in HERE.glob("*/runs.csv"))


def collect(roots: list[Path]) -> dict[tuple[str, str, int], object]:
    """Every run of the records once, keyed (env, column, seed) with column raw, minmax or dqn: a run that two
    records both hold (a probe's report repeats its grid's runs) must have one score there."""
    runs, _ = load_all(*roots)
    column_by(runs, ["bandit_returns"])
    chosen: dict[tuple[str, str, int], object] = {}
    for run in runs:
        if run.env not in ENVS or run.algo not in ("beta_dqn", "dqn"):
            continue
        column = "dqn" if run.algo == "dqn" else run.variant.removeprefix("bandit-returns=")
        key = (run.env, column, int(run.config["seed"]))
        if key in chosen and final_score(chosen[key]) != final_score(run):
            raise ReportError(f"{key[0]} {key[1]} seed {key[2]} is in two records with different scores "
                              f"({chosen[key].path}: {final_score(chosen[key])}, {run.path}: {final_score(run)})")
        chosen.setdefault(key, run)
    return chosen


def off_plan(run) -> str:
    """How a run departs from PLAN.md's flags ("" when it does not): β-DQN, 1M env steps on MinAtar and 500k on
    MiniGrid, the bandit asked once per episode."""
    steps = 1_000_000 if run.env.startswith("MinAtar/") else 500_000
    for key, want in (("algo", "beta_dqn"), ("total_steps", steps), ("arm_exchange", "episode")):
        if config_value(run, key) != want:
            return f"{key} is {config_value(run, key)!r}, not {want!r}"
    return ""


def decide(p: Fraction, low: Fraction, high: Fraction, seeds: int) -> tuple[str, str]:
    """PLAN.md's rule: (outcome, why) with outcome raw, minmax or more-seeds; the estimate and its bounds are exact
    fractions, compared with 1/2 exactly (a bound at 0.5 is neither above nor below it)."""
    half = Fraction(1, 2)
    if seeds == 3:
        if low > half:
            return "raw", "the lower bound is above 0.5: raw becomes the default"
        if high < half:
            return "minmax", "the upper bound is below 0.5: min-max stays the default"
        return "more-seeds", ("the interval holds 0.5: run seeds 3 and 4 of both variants in all 9 environments, "
                              "then decide on the point estimate")
    if p > half:
        return "raw", "seeds 0-4, the point estimate is above 0.5: raw becomes the default"
    return "minmax", "seeds 0-4, the point estimate is not above 0.5: min-max stays the default"


def arguments(argv: list[str] | None) -> argparse.Namespace | None:
    """The command line (None, said on stderr, when --reps is out of range)."""
    parser = OneLineParser.script("python results/bandit-returns/verdict.py", __doc__)
    parser.add_argument("--reps", type=int, default=REPS,
                        help=f"bootstrap resamples (default {REPS}, the preregistered count; fewer for a quick look, "
                             "and the output then says it is not the verdict)")
    args = parser.parse_args(argv)
    if not 100 <= args.reps <= stats.MAX_REPS:
        print(f"verdict.py: error: --reps {args.reps}: give 100 to {stats.MAX_REPS:,} resamples", file=sys.stderr)
        return None
    return args


def missing(runs, seeds: list[int]) -> list[str]:
    """The study's runs of these seeds that are not in the records."""
    return [f"{e} {v} seed {s}" for e in ENVS for v in VARIANTS for s in seeds if (e, v, s) not in runs]


def estimate(runs, seeds: list[int], reps: int, floats: bool = True):
    """Each variant's final scores (seeds × environments) and P(raw > min-max) with its interval, as exact
    fractions (what the rule compares with 0.5) and, where `floats`, as rliable's floats (printed beside them as
    a check; None otherwise)."""
    matrix = {v: np.array([[final_score(runs[e, v, s]) for e in ENVS] for s in seeds]) for v in VARIANTS}
    return (matrix, stats.exact_improvement(matrix["raw"], matrix["minmax"], reps=reps, seed=0),
            stats.improvement(matrix["raw"], matrix["minmax"], reps=reps, seed=0) if floats else None)


def verdict(runs, reps: int):
    """PLAN.md's rule on seeds 0-2 and, where it asks (and the runs are in), on seeds 0-4, printed; returns the
    seeds it decided on and their score matrices."""
    seeds = [0, 1, 2]
    matrix, (p, low, high), floats = estimate(runs, seeds, reps)
    outcome, said = decide(p, low, high, 3)
    print(f"bandit-returns study: {len(ENVS)} environments, seeds 0-2, {2 * len(ENVS) * 3} β-DQN runs")
    print(f"P(raw > min-max) = {float(p):.4f}, 95% interval [{float(low):.4f}, {float(high):.4f}] "
          f"(rliable, stratified bootstrap, {reps:,} resamples, seed 0; exact: {p}, [{low}, {high}]; rliable's "
          f"floats {floats[0]:.6f} [{floats[1]:.6f}, {floats[2]:.6f}])")
    if outcome == "more-seeds" and not missing(runs, [3, 4]):
        seeds = [0, 1, 2, 3, 4]
        matrix, (p, low, high), _ = estimate(runs, seeds, reps, floats=False)
        outcome, said = decide(p, low, high, 5)
        print(f"seeds 0-4, {2 * len(ENVS) * 5} β-DQN runs: P(raw > min-max) = {float(p):.4f}, 95% interval "
              f"[{float(low):.4f}, {float(high):.4f}] (exact: {p})")
    elif outcome == "more-seeds":
        left = len(missing(runs, [3, 4]))
        said += f" ({left} of those runs {'is' if left == 1 else 'are'} not in the records yet)"
    print(f"verdict: {said}" + ("" if reps == REPS else
                                f" (NOT the verdict: {reps:,} resamples, not PLAN.md's {REPS:,})"))
    return seeds, matrix


def beside(runs, seeds: list[int], matrix, reps: int) -> None:
    """Not deciding: per environment P(raw > min-max) and each column's mean, the IQM over DQN's mean, and each
    β-DQN run's score and window at its end."""
    print("Beside it, not deciding: final greedy score per environment, mean [95% interval] (n)")
    print(f"{'environment':<22} {'P(raw > min-max)':>16} " + " ".join(f"{c:>26}" for c in (*VARIANTS, "dqn")))
    for i, env in enumerate(ENVS):
        one = stats.improvement(matrix["raw"][:, [i]], matrix["minmax"][:, [i]], reps=min(reps, 2_000))[0]
        cells = []
        for column in (*VARIANTS, "dqn"):
            scores = [final_score(runs[env, column, s]) for s in seeds if (env, column, s) in runs]
            mean, lo, hi = stats.mean_ci(scores) if scores else (np.nan, np.nan, np.nan)
            cells.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}] ({len(scores)})" if scores else "—")
        print(f"{env:<22} {one:>16.2f} " + " ".join(f"{c:>26}" for c in cells))
    dqn_mean = {e: np.mean([final_score(runs[e, "dqn", s]) for s in seeds if (e, "dqn", s) in runs])
                for e in ENVS if any((e, "dqn", s) in runs for s in seeds)}
    scaled = [e for e in ENVS if dqn_mean.get(e, 0) > 0]
    print()
    print(f"IQM of final scores over DQN's mean in the same environment ({len(scaled)} environments"
          + (f"; left out, DQN's mean 0 or no DQN run: {', '.join(e for e in ENVS if e not in scaled)}" if
             len(scaled) < len(ENVS) else "") + "), [95% interval]:")
    for column in (*VARIANTS, "dqn"):
        rows = [[final_score(runs[e, column, s]) / dqn_mean[e] for e in scaled] for s in seeds
                if all((e, column, s) in runs for e in scaled)]
        if rows:
            iqm = stats.aggregates(np.array(rows), reps=min(reps, 2_000))["IQM"]
            print(f"  {column:<7} {iqm[0]:.2f} [{iqm[1]:.2f}, {iqm[2]:.2f}] (n = {len(rows)} seeds)")
        else:
            print(f"  {column:<7} — (a seed lacks a run in one of the environments)")
    print()
    print("Each β-DQN run at its end: final score, training score (last evaluation interval), window share "
          "π_cov / π_cor(α>0) / π_cor(0) (— where the record keeps no copy of the run)")
    for env in ENVS:
        for column in VARIANTS:
            for s in seeds:
                run = runs[env, column, s]
                shares, trained = window_shares(run), train_score(run)
                share = " / ".join(f"{shares[g]:.2f}" for g in ("cov", "cor", "cor0")) if shares else "—"
                print(f"  {env:<22} {column:<7} seed {s}  {final_score(run):7.2f}  "
                      f"{'—' if trained is None else f'{trained:7.2f}':>7}  {share}")


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if args is None:
        return 2
    try:
        runs = collect(records())
    except ReportError as e:
        print(f"verdict.py: error: {e}", file=sys.stderr)
        return 2
    if missing(runs, [0, 1, 2]):
        left = missing(runs, [0, 1, 2])
        print(f"{len(left)} of the study's {len(ENVS) * len(VARIANTS) * 3} runs {'is' if len(left) == 1 else 'are'} "
              f"not in the records yet: {', '.join(left)}")
        return 1
    wrong = [f"{e} {v} seed {s}: {why}" for (e, v, s), run in runs.items() if v in VARIANTS
             for why in [off_plan(run)] if why]
    if wrong:
        print(f"verdict.py: error: runs that do not follow PLAN.md's flags: {'; '.join(wrong)}", file=sys.stderr)
        return 2
    seeds, matrix = verdict(runs, args.reps)
    print()
    beside(runs, seeds, matrix, args.reps)
    return 0

if __name__ == "__main__":
    sys.exit(main())
