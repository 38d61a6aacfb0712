"""How often the study's rules fire by chance (PLAN.md beside this file, its note on stage 2b of 2026-12-07): the
share of made-up datasets in which both methods' scores come from one continuous distribution (no difference, no
ties) and yet the 95% stratified percentile bootstrap interval of P(X > Y), averaged over the games, has its lower
bound above 0.5. Nominally 2.5%; at 3 seeds a game the percentile interval undercovers, so more.

    python results/minatar-departure/calibration.py --games 3    # stage 1b's rule: 3 games × 3 seeds a method
    python results/minatar-departure/calibration.py --games 5    # stage 2b's rule: 5 games × 3 seeds (3-5)

The resampling is rliable's stratified bootstrap written out in numpy (each game's runs of each method resampled with
replacement, on their own), fast enough for thousands of datasets; the rules themselves use rliable
(`beta_dqn.reporting.stats`), with 50,000 resamples where these use fewer (the interval's coverage, not its
resampling noise, is what is measured). Prints the share with its binomial standard error."""

from __future__ import annotations

import argparse
import sys

import numpy as np


def lower_bounds(x: np.ndarray, y: np.ndarray, reps: int, rng: np.random.Generator) -> float:
    """The 2.5th percentile of P(X > Y) over `reps` stratified resamples of x and y (runs × games)."""
    n, games = x.shape
    m = y.shape[0]
    xs = np.take_along_axis(np.broadcast_to(x, (reps, n, games)), rng.integers(0, n, (reps, n, games)), 1)
    ys = np.take_along_axis(np.broadcast_to(y, (reps, m, games)), rng.integers(0, m, (reps, m, games)), 1)
    above = xs[:, :, None, :] > ys[:, None, :, :]
    tied = xs[:, :, None, :] == ys[:, None, :, :]
    p = (above + 0.5 * tied).mean(axis=(1, 2, 3))
    return float(np.percentile(p, 2.5))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python results/minatar-departure/calibration.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=5, help="games the P is averaged over (default 5)")
    parser.add_argument("--seeds", type=int, default=3, help="runs a method a game (default 3)")
    parser.add_argument("--datasets", type=int, default=4000, help="made-up datasets (default 4,000)")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples a dataset (default 2,000)")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    args = parser.parse_args(argv)
    for name in ("games", "seeds", "datasets", "reps"):
        if getattr(args, name) < (2 if name == "seeds" else 1):
            print(f"calibration.py: error: --{name} {getattr(args, name)}: give "
                  f"{2 if name == 'seeds' else 1} or more", file=sys.stderr)
            return 2
    rng = np.random.default_rng(args.seed)
    fired = sum(lower_bounds(rng.normal(size=(args.seeds, args.games)), rng.normal(size=(args.seeds, args.games)),
                             args.reps, rng) > 0.5 for _ in range(args.datasets))
    share = fired / args.datasets
    print(f"{args.games} games × {args.seeds} seeds a method, no difference: the lower bound above 0.5 in "
          f"{fired} of {args.datasets:,} datasets, {share:.4f} ± {np.sqrt(share * (1 - share) / args.datasets):.4f} "
          f"(nominal 0.025; {args.reps:,} resamples each, generator seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
