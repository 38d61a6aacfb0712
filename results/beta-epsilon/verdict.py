"""The β-epsilon study's verdict (PLAN.md's decision rule), printed from the committed records.

    python results/beta-epsilon/verdict.py            # the preregistered computation (50,000 resamples)

Reads the records of the study's ε runs (every directory under results/beta-epsilon/ with a runs.csv), of the
none runs PLAN.md reuses (raw-returns β-DQN in results/asterix-bandit-returns, results/seaquest-bandit-returns,
results/bandit-returns/ and results/table1-6ec5992/) and of the protocol's DQN runs (results/table1-protocol/);
takes each run's final greedy score and computes with rliable the probability that an ε run ends above a none run
of the same environment, averaged over the 11 environments, with its 95% stratified bootstrap interval. The rule
compares the interval's bounds with 0.5 as exact fractions (`beta_dqn.reporting.stats.exact_improvement`), so that it
cannot
turn on rounding. Runs that depart from PLAN.md's flags are refused. Beside it, not deciding: the same per domain
and per environment, the IQM of scores over DQN's mean, and the CPU kinds each arm ran on.

Exit status: 0 with a verdict, 1 when runs are missing (listed), 2 on a bad argument or a record that does not
read.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # (run as a script from anywhere)

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402
from beta_dqn.reporting import stats  # noqa: E402
from beta_dqn.reporting.records import load_all  # noqa: E402
from beta_dqn.reporting.results import ReportError, config_value, final_score  # noqa: E402

HERE = Path(__file__).resolve().parent
MINATAR = ("MinAtar/Asterix", "MinAtar/Breakout", "MinAtar/Freeway", "MinAtar/Seaquest", "MinAtar/SpaceInvaders")
MINIGRID = ("DoorKey", "Unlock", "SimpleCrossing-Easy", "SimpleCrossing-Hard", "LavaCrossing-Easy",
            "LavaCrossing-Hard")
ENVS = MINATAR + MINIGRID
ARMS = ("eps", "none")
REPS = 50_000  # PLAN.md: rliable's get_interval_estimates, reps=50000, percentile, 95%, seed 0
COMMITS = {"eps": ("7adcac3",), "dqn": ("f7c4e83",), "none": ("51b16f8", "5f7eb23", "6ec5992", "7adcac3")}  # PLAN.md
# the none runs PLAN.md makes at the study's commit (the others are reused from the bandit-returns study)
NEW_NONE = {(env, seed) for env in ("SimpleCrossing-Easy", "LavaCrossing-Hard") for seed in (3, 4)}
NONE_RECORDS = ("asterix-bandit-returns", "seaquest-bandit-returns", "bandit-returns", "table1-6ec5992")


def records() -> list[Path]:
    """Every record the verdict reads: the reused none runs, the study's runs, the protocol's DQN runs."""
    results = ROOT / "results"
    found = [results / "asterix-bandit-returns", results / "seaquest-bandit-returns"]
    found += sorted(p.parent for p in (results / "bandit-returns").glob("*/runs.csv"))
    found += sorted(p.parent for p in (results / "table1-6ec5992").glob("*-beta-raw-s*/runs.csv"))
    found += sorted(p.parent for p in HERE.glob("*/runs.csv"))
    found += sorted(p.parent for p in (results / "table1-protocol").glob("*/runs.csv"))
    return found


def arm_of(run) -> str | None:
    """The run's column: eps, none (β-DQN with raw returns, with or without ε), dqn, or None (not the study's)."""
    if run.algo == "dqn":
        return "dqn" if "table1-protocol" in str(run.path) else None
    if run.algo != "beta_dqn" or config_value(run, "bandit_returns") != "raw":
        return None
    return "eps" if config_value(run, "beta_epsilon") else "none"


def collect(roots: list[Path]) -> dict[tuple[str, str, int], object]:
    """Every run of the study once, keyed (env, arm, seed): a run that two records hold must score the same."""
    runs, _ = load_all(*roots)
    chosen: dict[tuple[str, str, int], object] = {}
    for run in runs:
        arm = arm_of(run)
        if run.env not in ENVS or arm is None:
            continue
        key = (run.env, arm, int(run.config["seed"]))
        if key in chosen and final_score(chosen[key]) != final_score(run):
            raise ReportError(f"{key[0]} {key[1]} seed {key[2]} is in two records with different scores "
                              f"({chosen[key].path}: {final_score(chosen[key])}, {run.path}: {final_score(run)})")
        chosen.setdefault(key, run)
    return chosen


def _normal(config, env: str, key: str):
    """A field of a configuration as the run used it: γ and the learning rate resolved to the environment's
    default where left to it, the ε decay to its steps."""
    from beta_dqn.configuration.defaults import env_defaults
    from beta_dqn.configuration.flags import epsilon_decay_steps

    value = config(key)
    if value is None and key in ("gamma", "lr"):
        gamma, lr = env_defaults(env)
        return gamma if key == "gamma" else lr
    if value is None and key == "eps_decay_steps":
        return epsilon_decay_steps(SimpleNamespace(eps_decay_steps=None, total_steps=config("total_steps"),
                                                   eps_decay_fraction=config("eps_decay_fraction")))
    return value


def off_plan(run, arm: str) -> str:
    """How a run departs from PLAN.md ("" when it does not): any flag that changes what a run computes and that its
    method reads, against PLAN.md's configuration (the arm's own --beta-epsilon aside), and its commit."""
    from beta_dqn.configuration.flags import AXES, Config, reads

    steps = 1_000_000 if run.env.startswith("MinAtar/") else 500_000
    # the protocol's DQN runs are serial, as a grid places them (PLAN.md, deviation of 2026-12-05); the study's, Ray
    plan = Config.of(env=run.env, algo="dqn" if arm == "dqn" else "beta_dqn", total_steps=steps,
                  runtime="serial" if arm == "dqn" else "ray",
                  actors=4, arm_exchange="episode", bandit_returns="raw", beta_epsilon=arm == "eps")
    for key in sorted(AXES - {"env", "algo"}):
        if not reads(run.algo, key, run.config):
            continue
        got = _normal(lambda k: config_value(run, k), run.env, key)
        want = _normal(plan.value, run.env, key)
        if got != want:
            return f"{key} is {got!r}, not {want!r}"
    commit = str(run.summary.get("commit") or "")
    if not commit.startswith(COMMITS[arm]) or "dirty" in commit:
        return f"its commit is {commit or 'not recorded'!r}, not {' or '.join(COMMITS[arm])} (clean)"
    if arm == "none" and commit.startswith("7adcac3") and (run.env, int(run.config["seed"])) not in NEW_NONE:
        return ("its commit is the study's, 7adcac3, where PLAN.md makes none runs only for SimpleCrossing-Easy and "
                "LavaCrossing-Hard seeds 3-4")
    return ""


def decide(low: Fraction, high: Fraction, stage: int) -> tuple[str, str]:
    """PLAN.md's rule: (outcome, why), outcome eps, none or more-seeds; the bounds compared with 1/2 exactly."""
    half = Fraction(1, 2)
    if stage == 1:
        if low > half:
            return "eps", "seeds 0-2, the lower bound is above 0.5: the default becomes ε (--beta-epsilon true)"
        if high < half:
            return "none", "seeds 0-2, the upper bound is below 0.5: the default stays (--beta-epsilon false)"
        return "more-seeds", "seeds 0-2, the interval holds 0.5: stage 2 adds seeds 3-4 in all 11 environments"
    if low > half:
        return "eps", "seeds 0-4, the lower bound is above 0.5: the default becomes ε (--beta-epsilon true)"
    return "none", ("seeds 0-4, the lower bound is not above 0.5: the default stays (--beta-epsilon false), as "
                    "Algorithm 1 has it")


