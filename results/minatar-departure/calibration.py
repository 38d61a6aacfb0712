"""How often the study's rules fire by chance (PLAN.md beside this file, its note on stage 2b of 2026-12-07): with no
difference between the two sides, how often the 95% stratified percentile bootstrap interval of P(X > Y), averaged
over the games, has its lower bound above 0.5. Nominally 2.5%; at 3 seeds a game the interval undercovers, so more.

    python results/minatar-departure/calibration.py              # each rule's rate, exactly; the readings' family
    python results/minatar-departure/calibration.py --games 3    # stage 1b's rule alone (3 games)

"No difference" here is the idealised null: every score independent, from one continuous distribution (no ties).
Then a game's data is which 3 of its 6 ranks X holds (20 splits, equally likely), a bootstrap resample of the game
(3 of X's runs and 3 of Y's, each with replacement, on their own: rliable's stratified bootstrap) is one of 27 × 27
equally likely draws, and P's bootstrap distribution is the convolution of the games' distributions of U (the pairs
X wins, of 9). So each rule's rate is computed exactly (`exact_rate`), for the rule's 50,000 resamples (the
percentile's own noise included: the lower bound is above 0.5 when at most 1,250 of the 50,000 resampled P are
below it) and for an unlimited number. The family of stage 2b's three decisions (ε and the count augmentation
against β-DQN's one set of default-flag runs; the target period only if β-DQN's and DQN's target4k readings both
pass) is simulated (`family_rate`, rliable's resampling written out in numpy: `lower_bounds`). Real scores tie
(a mean of 30 whole returns) and a reading shares its seeds with its default; neither is modelled."""

from __future__ import annotations

import itertools
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # (the checkout's beta_dqn, run from anywhere)
from beta_dqn.configuration.errors import OneLineParser  # noqa: E402

SEEDS = 3  # runs a method a game, both rules
REPS = 50_000  # the rules' resamples (PLAN.md)


def splits() -> list[tuple[int, ...]]:
    """The 20 ways X's 3 runs can rank among a game's 6 (0 lowest)."""
    return list(itertools.combinations(range(2 * SEEDS), SEEDS))


def u_distribution(ranks: tuple[int, ...]) -> np.ndarray:
    """P(U = u), u = 0..9, for one game's bootstrap resample: U counts the pairs of resampled X and Y runs that X
    wins."""
    others = [r for r in range(2 * SEEDS) if r not in ranks]
    counts = np.zeros(SEEDS * SEEDS + 1)
    for xs in itertools.product(ranks, repeat=SEEDS):
        for ys in itertools.product(others, repeat=SEEDS):
            counts[sum(x > y for x in xs for y in ys)] += 1
    return counts / counts.sum()


def below_half(games: int) -> tuple[list[float], list[float]]:
    """Over every dataset of `games` games (grouped by their games' split kinds, with their weights): the chance
    that a resampled P lies below 0.5 (it never equals it: 9 × games pairs is odd for an odd number of games)."""
    kinds = Counter(tuple(u_distribution(s).round(12)) for s in splits())  # splits alike up to U's distribution
    weights, chances = [], []
    half = SEEDS * SEEDS * games / 2
    for combo in itertools.combinations_with_replacement(list(kinds), games):
        dist = np.array([1.0])
        for kind in combo:
            dist = np.convolve(dist, np.array(kind))
        chances.append(min(1.0, float(dist[: math.ceil(half)].sum())))
        arrangements = math.factorial(games)
        for k in Counter(combo).values():
            arrangements //= math.factorial(k)
        weights.append(arrangements * math.prod(kinds[kind] for kind in combo) / len(splits()) ** games)
    return weights, chances


