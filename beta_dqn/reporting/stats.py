"""The report's statistics, from rliable (Agarwal et al., "Deep RL at the Edge of the Statistical Precipice",
NeurIPS 2021): every interval is its stratified bootstrap over runs (seeds), percentile method, 95%, seeded.

- `mean_ci`: one cell of a table, the mean over seeds with its interval;
- `curve_ci`: a learning curve, the mean over seeds at each evaluation with its interval;
- `aggregates`: over several environments (a matrix runs × environments), rliable's IQM (of every run's score),
  mean and median (of the environments' means over runs);
- `improvement`: the probability that a run of X scores above a run of Y in the same environment, averaged over
  the environments (Mann–Whitney, a tie counts half), with its interval; `exact_improvement` the same as exact
  fractions, for a rule that compares a bound with 0.5;
- `profile`: the performance profile, the share of runs whose score is above τ, for each τ;
- `holm`: Holm's step-down adjustment of a family of p-values (the studies' tables).

rliable pulls in SciPy, pandas and arch (2.4–6 s to import on 2 cores): it is imported at the first interval,
so that `learner.report --help` and a mistaken path answer at once, and the run loop never imports it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np

REPS = 2_000  # bootstrap resamples of an interval when the caller names none (`learner.report --reps`)
MAX_REPS = 1_000_000  # beyond it, minutes of work and gigabytes for no more precision
CONFIDENCE = 0.95


def _rliable():
    """rliable's `library` and `metrics` modules (imported here, at their first use: see the docstring)."""
    from rliable import library, metrics

    return library, metrics


def _aggregates() -> dict[str, Callable[[np.ndarray], float]]:
    _, metrics = _rliable()
    return {"IQM": metrics.aggregate_iqm, "mean": metrics.aggregate_mean, "median": metrics.aggregate_median}


def _estimate(scores, func, reps: int | None, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rliable's `get_interval_estimates` of `func` over `scores` (an array runs × tasks [× ...], or a list of
    such arrays for a function of several): (point, low, high), each an array of func's outputs."""
    reps, (library, _) = reps or REPS, _rliable()
    with warnings.catch_warnings(), _seeded(seed):  # arch deprecates the RandomState rliable hands it
        warnings.simplefilter("ignore", FutureWarning)
        point, interval = library.get_interval_estimates(
            {"x": scores}, func, reps=reps, confidence_interval_size=CONFIDENCE,
            random_state=np.random.RandomState(seed))
    return np.atleast_1d(point["x"]), interval["x"][0], interval["x"][1]


@contextlib.contextmanager
def _seeded(seed: int):
    """NumPy's global generator seeded for the block, and put back as it was after: rliable's stratified
    bootstrap draws its resamples from it (`np.random.choice`), whatever `random_state` it is given, so this is
    what makes an interval the same every time."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def mean_ci(values, reps: int | None = None, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of `values` (one environment's seeds)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    point, low, high = _estimate(x.reshape(-1, 1), lambda s: np.array([s.mean()]), reps, seed)
    return float(point[0]), float(low[0]), float(high[0])


def t_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Student's t interval of the mean, mean ± t_{(1+c)/2, n−1} · s/√n: at few seeds wider than the percentile
    bootstrap's, which never leaves the seeds' range and so undercovers (n = 5: about 0.83 for normal scores,
    simulated in tests/test_interval_coverage.py). Both NaN for a single value."""
    from scipy import stats as scipy_stats

    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return float("nan"), float("nan")
    half = float(scipy_stats.t.ppf((1 + confidence) / 2, x.size - 1)) * float(x.std(ddof=1)) / np.sqrt(x.size)
    return float(x.mean()) - half, float(x.mean()) + half


