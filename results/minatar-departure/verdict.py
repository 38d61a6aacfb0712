"""Stage 1b's rule of the MinAtar-departure study (PLAN.md), printed from the committed records.

    python results/minatar-departure/verdict.py            # the preregistered computation (50,000 resamples)

Reads the records under results/minatar-departure/1b/ (β-DQN and DQN, 5M env steps, MinAtar Asterix, Breakout and
Seaquest, seeds 0-2), refuses runs that depart from PLAN.md's flags or commit, and computes with rliable the
probability that a β-DQN run ends above a DQN run of the same game, averaged over the three games, with its 95%
stratified bootstrap interval; the rule compares the lower bound with 0.5 as an exact fraction
(`beta_dqn.reporting.stats.exact_improvement`). Beside it, not deciding: P(β-DQN > DQN) at every evaluation, over the
three games and per game (2,000 resamples), each column's mean per game, and the CPU kinds.

Exit status: 0 with the rule's outcome, 1 when runs are missing (listed), 2 on a bad argument, a record that does
not read, or a run off the plan.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # (run as a script from anywhere)
sys.path.insert(1, str(Path(__file__).resolve().parent))  # rates.py, beside this file

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402
from beta_dqn.reporting import stats  # noqa: E402
from beta_dqn.reporting.records import load_all  # noqa: E402
from beta_dqn.reporting.results import ReportError, config_value, final_score  # noqa: E402

HERE = Path(__file__).resolve().parent
GAMES = ("MinAtar/Asterix", "MinAtar/Breakout", "MinAtar/Seaquest")
METHODS = {"beta_dqn": "β-DQN", "dqn": "DQN"}
SEEDS = (0, 1, 2)
STEPS = 5_000_000
REPS = 50_000  # PLAN.md: rliable's get_interval_estimates, reps=50000, percentile, 95%, seed 0
# PLAN.md's flags for every run, beside the method's own (--algo; β-DQN: raw returns, no ε); every other field that
# changes what a run computes at its default (`off_plan`), the learning rate and γ the game's own
PLAN = {"runtime": "serial", "actors": 4, "envs_per_actor": 4, "arm_exchange": "episode", "total_steps": STEPS,
        "eps_decay_steps": STEPS // 5, "bandit_returns": "raw", "beta_epsilon": False}


DQN_COLUMN = "f7c4e83e63f001085fcaed50285fbbc7de86d808"  # Table 1's serial DQN column, reused by stages 2a and 2b


def at_1m(rate: str, **flags) -> dict:
    """PLAN.md's flags for a run of stages 2a and 2b (1M env steps, ε over its first 20%) at the learning rate, with
    a reading's fields over them."""
    return {**PLAN, "total_steps": 1_000_000, "eps_decay_steps": 200_000, "lr": float(rate), **flags}


def check_record(path: Path, root: Path, algo: str, env: str, seed: int, plan: dict, commit: str) -> None:
    """A record (`path` under `root`) holds one run of `algo` on `env` at `seed`, on `plan`'s flags (`off_plan`), made
    at `commit` (Table 1's DQN column's records, which the plan reuses: at DQN_COLUMN); a ReportError naming how it
    departs."""
    runs, _ = load_all(root / path)
    if len(runs) != 1:
        raise ReportError(f"{path}: {len(runs)} runs in the record, not 1")
    (run,) = runs
    if run.algo != algo:
        raise ReportError(f"{path}: its method is {run.algo}, not {algo}")
    made = DQN_COLUMN if Path(path).parts[:2] == ("results", "table1-protocol") else commit
    why = off_plan(run, made, plan, games=(env,), seeds=(seed,))
    if why:
        raise ReportError(f"{path}: {why}")


SHORT = {"beta": "beta_dqn", "dqn": "dqn"}  # the study's records name a method so (run.py's cells)


def checker(commit: str):
    """`rates.final_score`'s check for the reports: a stage-2a record (or one it reuses: stage 1a's, Table 1's DQN
    column's) holds its game's, method's and seed's run on the plan's flags at its rate (`check_record`), its name
    read as `rates.record` writes it; each record once."""
    import rates  # beside this file (its directory is on the path: see above)

    seen: set[Path] = set()

    def check(path: Path, root: Path) -> None:
        if root / path in seen:
            return
        named = re.fullmatch(r"([a-z]+)-(beta|dqn)(?:-lr([0-9.e-]+))?-s([0-9]+)", Path(path).name)
        game = next((g for g in rates.GAMES if named and g.lower() == named[1]), None)
        if named is None or game is None:
            raise ReportError(f"{path}: not a record of stage 2a's runs (<game>-<method>[-lr<rate>]-s<seed>)")
        rate = named[3] or rates.default(game)
        if rates.record(game, named[2], int(named[4]), rate) != Path(path):
            raise ReportError(f"{path}: not where stage 2a's records of {game} {named[2]} at {rate} are kept")
        check_record(path, root, SHORT[named[2]], f"MinAtar/{game}", int(named[4]), at_1m(rate), commit)
        seen.add(root / path)

    return check


