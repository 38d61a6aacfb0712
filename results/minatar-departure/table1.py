"""Table 1 with both columns serial (PLAN.md beside this file, "Reporting"): stage 1a's β-DQN records against Table
1's serial DQN column, with Table 1's Ray β-DQN column beside them as a labelled comparison. Run from anywhere:

    python results/minatar-departure/table1.py      # the report (about 2 min on 2 cores), then the tests below

It stops (exit 1) while any of stage 1a's 55 records is missing, and refuses (exit 2) a stage 1a record that is not
at the study's commit. It writes `results/minatar-departure/table1/` with `learner.report` (both β-DQN columns
against DQN: means, percentile and t intervals, Welch's and Mann–Whitney's p, the IQM and P(β-DQN > DQN) per
domain), then prints, and writes to `results/minatar-departure/table1.txt`, what the report does not compute:
Holm's correction per domain for the serial column's calls, per environment the Ray column against the serial one
(the runtime, with the commits and sittings that differ between them), and P(β-DQN > DQN) on MinAtar at each
evaluation."""

from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402 - the study's cells

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402
from beta_dqn.reporting.stats import holm  # noqa: E402


def _beta_epsilon():
    """results/beta-epsilon/verdict.py, whose records() are Table 1's (by path: this study has a verdict.py too)."""
    spec = importlib.util.spec_from_file_location("beta_epsilon_verdict", ROOT / "results/beta-epsilon/verdict.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module

OUT = Path("results/minatar-departure/table1")
TEXT = Path("results/minatar-departure/table1.txt")  # what this script prints after the report, kept
_lines: list[str] = []


def say(text: str = "") -> None:
    print(text)
    _lines.append(text)
SERIAL, RAY, DQN = "runtime=serial,bandit-returns=raw", "runtime=ray,bandit-returns=raw", "runtime=serial"


def _p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def main() -> int:
    a = run.cells("1a")
    missing = [c.name for c in a if not (ROOT / c.record / "runs.csv").is_file()]
    if missing:
        print(f"table1.py: {len(missing)} of stage 1a's 55 records are missing ({', '.join(missing[:4])} ...); "
              "the table waits for them", file=sys.stderr)
        return 1
    study = run.grids.git(ROOT, "log", "--diff-filter=A", "--format=%H", "--", str(run.RECORDS / "PLAN.md")).split()[-1]
    for c in a:
        with open(ROOT / c.record / "runs.csv", newline="") as f:
            (row,) = csv.DictReader(f)
        if not re.fullmatch(r"[0-9a-f]{12}", row["commit"]) or not study.startswith(row["commit"]):
            print(f"table1.py: {c.record} ran at {row['commit']!r}, not the study's commit {study[:12]}",
                  file=sys.stderr)
            return 2
    epsilon = _beta_epsilon()
    records = [str(p.relative_to(epsilon.ROOT)) for p in epsilon.records()] + [str(c.record) for c in a]
    subprocess.run([sys.executable, "-m", "learner.report", *records, "--only",
                    "bandit-returns=raw,eps-decay-fraction=0.2,beta-epsilon=false", "--column-by",
                    "bandit-returns,runtime", "--seeds", "0-4", "--cost", "bench/results/cost-2cpu-cpu.json",
                    "--out", str(OUT)], cwd=ROOT, check=True)
    scores: dict[tuple[str, str], list[float]] = {}
    with open(ROOT / OUT / "runs.csv", newline="") as f:
        for row in csv.DictReader(f):
            scores.setdefault((row["env"], row["variant"]), []).append(float(row["score"]))
    from beta_dqn.reporting.stats import difference

    envs = sorted({env for env, _ in scores}, key=lambda e: (not e.startswith("MinAtar/"), e))
    say("\nβ-DQN serial against DQN serial, Holm's correction within each domain (p → adjusted p), each test a "
          "family of its own: Welch's over the environments it can test (— : both sides constant, left out of "
          "its family), the exact Mann–Whitney test over all (its least p at 5 a side is 0.008, 0.040 after Holm "
          "over 5). The table's calls are Welch's.")
    for domain in ("MinAtar", "MiniGrid"):
        tests = {e: difference(scores[e, SERIAL], scores[e, DQN]) for e in envs
                 if e.startswith("MinAtar/") == (domain == "MinAtar")}
        welch = holm({e: t["welch_p"] for e, t in tests.items() if t["welch_p"] is not None})
        whitney = holm({e: t["mann_whitney_p"] for e, t in tests.items()})
        for e, t in tests.items():
            w = "—" if t["welch_p"] is None else f"{_p(t['welch_p'])} → {_p(welch[e])}"
            say(f"  {e:24s} {t['difference']:+8.2f}  Welch {w:17s}  Mann–Whitney {_p(t['mann_whitney_p'])} → "
                  f"{_p(whitney[e])}")
    say("\nβ-DQN's Ray column (Table 1's, at 6ec5992, 7adcac3, 51b16f8 and 5f7eb23) minus the serial one (the "
          "study's commit): the runtime, with the commits and sittings that differ between the columns; each "
          "environment, 5 seeds a side, no correction:")
    for e in envs:
        t = difference(scores[e, RAY], scores[e, SERIAL])
        w = "—" if t["welch_p"] is None else _p(t["welch_p"])
        say(f"  {e:24s} {t['difference']:+8.2f}  Welch {w:7s}  Mann–Whitney {_p(t['mann_whitney_p'])}")
    by_evaluation()
    (ROOT / TEXT).write_text("\n".join(_lines).lstrip("\n") + "\n")
    return 0


def by_evaluation(reps: int = 2000) -> None:
    """P(β-DQN serial > DQN serial) at each evaluation, averaged over the five MinAtar games, with its 95%
    stratified bootstrap interval: does the serial column lose its lead as training goes on, as the Ray one did?"""
    from beta_dqn.reporting.stats import improvement

    curve = run.rates.curve
    beta = {(g, s): curve(ROOT / run.RECORDS / f"1a/{g.lower()}-beta-s{s}") for g in run.MINATAR for s in range(5)}
    dqn = {(g, s): curve(ROOT / f"results/table1-protocol/{g.lower()}-dqn-s{s}") for g in run.MINATAR
           for s in range(5)}
    say(f"\nP(β-DQN serial > DQN serial) on MinAtar at each evaluation, five games, seeds 0-4 ({reps} resamples):")
    for step in range(100_000, 1_000_001, 100_000):
        x = [[beta[g, s][step] for g in run.MINATAR] for s in range(5)]
        y = [[dqn[g, s][step] for g in run.MINATAR] for s in range(5)]
        p, low, high = improvement(x, y, reps=reps)
        say(f"  {step // 1000:5d}k  {p:.2f} [{low:.2f}, {high:.2f}]")


if __name__ == "__main__":
    OneLineParser.script("python results/minatar-departure/table1.py", __doc__).parse_args()  # --help; no options
    sys.exit(main())