def arguments(argv: list[str] | None) -> argparse.Namespace | None:
    """The command line (None, said on stderr, when --reps is out of range)."""
    parser = OneLineParser.script("python results/beta-epsilon/verdict.py", __doc__)
    parser.add_argument("--reps", type=int, default=REPS,
                        help=f"bootstrap resamples (default {REPS:,}, the preregistered count; fewer for a quick "
                             "look, and the output then says it is not the verdict)")
    args = parser.parse_args(argv)
    if not 100 <= args.reps <= stats.MAX_REPS:
        print(f"verdict.py: error: --reps {args.reps}: give 100 to {stats.MAX_REPS:,} resamples", file=sys.stderr)
        return None
    return args


def missing(runs, seeds) -> list[str]:
    """The study's runs of these seeds that are not in the records."""
    return [f"{e} {a} seed {s}" for e in ENVS for a in ARMS for s in seeds if (e, a, s) not in runs]


def matrix(runs, arm: str, seeds, envs=ENVS) -> np.ndarray:
    """Final scores of an arm's runs, seeds × environments."""
    return np.array([[final_score(runs[e, arm, s]) for e in envs] for s in seeds], dtype=np.float64)


def estimate(runs, seeds, reps: int, envs=ENVS):
    """P(ε > none) with its interval: exact fractions (what decides) and rliable's floats."""
    x, y = matrix(runs, "eps", seeds, envs), matrix(runs, "none", seeds, envs)
    return stats.exact_improvement(x, y, reps), stats.improvement(x, y, reps=reps, seed=0)