@functools.cache
def study_commit() -> str:
    """The commit that added PLAN.md (PLAN.md: the study's commit), abbreviated as a run's summary has it."""
    out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "results/minatar-departure/PLAN.md"],
                         cwd=ROOT, capture_output=True, text=True, check=False).stdout.split()
    if not out:
        raise ReportError("git log finds no commit that added results/minatar-departure/PLAN.md: run this in a clone "
                          "with the project's history")
    return out[-1]


def collect(homes=(HERE,)) -> dict[tuple[str, str, int], object]:
    """Every stage-1b run once, keyed (game, algo, seed), from the records under each of `homes` (a study's
    records directory; a record of one name from the first that holds it: the runner's clone holds records that
    main does not yet)."""
    found: dict[str, Path] = {}
    for home in homes:
        for record in sorted(p.parent for p in (Path(home) / "1b").glob("[!.]*/runs.csv")):  # (not a copy's
            # partial directory, `.<name>.part-<pid>`, a killed runner may leave)
            found.setdefault(record.name, record)
    roots = [found[name] for name in sorted(found)]
    runs, _ = load_all(*roots) if roots else ([], [])
    chosen: dict[tuple[str, str, int], object] = {}
    for run in runs:
        key = (run.env, run.algo, int(run.config["seed"]))
        if key in chosen:
            raise ReportError(f"{key[0]} {key[1]} seed {key[2]} is in two records ({chosen[key].path}, {run.path})")
        chosen[key] = run
    return chosen


def off_plan(run, commit: str, plan: dict = PLAN, games=GAMES, seeds=SEEDS) -> str:
    """How a run departs from PLAN.md ("" when it does not): its game, method and seed; every field that changes
    what a run computes and that its method reads, against the defaults with `plan`'s values over them (the game's
    own learning rate and γ, as config.json has them resolved, unless `plan` names them: stage 2b's runs); and its
    commit, the study's, clean."""
    from beta_dqn.configuration.defaults import env_defaults
    from beta_dqn.configuration.fields import AXES, FIELDS, reads

    if run.env not in games or run.algo not in METHODS:
        return f"{run.env} {run.algo} is not a cell of the stage"
    if run.config.get("seed") not in seeds:
        return f"its seed is {run.config.get('seed')!r}, not one of {seeds}"
    gamma, lr = env_defaults(run.env)
    want = {**{k: f.default for k, f in FIELDS.items()}, "gamma": gamma, "lr": lr, **plan}
    for key in sorted((AXES | set(plan)) - {"env", "algo"}):
        if key in AXES and not reads(run.algo, key, run.config):
            continue
        got, value = config_value(run, key), want[key]
        same = got == value or (isinstance(value, float) and isinstance(got, (int, float))
                                and not isinstance(got, bool) and float(got) == value)
        if not same:
            return f"{key} is {got!r}, not {value!r}"
    got = str(run.summary.get("commit") or "")
    if not re.fullmatch(r"[0-9a-f]{12}", got) or not commit.startswith(got):
        return f"its commit is {got or 'not recorded'!r}, not the study's {commit[:12]} (clean)"
    return ""


def missing(runs) -> list[str]:
    return [f"{g} {METHODS[a]} seed {s}" for g in GAMES for a in METHODS for s in SEEDS if (g, a, s) not in runs]


def matrix(runs, algo: str, games=GAMES, at: int | None = None) -> np.ndarray:
    """Scores, seeds × games: the final evaluation, or the evaluation at env step `at`."""
    def score(run) -> float:
        if at is None:
            return final_score(run)
        row = next(r for r in run.evals if int(r["env_steps"]) == at)
        return float(row["return_mean"])
    return np.array([[score(runs[g, algo, s]) for g in games] for s in SEEDS], dtype=np.float64)


def the_budget(low: Fraction) -> bool:
    """The rule: the departure at 1M is the budget where the bound is above 0.5, exactly."""
    return low > Fraction(1, 2)


def checked(homes=(HERE,)) -> dict[tuple[str, str, int], object]:
    """Stage 1b's recorded runs, each on PLAN.md's flags and commit (a ReportError names those that are not)."""
    runs = collect(homes)
    commit = study_commit()
    wrong = [f"{g} {a} seed {s}: {why}" for (g, a, s), run in sorted(runs.items()) for why in [off_plan(run, commit)]
             if why]
    if wrong:
        raise ReportError(f"runs that do not follow PLAN.md: {'; '.join(wrong)}")
    return runs