def exact_rate(games: int, reps: int | None = REPS) -> float:
    """The chance, under the idealised null, that the rule's lower bound lies above 0.5: with `reps` resamples, or
    with unlimited resamples (None: the chance of a resampled P below 0.5 under 0.025). numpy's linear percentile
    sits at h = 0.025 (reps - 1) of the sorted resamples: above 0.5 where at most floor(h) of them are below it, and
    where floor(h) + 1 are, between the values of P on either side of 0.5, above it when h's fraction is over 1/2
    (P's values are symmetric about 0.5; that the two nearest it are the ones drawn there is assumed)."""
    if games % 2 == 0:
        raise ValueError(f"--games {games}: give an odd number (with an even one P can equal 0.5 exactly)")
    weights, chances = below_half(games)
    if reps is None:
        return float(sum(w for w, q in zip(weights, chances, strict=True) if q < 0.025))
    from scipy.stats import binom

    h = 0.025 * (reps - 1)
    allowed = math.floor(h) + (h - math.floor(h) > 0.5)
    return float(sum(w * binom.cdf(allowed, reps, q) for w, q in zip(weights, chances, strict=True)))


def lower_bounds(x: np.ndarray, y: np.ndarray, reps: int, rng: np.random.Generator) -> float:
    """The 2.5th percentile of P(X > Y) over `reps` stratified resamples of x and y (runs × games), as rliable draws
    them: each game's runs of each side with replacement, on their own."""
    n, games = x.shape
    m = y.shape[0]
    xs = np.take_along_axis(np.broadcast_to(x, (reps, n, games)), rng.integers(0, n, (reps, n, games)), 1)
    ys = np.take_along_axis(np.broadcast_to(y, (reps, m, games)), rng.integers(0, m, (reps, m, games)), 1)
    above = xs[:, :, None, :] > ys[:, None, :, :]
    tied = xs[:, :, None, :] == ys[:, None, :, :]
    p = (above + 0.5 * tied).mean(axis=(1, 2, 3))
    return float(np.percentile(p, 2.5))


def family_rate(datasets: int, reps: int, seed: int, games: int = 5) -> tuple[float, float]:
    """Stage 2b's three decisions under the idealised null, simulated: the share of datasets in which any default
    changes (ε or no count augmentation passes against β-DQN's default-flag runs, or both target4k readings pass),
    and its standard error."""
    rng = np.random.default_rng(seed)

    def passes(x, y) -> bool:
        return lower_bounds(x, y, reps, rng) > 0.5

    fired = 0
    for _ in range(datasets):
        beta, dqn = rng.normal(size=(SEEDS, games)), rng.normal(size=(SEEDS, games))
        eps, nocount, target_beta, target_dqn = (rng.normal(size=(SEEDS, games)) for _ in range(4))
        fired += (passes(eps, beta) or passes(nocount, beta)
                  or (passes(target_beta, beta) and passes(target_dqn, dqn)))
    share = fired / datasets
    return share, math.sqrt(share * (1 - share) / datasets)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser.script("python results/minatar-departure/calibration.py", __doc__)
    parser.add_argument("--games", type=int, default=None, help="one rule, over this many games (odd); default: "
                                                                "3 (stage 1b) and 5 (stage 2b), and the family")
    parser.add_argument("--datasets", type=int, default=4000, help="the family's simulated datasets (default 4,000)")
    parser.add_argument("--reps", type=int, default=2000, help="the family's resamples a test (default 2,000)")
    parser.add_argument("--seed", type=int, default=1, help="the family's generator seed (default 1)")
    args = parser.parse_args(argv)
    bad = [f"--games {args.games} (allowed: 1, 3, 5, 7 or 9)"] if args.games not in (None, 1, 3, 5, 7, 9) else []
    bad += [f"--datasets {args.datasets} (allowed: 1 or more)"] if args.datasets < 1 else []
    bad += [f"--reps {args.reps} (allowed: 100 or more)"] if args.reps < 100 else []
    if bad:
        parser.error("; ".join(bad))
    for games in ([args.games] if args.games else [3, 5]):
        print(f"{games} games × {SEEDS} seeds a side, no difference: the lower bound above 0.5 with probability "
              f"{exact_rate(games):.4f} ({REPS:,} resamples), {exact_rate(games, None):.4f} (unlimited); "
              "nominal 0.025")
    if args.games is None:
        share, error = family_rate(args.datasets, args.reps, args.seed)
        print(f"stage 2b's three decisions, no difference anywhere: any default changes in {share:.4f} ± {error:.4f} "
              f"of {args.datasets:,} simulated datasets ({args.reps:,} resamples a test, generator seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
