"""The report's figures (PNG, PDF or SVG: `Look`): learning curves, β-DQN's policy selection and basic policies,
CliffWalk's state visitation; one plot, or a panel per column (method and variant) when there are many. Curves of
one plot differ in line style as well as colour, so identical ones stay visible; the panels of a heatmap share one
colour scale."""

from __future__ import annotations

import re
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actors.envs import env_spec
from beta_dqn.reporting.results import (
    ALGO_LABELS,
    RunData,
    column_label,
    columns_of,
    group_labels,
    metric,
    other_evaluations,
    steps_text,
)
from beta_dqn.reporting.stats import curve_ci
from learner.methods import METHODS

MANY = 6  # more columns than this: one small panel per column instead of one crowded plot
FORMATS = ("png", "pdf", "svg")
MAX_DPI = 1200
# the k-th curve of a plot: solid and widest, then dashed, dotted, dash-dotted, ..., each narrower than the first, so
# a curve drawn over an identical earlier one leaves it showing through its gaps
LINES = (("-", 2.4), ("--", 2.0), (":", 2.2), ("-.", 1.4), ((0, (5, 1, 1, 1, 1, 1)), 1.2), ((0, (1, 3)), 1.6))


@dataclass(frozen=True)
class Look:
    """How a report's figures are written: `format` (png, pdf or svg: matplotlib's own writers; pdf and svg
    are vector, dpi then sets only their raster parts' resolution) and `dpi` (png's pixels per inch: 100 makes
    a 6-inch figure 600 pixels wide). PDF and SVG carry no creation date, so the same runs give the same file."""

    format: str = "png"
    dpi: int = 100

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"--format {self.format!r}: give one of {', '.join(FORMATS)}")
        if isinstance(self.dpi, bool) or not isinstance(self.dpi, int) or not 10 <= self.dpi <= MAX_DPI:
            raise ValueError(f"--dpi {self.dpi!r}: give a whole number from 10 to {MAX_DPI}")

    def name(self, stem: str) -> str:
        return f"{stem}.{self.format}"

    def shown(self, alt: str, stem: str) -> str:
        """report.md's line for a figure: an image (png, svg), or a link to a PDF, which Markdown cannot show."""
        return f"[{alt} (PDF)]({self.name(stem)})" if self.format == "pdf" else f"![{alt}]({self.name(stem)})"


PNG = Look()  # the default: PNG at 100 dpi


def line(k: int) -> dict:
    """The k-th curve's line style and width (`LINES`, cycling)."""
    style, width = LINES[k % len(LINES)]
    return {"linestyle": style, "linewidth": width}


def _plt():
    import matplotlib  # only a report that draws pays its import (1.5 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # at reading size: a figure is shown at its width in a page (6 in at 100 dpi), so 10 pt text, 9 pt legends
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "legend.fontsize": 9,
                         "xtick.labelsize": 9, "ytick.labelsize": 9,
                         "svg.hashsalt": "beta-dqn"})  # an SVG's ids from its content alone (else a random salt)
    return plt


def _math(label: str) -> str:
    """A policy's label as a figure shows it: `argmax_{a: β>ε} Q` as mathtext (arg max with its subscript), not
    as raw markup."""
    def sub(m: re.Match) -> str:
        below = m.group(2).strip("{}").replace(" ", r"\ ")
        return rf"$\arg\{m.group(1)}_{{{below}}}$"

    return re.sub(r"arg(max|min)_(\{[^}]*\}|\w)", sub, label)


def _ylabel(key: str) -> str:
    return "success rate" if key.endswith("success_rate") else "return"


def _band(ax, steps, curves, label, k: int = 0):
    """Mean over seeds with a shaded 95% bootstrap interval (rliable's), at the steps every seed has; the plot's
    k-th curve (`line`)."""
    mean, low, high = curve_ci(curves)
    ax.plot(steps, mean, label=label, **line(k))
    if len(curves) > 1:  # one seed has no interval to draw
        ax.fill_between(steps, low, high, alpha=0.25)