def verdict(runs, reps: int) -> int:
    """PLAN.md's rule, stage 1 and where it asks (and the runs are in) stage 2, printed; then what is beside it."""
    seeds = [0, 1, 2]
    (p, low, high), floats = estimate(runs, seeds, reps)
    outcome, said = decide(low, high, 1)
    if outcome == "more-seeds" and not missing(runs, [3, 4]):
        seeds = [0, 1, 2, 3, 4]
        (p, low, high), floats = estimate(runs, seeds, reps)
        outcome, said = decide(low, high, 2)
    elif outcome == "more-seeds":
        left = missing(runs, [3, 4])
        print(_interval_line(p, low, high, floats, reps, seeds))
        print(f"verdict: {said}; {len(left)} of those runs {'is' if len(left) == 1 else 'are'} not in the records "
              f"yet: {', '.join(left)}{_not_preregistered(reps)}")
        return 1
    print(f"β-epsilon study: {len(ENVS)} environments, seeds {seeds[0]}-{seeds[-1]}, "
          f"{len(ARMS) * len(ENVS) * len(seeds)} β-DQN runs")
    print(_interval_line(p, low, high, floats, reps, seeds))
    print(f"verdict: {said}{_not_preregistered(reps)}")
    print()
    beside(runs, seeds, reps)
    return 0


def _not_preregistered(reps: int) -> str:
    """What a verdict line adds when its resample count is not PLAN.md's ("" when it is)."""
    return "" if reps == REPS else f" (NOT the verdict: {reps:,} resamples, not PLAN.md's {REPS:,})"


def _interval_line(p, low, high, floats, reps: int, seeds) -> str:
    """P(ε > none) over seeds, its interval as the rule compares it (exact) and as rliable prints it."""
    return (f"seeds {seeds[0]}-{seeds[-1]}: P(ε > none) = {float(p):.4f}, 95% interval [{float(low):.4f}, "
            f"{float(high):.4f}] (rliable, stratified bootstrap, {reps:,} resamples, seed 0; exact: {p}, "
            f"[{low}, {high}]; rliable's floats {floats[0]:.6f} [{floats[1]:.6f}, {floats[2]:.6f}])")


def beside(runs, seeds, reps: int) -> None:
    """Not deciding: P(ε > none) per domain and per environment, each column's mean, the IQM over DQN's mean, and
    the CPU kinds each arm ran on."""
    print("Beside it, not deciding (2,000 resamples):")
    for name, envs in (("MinAtar", MINATAR), ("MiniGrid", MINIGRID)):
        q, lo, hi = stats.improvement(matrix(runs, "eps", seeds, envs), matrix(runs, "none", seeds, envs),
                                      reps=min(reps, 2_000), seed=0)
        print(f"  {name}: P(ε > none) = {q:.2f} [{lo:.2f}, {hi:.2f}]")
    print(f"{'environment':<22} {'P(ε > none)':>11} " + " ".join(f"{c:>24}" for c in (*ARMS, "dqn")))
    for env in ENVS:
        one = stats.improvement(matrix(runs, "eps", seeds, [env]), matrix(runs, "none", seeds, [env]), reps=2_000)[0]
        cells = []
        for arm in (*ARMS, "dqn"):
            scores = [final_score(runs[env, arm, s]) for s in seeds if (env, arm, s) in runs]
            mean, lo, hi = stats.mean_ci(scores, reps=2_000) if scores else (np.nan, np.nan, np.nan)
            cells.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}] ({len(scores)})" if scores else "—")
        print(f"{env:<22} {one:>11.2f} " + " ".join(f"{c:>24}" for c in cells))
    dqn = {e: np.mean([final_score(runs[e, "dqn", s]) for s in seeds if (e, "dqn", s) in runs])
           for e in ENVS if all((e, "dqn", s) in runs for s in seeds)}
    scaled = [e for e in ENVS if dqn.get(e, 0) > 0]
    print()
    if scaled:
        print(f"IQM of final scores over DQN's mean ({len(scaled)} environments; left out, DQN's mean 0 or its "
              f"runs not all in: {', '.join(e for e in ENVS if e not in scaled) or 'none'}), [95% interval]:")
        for arm in (*ARMS, "dqn"):
            rows = np.array([[final_score(runs[e, arm, s]) / dqn[e] for e in scaled] for s in seeds])
            iqm = stats.aggregates(rows, reps=2_000)["IQM"]
            print(f"  {arm:<5} {iqm[0]:.2f} [{iqm[1]:.2f}, {iqm[2]:.2f}]")
    else:
        print("IQM over DQN's mean: not yet (the protocol's DQN runs are not all in)")
    for arm in ARMS:
        cpus = Counter((runs[e, arm, s].summary.get("cpu") or "not recorded") for e in ENVS for s in seeds)
        print(f"CPU of the {arm} runs: " + ", ".join(f"{cpu} {count}" for cpu, count in cpus.most_common()))


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
        print(f"{len(left)} of the study's {len(ENVS) * len(ARMS) * 3} stage-1 runs "
              f"{'is' if len(left) == 1 else 'are'} not in the records yet: {', '.join(left)}")
        return 1
    wrong = [f"{e} {a} seed {s}: {why}" for (e, a, s), run in runs.items() for why in [off_plan(run, a)] if why]
    if wrong:
        print(f"verdict.py: error: runs that do not follow PLAN.md's flags: {'; '.join(wrong)}", file=sys.stderr)
        return 2
    return verdict(runs, args.reps)


if __name__ == "__main__":
    sys.exit(main())