def curve_ci(curves, reps: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point of the curves (an array seeds × points): the mean over seeds, low and high (one call of rliable;
    each point's seeds are resampled on their own)."""
    x = np.asarray(curves, dtype=np.float64)
    if x.shape[0] == 1:
        return x[0], x[0], x[0]
    return _estimate(x[:, None, :], lambda s: s.mean(axis=0)[0], reps, seed)


def aggregates(matrix, reps: int | None = None, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """rliable's aggregates of a matrix runs × environments (the same run count in every environment), each
    (point, low, high): the IQM of all its scores, and the mean and the median of the environments' means."""
    x, funcs = np.asarray(matrix, dtype=np.float64), _aggregates()
    point, low, high = _estimate(x, lambda s: np.array([f(s) for f in funcs.values()]), reps, seed)
    return {name: (float(point[i]), float(low[i]), float(high[i])) for i, name in enumerate(funcs)}


def improvement(x, y, reps: int | None = None, seed: int = 0) -> tuple[float, float, float]:
    """P(X > Y) (rliable's `probability_of_improvement`: per environment the chance that a run of X scores above
    a run of Y, a tie counting half, averaged over the environments) and its interval; `x` and `y` are
    matrices runs × environments (their run counts may differ)."""
    _, metrics = _rliable()
    point, low, high = _estimate([np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)],
                                 lambda a, b: np.array([metrics.probability_of_improvement(a, b)]), reps, seed)
    return float(point[0]), float(low[0]), float(high[0])


# the 95% interval's percentiles, as arch asks NumPy for them (100·(1 − 0.95)/2 in floating point: 2.5000000000000018),
# as exact fractions of 1
_LOW_Q = Fraction(100 * ((1 - CONFIDENCE) / 2)) / 100
_HIGH_Q = Fraction(100 * (1 - (1 - CONFIDENCE) / 2)) / 100


def _wins(x: np.ndarray, y: np.ndarray) -> int:
    """Twice the Mann–Whitney count summed over the environments: Σ_env Σ_i Σ_j (2·[x_i > y_j] + [x_i = y_j]),
    for matrices runs × environments. Over 2·n·m·K (n, m runs, K environments) it is rliable's probability of
    improvement, so that number is this integer's exact fraction."""
    x, y = x[:, None, :], y[None, :, :]
    return int(2 * (x > y).sum() + (x == y).sum())


def exact_improvement(x, y, reps: int, seed: int = 0) -> tuple[Fraction, Fraction, Fraction]:
    """P(X > Y) and its 95% percentile interval as exact fractions: rliable's stratified bootstrap (the same
    resamples `improvement` draws for `seed`: rliable's StratifiedIndependentBootstrap, the global generator
    seeded), each resample's `_wins` an integer, and the percentiles interpolated as NumPy's default (linear) does,
    in fractions."""
    library, _ = _rliable()
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n, m, k = x.shape[0], y.shape[0], x.shape[1]
    whole = 2 * n * m * k
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():  # arch deprecates the RandomState rliable hands it
            warnings.simplefilter("ignore", FutureWarning)
            boot = library.StratifiedIndependentBootstrap(x, y, random_state=np.random.RandomState(seed))
            draws = np.sort(np.array([_wins(*data[0]) for data in boot.bootstrap(reps)], dtype=np.int64))
    finally:
        np.random.set_state(state)

    def percentile(q: Fraction) -> Fraction:
        at = q * (len(draws) - 1)
        below = int(at)  # floor (at >= 0)
        above = min(below + 1, len(draws) - 1)
        return Fraction(int(draws[below])) + (at - below) * (int(draws[above]) - int(draws[below]))

    return Fraction(_wins(x, y), whole), percentile(_LOW_Q) / whole, percentile(_HIGH_Q) / whole


MAX_SPLITS = 200_000  # an exact permutation test enumerates every split of the runs up to this many


def _u(a: np.ndarray, b: np.ndarray) -> float:
    """Mann–Whitney's U of `a` over `b`: pairs where a's run is above b's, a tie counting half."""
    return float((a[:, None] > b[None, :]).sum() + 0.5 * (a[:, None] == b[None, :]).sum())


def _variance(x: np.ndarray) -> float:
    """The sample variance (n - 1), or 0 where the values differ by no more than rounding."""
    if np.ptp(x) <= 16 * np.finfo(np.float64).eps * max(1.0, float(np.abs(x).max())):
        return 0.0
    return float(x.var(ddof=1))


def difference(x, y) -> dict:
    """Two samples of final scores (one environment's seeds of two columns): the difference of their means,
    Welch's t-test's two-sided p (None where both samples are constant, to rounding: no variance to test), the two-sided
    Mann–Whitney p as an exact permutation test over every split of the runs into the two sizes (ties count
    half, so it holds with tied scores too; None beyond MAX_SPLITS splits), and the smallest p that test can reach
    with these sizes, 2 / C(n + m, n) (3 runs a side: 0.10, so it can never call a difference at 0.05)."""
    from itertools import combinations
    from math import comb

    from scipy import stats as scipy_stats

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    welch = None
    if len(a) > 1 and len(b) > 1:
        # Welch's t-test, written out so that a sample whose spread is rounding (seeds that all scored 4/30, summed
        # in another order) counts as constant, variance 0, rather than as a tiny variance that makes any
        # difference "significant" (scipy's own test warns of precision loss there and divides by it)
        va, vb = _variance(a) / len(a), _variance(b) / len(b)
        if va + vb > 0:
            t = (a.mean() - b.mean()) / np.sqrt(va + vb)
            df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
            welch = float(2 * scipy_stats.t.sf(abs(t), df))
    splits, whitney = comb(len(a) + len(b), len(a)), None
    if splits <= MAX_SPLITS:
        pooled, centre = np.concatenate([a, b]), len(a) * len(b) / 2
        seen = abs(_u(a, b) - centre)
        extreme = 0
        for chosen in combinations(range(len(pooled)), len(a)):
            mask = np.zeros(len(pooled), dtype=bool)
            mask[list(chosen)] = True
            extreme += abs(_u(pooled[mask], pooled[~mask]) - centre) >= seen - 1e-9
        whitney = extreme / splits
    return {"difference": float(a.mean() - b.mean()), "welch_p": welch, "mann_whitney_p": whitney,
            "mann_whitney_least_p": min(1.0, 2 / splits)}


def holm(ps: dict[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p-values of one family of tests (name: p): sorted, the i-th (from 0) times the
    number of tests less i, never below the one before it, at most 1."""
    order, out, running = sorted(ps, key=lambda name: ps[name]), {}, 0.0
    for i, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * ps[name]))
        out[name] = running
    return out


def profile(matrices: dict[str, np.ndarray], taus, reps: int | None = None
            ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per name: the share of its runs (over every environment) with a score above each τ, and its interval
    (an array 2 × τs)."""
    reps, (library, _) = reps or REPS, _rliable()
    with warnings.catch_warnings(), _seeded(0):
        warnings.simplefilter("ignore", FutureWarning)
        return library.create_performance_profile(
            {k: np.asarray(v, dtype=np.float64) for k, v in matrices.items()}, np.asarray(taus, dtype=np.float64),
            reps=reps, confidence_interval_size=CONFIDENCE)