def _common(runs: list[RunData], key: str) -> tuple[list[float], list[list[float]]]:
    steps = sorted(set.intersection(*[{e["env_steps"] for e in r.evals if key in e} for r in runs]))
    curves = [[next(e[key] for e in r.evals if e["env_steps"] == s) for s in steps] for r in runs]
    return steps, curves


def _panels(n: int, width: float, height: float, ncols: int = 4):
    """A figure of n small panels (ncols per row) and the list of their axes; the spare ones hidden."""
    plt = _plt()
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             sharex=True, sharey=True)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    from matplotlib.ticker import FuncFormatter

    for ax in flat[:n]:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: steps_text(x)))
    return fig, flat[:n]


def _title(ax, text: str) -> None:
    """A panel's title, wrapped to its width (a variant's label can be long)."""
    ax.set_title("\n".join(textwrap.wrap(text, 50)))


def _save(fig, path: Path, look: Look, tight: bool = True) -> None:
    """Write `fig` as `look` says (its format from `path`'s suffix, `look.name`'s)."""
    if tight:
        fig.tight_layout()
    undated = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(look.format)
    fig.savefig(path, dpi=look.dpi, format=look.format, metadata=undated)
    _plt().close(fig)


def performance_profile(taus, curves: dict, intervals: dict, base: str, path: Path, look: Look) -> None:
    """rliable's performance profile: per column the share of runs whose normalised score is above τ, with its
    95% interval, against τ."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for k, (label, curve) in enumerate(curves.items()):
        ax.plot(taus, curve, label=label, **line(k))
        ax.fill_between(taus, intervals[label][0], intervals[label][1], alpha=0.2)
    ax.set_xlabel(f"score / {base}'s mean (τ)")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.legend()
    _save(fig, path, look)


def learning_curves(runs: list[RunData], env: str, path: Path, look: Look) -> None:
    """Mean over seeds with a 95% interval per column: one plot, or one panel per column when there are many."""
    key = metric(env)
    columns = columns_of([r for r in runs if r.env == env])
    many = len(columns) > MANY
    fig, axes = _panels(len(columns), 4, 3) if many else _panels(1, 6, 4 + 0.25 * len(columns))
    for i, column in enumerate(columns):
        ax = axes[i if many else 0]
        group = [r for r in runs if r.env == env and r.column == column]
        steps, curves = _common(group, key)
        if steps:
            _band(ax, steps, curves, f"{column_label(column)} (n={len(group)})", 0 if many else i)
        if many:
            _title(ax, f"{column_label(column)} (n={len(group)})")
    for ax in axes:
        ax.set(xlabel="env steps", ylabel=_ylabel(key))
    if not many:
        axes[0].set_title(env)
        axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.18))
    _save(fig, path, look)


def _columns_with(runs: list[RunData], env: str, has) -> list[tuple[str, str]]:
    """The columns on `env` each of whose runs `has` what a figure draws."""
    return [c for c in columns_of(runs) if all(has(r) for r in runs if r.env == env and r.column == c)
            and any(r.env == env and r.column == c for r in runs)]


def _names(columns: list[tuple[str, str]]) -> str:
    return " and ".join(dict.fromkeys(ALGO_LABELS.get(algo, algo) for algo, _ in columns))


def basic_policies(runs: list[RunData], env: str, path: Path, look: Look) -> bool:
    """Each evaluation policy of a method that has more than its main one (β-DQN's three basic policies), per
    column (a panel each)."""
    key = metric(env)
    columns = _columns_with(runs, env, lambda r: r.evals and other_evaluations(r.algo)
                            and all(f"{p}_{key}" in r.evals[0] for p in other_evaluations(r.algo)))
    if not columns:
        return False
    fig, axes = _panels(len(columns), 5, 3.5, ncols=3)
    for ax, column in zip(axes, columns, strict=True):
        group = [r for r in runs if r.env == env and r.column == column]
        labels = METHODS[column[0]].acting.eval_labels
        others = ((f"{p}_{key}", l) for p, l in other_evaluations(column[0]).items())
        for k, (name, label) in enumerate(((key, labels["main"]), *others)):
            steps, curves = _common(group, name)
            _band(ax, steps, curves, _math(label), k)
        ax.set(xlabel="env steps", ylabel=_ylabel(key))
        _title(ax, f"{column_label(column)} (n={len(group)})")
    axes[0].legend()
    fig.suptitle(f"{env}: {_names(columns)}'s evaluation policies")
    _save(fig, path, look)
    return True


def selection_proportions(runs: list[RunData], env: str, path: Path, look: Look, points: int = 50) -> bool:
    """β-DQN's share of episodes per policy group in the bandit's window over training, per column (a panel
    each): each run's logged shares interpolated onto common env steps (within the span it logged), mean
    over seeds."""
    columns = _columns_with(runs, env, lambda r: group_labels(r.algo) and any(
        f"arms_{g}" in m for m in r.metrics for g in group_labels(r.algo)))
    if not columns:
        return False
    fig, axes = _panels(len(columns), 5, 3.5, ncols=3)
    for ax, column in zip(axes, columns, strict=True):
        group = [r for r in runs if r.env == env and r.column == column]
        total = max(r.config["total_steps"] for r in group)
        grid = np.linspace(0, total, points)
        for k, (key, label) in enumerate((f"arms_{g}", label) for g, label in group_labels(column[0]).items()):
            per_run = []
            for r in group:
                rows = [m for m in r.metrics if key in m]
                steps = np.array([m["env_steps"] for m in rows], dtype=np.float64)
                values = np.array([m[key] for m in rows])
                per_run.append(np.where((grid >= steps[0]) & (grid <= steps[-1]), np.interp(grid, steps, values),
                                        np.nan))
            with warnings.catch_warnings():  # steps no run logged around stay empty
                warnings.simplefilter("ignore", RuntimeWarning)
                ax.plot(grid, np.nanmean(per_run, axis=0), label=label, **line(k))
        ax.set(xlabel="env steps", ylabel="share of the window's episodes", ylim=(0, 1))
        _title(ax, f"{column_label(column)} (n={len(group)})")
    axes[0].legend()
    fig.suptitle(f"{env}: {_names(columns)}'s policy selection")
    _save(fig, path, look)
    return True


def _state_grid(env: str) -> tuple[int, int] | None:
    if ":" in env:  # a module:Id env is the user's: a report imports no module and makes no env of theirs
        return None
    try:
        return env_spec(env).state_grid
    except Exception:  # an environment this installation cannot build (the run came from elsewhere): no heatmap
        return None


def visitation(runs: list[RunData], out: Path, look: Look) -> tuple[str, str] | None:
    """Training visits per cell of a one-hot grid environment (`EnvSpec.state_grid`: CliffWalk), mean over
    seeds, a heatmap per column on one colour scale (log10(1 + visits), 0 to the most any column has), of the
    first such environment, in `out/visits_<env>.<format>`: (env, file stem), or None when no run counted visits."""
    grids = {r.env: _state_grid(r.env) for r in runs if r.summary.get("state_visits")}
    first = next((env for env, grid in grids.items() if grid), None)
    visited = [r for r in runs if r.env == first and r.summary.get("state_visits")]
    columns = columns_of(visited)
    if not columns:
        return None
    assert first is not None  # the environment of the runs in `visited`
    stem = f"visits_{first.replace('/', '-')}"
    heat = {}
    for column in columns:
        group = [r for r in visited if r.column == column]
        counts = np.mean([np.asarray(r.summary["state_visits"], dtype=np.float64) for r in group], axis=0)
        heat[column] = (np.log10(1 + counts.reshape(grids[first])), len(group))
    top = max(float(h.max()) for h, _ in heat.values()) or 1.0
    fig, axes = _panels(len(columns), 6, 2.6, ncols=2)
    for ax, column in zip(axes, columns, strict=True):
        values, n = heat[column]
        image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=top)
        ax.set(xticks=[], yticks=[])
        _title(ax, f"{column_label(column)}: n={n}")
    fig.set_layout_engine("constrained")  # (tight_layout leaves no room for a bar beside several panels)
    fig.colorbar(image, ax=axes, fraction=0.02, label="log10(1 + visits)")  # one scale for every panel
    _save(fig, out / look.name(stem), look, tight=False)
    return first, stem
