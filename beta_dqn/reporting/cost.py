"""The cost row's measured input: `bench/cost.py`'s JSON (`learner.report --cost`), read and checked, and where it
was measured, in words; `markdown_text` makes any text from a file safe inside the report's Markdown."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from beta_dqn.files import Unreadable, read_bounded
from beta_dqn.reporting.results import ReportError

MAX_COST_BYTES = 1 << 20  # bench/cost.py's JSON is a few kB
COST_RANGE = (0.01, 1e6)  # a method's cost in percent of DQN's: what a measurement can sanely say


def markdown_text(value, at_most: int = 120) -> str:
    """Text from a file, safe inside a Markdown paragraph or table cell: one line (control characters and line
    breaks as spaces), Markdown's own characters escaped, at most `at_most` characters."""
    text = "".join(" " if not c.isprintable() else c for c in str(value))
    text = " ".join(text.split())
    if len(text) > at_most:
        text = text[:at_most - 1] + "…"
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in text)


def measured_cost(path: Path) -> tuple[dict[str, float], dict]:
    """`bench/cost.py`'s measured cost per method from the JSON it wrote (seconds per env step relative to
    DQN's, as a fraction), and where it was measured (its environment, device, runtime, actors, CPU, GPU and
    commit, as far as the file says); a ReportError naming the bad value for anything else."""
    def refuse(what: str) -> ReportError:
        return ReportError(f"--cost {path}: {what}; give the JSON bench/cost.py wrote, e.g. "
                           "bench/results/cost-2cpu-cpu.json")
    try:
        result = json.loads(read_bounded(path, MAX_COST_BYTES))
    except Unreadable as e:
        raise refuse("no such file" if e.cause == os.strerror(errno.ENOENT) else str(e)) from None
    except (ValueError, RecursionError) as e:
        raise refuse(f"not JSON ({type(e).__name__})") from None
    if not isinstance(result, dict) or "bench/cost.py" not in str(result.get("command", "")) or \
            not isinstance(result.get("cost_percent"), dict):
        raise refuse("not a bench/cost.py result (its command and cost_percent)")
    percent = {}
    for algo, value in result["cost_percent"].items():
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not COST_RANGE[0] <= number <= COST_RANGE[1]:  # (NaN too; an int too large too)
            shown = repr(value) if len(repr(value)) <= 24 else repr(value)[:20] + "…"
            raise refuse(f"cost_percent[{algo[:40]!r}] is {shown}, where a positive finite number "
                         f"belongs (a percentage of DQN's cost, {COST_RANGE[0]:g} to {COST_RANGE[1]:,.0f})")
        percent[algo] = float(number)
    if "dqn" not in percent:
        raise refuse("its cost_percent has no dqn, which every cost is relative to")
    cost = {algo: value / percent["dqn"] for algo, value in percent.items()}
    machine = result.get("machine")
    if not isinstance(machine, dict):
        machine = {}
    source = {"file": path.name, "env": result.get("env"), "device": result.get("device"),
              "runtime": result.get("runtime"), "actors": result.get("actors"), "cpu": machine.get("cpu"),
              "gpu": machine.get("gpu"), "commit": machine.get("commit")}
    return cost, {k: v for k, v in source.items() if v is not None}


def cost_phrase(source: dict) -> str:
    """Where a measured cost came from, in words: `cost-2cpu-cpu.json: MinAtar/Breakout, cpu, serial runtime,
    1 actor, AMD EPYC, commit c300f13`."""
    parts = [source.get("env"), source.get("device"),
             source.get("runtime") and f"{source['runtime']} runtime",
             source.get("actors") is not None and f"{source['actors']} actor{'' if source['actors'] == 1 else 's'}",
             source.get("cpu"), source.get("gpu"), source.get("commit") and f"commit {source['commit']}"]
    return markdown_text(f"{source['file']}: {', '.join(str(p) for p in parts if p)}", 400)
