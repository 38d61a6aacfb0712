"""What β-DQN does late on MinAtar (PLAN.md beside this file, "What β-DQN does late on MinAtar"): per 100k env steps,
from the study's records' `metrics.jsonl`, the bandit's window by arm group (π_cov, π_cor with α > 0, π_cor(0)),
the bonus B (the window's per-arm bonus weighted by the arm shares), β's mean entropy on replay batches, the share
of next states whose argmax of Q the in-sample mask leaves out, and the mean Q(s, a) on replay batches beside
DQN's where the study's DQN runs log it (stage 1b's; Table 1's DQN column kept no `q_mean`; stage 2a's DQN runs,
at other rates, are not read here).

    python results/minatar-departure/late.py   # stage 1b's runs, a table per game; figures: late/ beside it

A record keeps its run's `metrics.jsonl` thinned: a merged line carries its last line's diagnostics (10-second means
over the updates of that line), so a bin's figure is the mean of such samples, not of every update. The window's
figures describe the bandit's last 1,000 episodes (at 1M: 113-147k env steps in Breakout, 192-525k in Asterix,
Seaquest and SpaceInvaders; Freeway's 384 episodes never fill it), so they lag and smooth across bins. Seeds are
averaged per bin (over those that have it); stage 1a's runs (1M, default rate) and stage 1b's (5M) are drawn apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # (the checkout's beta_dqn, run as a script from anywhere)
sys.path.insert(1, str(HERE))
import rates  # noqa: E402 - the study's games, beside this file

from beta_dqn.configuration.errors import OneLineParser  # noqa: E402

OUT = HERE / "late"
BIN = 100_000
GAMES = rates.GAMES
GROUPS = {"cov": "arms_cov", "cor": "arms_cor", "cor0": "arms_cor0"}  # the window's group shares, as logged
FIELDS = ("cov", "cor", "cor0", "bonus", "beta_entropy", "mask_drops_argmax", "q_mean")
METHODS = {"beta": "β-DQN", "dqn": "DQN"}  # a record's name's method, as the docs write it
# the paper's Table 1 at 5M (its MinAtar rows, the DQN and β-DQN columns)
PAPER_5M = {"Asterix": {"dqn": 22.78, "beta": 39.09}, "Breakout": {"dqn": 16.69, "beta": 29.04},
            "Freeway": {"dqn": 60.78, "beta": 62.56}, "Seaquest": {"dqn": 14.66, "beta": 33.23},
            "SpaceInvaders": {"dqn": 67.28, "beta": 98.28}}
RUNS_HEAD = ("| game, method, seed | score at 1M / best (at) / 5M | mean of the evaluations at 1.1–2M / 4.1–5M | "
             "paper's score at 5M | β entropy at 1M → 5M | mask drops argmax at 5M | Q at 2M → 5M |\n"
             "| --- | --- | --- | --- | --- | --- | --- |")


def lines(record: Path) -> list[dict]:
    (path,) = sorted(record.glob("runs/*/metrics.jsonl"))
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def per_bin(rows: list[dict]) -> dict[str, dict[int, float]]:
    """Each field's mean over the lines of each 100k bin (keyed by the bin's end, in env steps)."""
    sums: dict[str, dict[int, list[float]]] = {f: {} for f in FIELDS}
    for row in rows:
        end = -(-int(row["env_steps"]) // BIN) * BIN
        shares = row.get("arm_proportions")
        values = dict(row)
        if shares:
            values.update({group: row[logged] for group, logged in GROUPS.items()})
            values["bonus"] = float(np.dot(shares, row["arm_bonus"]))
        for f in FIELDS:
            if values.get(f) is not None:
                sums[f].setdefault(end, []).append(float(values[f]))
    return {f: {end: float(np.mean(v)) for end, v in bins.items()} for f, bins in sums.items()}


def gather(stage: str, game: str, method: str) -> dict[str, dict[int, float]]:
    """Seeds' per-bin figures averaged, over the stage's records of the game and method (default rate)."""
    runs = [per_bin(lines(r)) for r in sorted((HERE / stage).glob(f"{game.lower()}-{method}-s[0-9]"))
            if (r / "runs.csv").is_file()]
    out: dict[str, dict[int, float]] = {}
    for f in FIELDS:
        ends = sorted({e for run in runs for e in run[f]})
        out[f] = {e: float(np.mean([run[f][e] for run in runs if e in run[f]])) for e in ends}
    out["seeds"] = {0: float(len(runs))}
    out["seeds_q"] = {0: float(sum(bool(run["q_mean"]) for run in runs))}
    return out


def table(stage: str, game: str) -> str:
    beta, dqn = gather(stage, game, "beta"), gather(stage, game, "dqn")
    if not beta["seeds"][0]:
        return ""
    head = (f"{game}, stage {stage} ({beta['seeds'][0]:.0f} β-DQN seeds, {dqn['seeds_q'][0]:.0f} DQN seeds with Q "
            "logged)\n| env steps | π_cov | π_cor (α>0) | π_cor(0) | bonus B | β entropy | mask drops argmax | "
            "Q β-DQN | Q DQN |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    def cell(d, f, end):
        return f"{d[f][end]:.3f}" if end in d[f] else "—"

    rows = [f"| {end // 1000}k | " + " | ".join(cell(beta, f, end) for f in FIELDS) + f" | {cell(dqn, 'q_mean', end)} |"
            for end in sorted(beta["cov"])]
    return "\n".join([head, *rows])


def run_row(record: Path) -> str:
    """One 5M record as a row of docs/reproducing.md's late table: its game, method and seed; its evaluations at 1M,
    at their best (the earliest of ties) and at 5M; their means over (1M, 2M] and (4M, 5M]; the paper's score for
    the method at 5M; β's entropy in the bins ending at 1M and 5M; the mask's share at 5M; Q at 2M and 5M. A figure
    the record lacks (an evaluation, a window, a field DQN does not log) is "—"."""
    game, method, seed = record.name.rsplit("-", 2)
    game = next(g for g in GAMES if g.lower() == game)
    scores, bins = rates.curve(record), per_bin(lines(record))
    best = max(scores, key=lambda end: (scores[end], -end))

    def score(end: int) -> str:
        return f"{scores[end]:.2f}" if end in scores else "—"

    def mean(first: int, last: int) -> str:
        window = [v for end, v in scores.items() if first < end <= last]
        return f"{np.mean(window):.2f}" if window else "—"

    def at(field: str, *ends: int, digits: int = 2) -> str:
        return " → ".join(f"{bins[field][end]:.{digits}f}" if end in bins[field] else "—" for end in ends)

    return (f"| {game}, {METHODS[method]}, {seed.removeprefix('s')} | {score(1_000_000)} / {score(best)} "
            f"({best / 1e6:g}M) / {score(5_000_000)} | {mean(1_000_000, 2_000_000)} / "
            f"{mean(4_000_000, 5_000_000)} | {PAPER_5M[game][method]:.2f} | {at('beta_entropy', 1_000_000, 5_000_000)} "
            f"| {at('mask_drops_argmax', 5_000_000)} | {at('q_mean', 2_000_000, 5_000_000, digits=1)} |")


def range_row(record: Path) -> str:
    """One record's ranges over its bins from the one ending at 1M (Q: at 2M) to 5M, the table's endpoints
    included: the figures docs/reproducing.md's prose quotes; π_cor(0)'s largest share with its bin (the earliest
    of ties)."""
    bins = per_bin(lines(record))

    def span(field: str, first: int = 1_000_000) -> str:
        values = [v for end, v in bins[field].items() if end >= first]
        return f"{min(values):.3f}–{max(values):.3f}" if values else "—"

    top = max(((v, -end) for end, v in bins["cor0"].items() if end >= 1_000_000), default=None)
    peak = f"{top[0]:.2f} ({-top[1] / 1e6:g}M)" if top else "—"
    return (f"| {record.name} | {span('cov')} | {span('bonus')} | {span('cor')} | {peak} | {span('beta_entropy')} | "
            f"{span('mask_drops_argmax')} | {span('q_mean', 2_000_000)} |")


def records(stage: str) -> list[Path]:
    """The stage's records in the tree (committed or just landed), β-DQN's first, by game and seed."""
    order = {m: i for i, m in enumerate(METHODS)}
    found = [r for r in (HERE / stage).glob("*-s[0-9]") if (r / "runs.csv").is_file()]
    return sorted(found, key=lambda r: (order[r.name.rsplit("-", 2)[1]], r.name))


def runs_table(stage: str = "1b") -> str:
    """Every recorded 5M run of the stage, one row each (`run_row`)."""
    found = records(stage)
    return "\n".join([RUNS_HEAD, *map(run_row, found)]) if found else ""


def ranges_table(stage: str = "1b") -> str:
    """Each record's ranges from 1M (`range_row`), in `runs_table`'s order."""
    found = records(stage)
    head = ("| record | π_cov | bonus B | π_cor (α>0) | π_cor(0) at most (at) | β entropy | mask drops argmax "
            "| Q from 2M |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    return "\n".join([head, *map(range_row, found)]) if found else ""


def figure(stage: str, game: str) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    beta, dqn = gather(stage, game, "beta"), gather(stage, game, "dqn")
    if not beta["seeds"][0]:
        return None
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.2))
    x = lambda d, f: ([e / 1e6 for e in sorted(d[f])], [d[f][e] for e in sorted(d[f])])  # noqa: E731
    for f, label, style in (("cov", "π_cov", "-"), ("cor", "π_cor (α>0)", "--"), ("cor0", "π_cor(0)", ":")):
        axes[0].plot(*x(beta, f), style, label=label)
    axes[0].set(title="bandit window by group", ylim=(0, 1))
    axes[1].plot(*x(beta, "bonus"))
    axes[1].set(title="bonus B (share-weighted)")
    axes[2].plot(*x(beta, "beta_entropy"), label="β entropy")
    axes[2].plot(*x(beta, "mask_drops_argmax"), "--", label="mask drops argmax")
    axes[2].set(title="β on replay batches")
    axes[3].plot(*x(beta, "q_mean"), label="β-DQN")
    if dqn["q_mean"]:
        axes[3].plot(*x(dqn, "q_mean"), "--", label="DQN")
    axes[3].set(title="mean Q(s, a) on replay batches")
    for ax in axes:
        ax.set_xlabel("env steps (M)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"{game}: β-DQN late in training (stage {stage}, mean over seeds)", fontsize=10)
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{stage}_{game}.png"
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
    return path


def main() -> int:
    text = runs_table("1b")
    if text:
        print(f"Stage 1b's runs to 5M, one row each (docs/reproducing.md's late section)\n{text}\n")
        print(f"Their ranges over the bins from 1M to 5M (Q: from 2M)\n{ranges_table('1b')}\n")
    for stage in ("1a", "1b"):
        for game in GAMES:
            text = table(stage, game)
            if text:
                print(text + "\n")
                figure(stage, game)
    return 0


if __name__ == "__main__":
    OneLineParser.script("python results/minatar-departure/late.py", __doc__).parse_args()  # --help; no options
    sys.exit(main())