def stage_2b_runs(homes=(HERE,)) -> bool | None:
    """The rule's outcome as the study's runner and stage 2b's report read it: True (stage 2b runs), False (it does
    not: the budget), None while stage 1b's runs are not all recorded; the preregistered computation (REPS
    resamples). A ReportError for a run off the plan."""
    runs = checked(homes)
    if missing(runs):
        return None
    _, low, _ = stats.exact_improvement(matrix(runs, "beta_dqn"), matrix(runs, "dqn"), REPS)
    return not the_budget(low)


def decide(low: Fraction) -> str:
    if the_budget(low):
        return ("the lower bound is above 0.5: the MinAtar departure at 1M is the budget; the docs say so, and stage "
                "2b is not run (stage 2a runs either way)")
    return "the lower bound is not above 0.5: stage 2b runs (and stage 2a, which runs either way)"


def beside(runs, reps: int) -> None:
    """Not deciding: P(β-DQN > DQN) at every evaluation, over the games and per game; means; CPUs."""
    steps = sorted({int(r["env_steps"]) for run in runs.values() for r in run.evals})
    steps = [s for s in steps if all(any(int(r["env_steps"]) == s for r in run.evals) for run in runs.values())]
    few = min(reps, 2_000)
    print(f"P(β-DQN > DQN) at each evaluation, 95% interval ({few:,} resamples); then each game's means "
          "(β-DQN / DQN):")
    head = f"{'env steps':>9}  {'3 games':>18}  " + "  ".join(f"{g.removeprefix('MinAtar/'):>30}" for g in GAMES)
    print(head)
    for at in steps:
        x, y = matrix(runs, "beta_dqn", at=at), matrix(runs, "dqn", at=at)
        p, lo, hi = stats.improvement(x, y, reps=few, seed=0)
        cells = []
        for i in range(len(GAMES)):
            q, qlo, qhi = stats.improvement(x[:, [i]], y[:, [i]], reps=few, seed=0)
            cells.append(f"{q:.2f} [{qlo:.2f}, {qhi:.2f}] {x[:, i].mean():6.2f}/{y[:, i].mean():6.2f}")
        print(f"{at:>9}  {f'{p:.2f} [{lo:.2f}, {hi:.2f}]':>18}  " + "  ".join(f"{c:>30}" for c in cells))
    for algo, label in METHODS.items():
        cpus = Counter((runs[g, algo, s].summary.get("cpu") or "not recorded") for g in GAMES for s in SEEDS)
        print(f"CPU of the {label} runs: " + ", ".join(f"{cpu} {n}" for cpu, n in cpus.most_common()))


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser.script("python results/minatar-departure/verdict.py", __doc__)
    parser.add_argument("--reps", type=int, default=REPS,
                        help=f"bootstrap resamples (default {REPS:,}, the preregistered count; fewer for a quick "
                             "look, and the output then says it is not the verdict)")
    args = parser.parse_args(argv)
    if not 100 <= args.reps <= stats.MAX_REPS:
        print(f"verdict.py: error: --reps {args.reps}: give 100 to {stats.MAX_REPS:,} resamples", file=sys.stderr)
        return 2
    try:
        runs = checked()
    except ReportError as e:
        print(f"verdict.py: error: {e}", file=sys.stderr)
        return 2
    left = missing(runs)
    if left:
        print(f"{len(left)} of stage 1b's {len(GAMES) * len(METHODS) * len(SEEDS)} runs "
              f"{'is' if len(left) == 1 else 'are'} not in the records yet: {', '.join(left)}")
        return 1
    x, y = matrix(runs, "beta_dqn"), matrix(runs, "dqn")
    (p, low, high), floats = stats.exact_improvement(x, y, args.reps), stats.improvement(x, y, reps=args.reps, seed=0)
    note = "" if args.reps == REPS else f" (NOT the verdict: {args.reps:,} resamples, not PLAN.md's {REPS:,})"
    print(f"stage 1b: 3 games, seeds 0-2, {STEPS:,} env steps, {len(runs)} runs")
    print(f"at 5M: P(β-DQN > DQN) = {float(p):.4f}, 95% interval [{float(low):.4f}, {float(high):.4f}] (rliable, "
          f"stratified bootstrap, {args.reps:,} resamples, seed 0; exact: {p}, [{low}, {high}]; rliable's floats "
          f"{floats[0]:.6f} [{floats[1]:.6f}, {floats[2]:.6f}])")
    print(f"rule: {decide(low)}{note}")
    for winner, loser, (p_, q_) in (("β-DQN", "DQN", (x, y)), ("DQN", "β-DQN", (y, x))):
        swept = [g.removeprefix("MinAtar/") for i, g in enumerate(GAMES)
                 if (p_[:, i][:, None] > q_[:, i][None, :]).all()]
        if swept:  # P averages the games: a game one side wins in every pair narrows nothing (PLAN.md's note)
            print(f"every {winner} run above every {loser} run on: {', '.join(swept)}")
    print()
    beside(runs, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
