"""The benches that need no cluster run end to end on tiny arguments (CliffWalk, a few hundred steps), so that a
change to the code they measure cannot leave them broken until someone next measures: each exits 0, prints its table
and writes its JSON with the machine, the command and a positive figure for every configuration it measured. The
figures themselves are not checked here (a bench's numbers belong to a quiet machine: docs/benchmarks.md)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson", "beta_dqn")


def bench(script: str, out: Path, *args: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, f"bench/{script}", "--env", "CliffWalk", *args, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["machine"]["cpu"] and record["machine"]["torch"] and f"bench/{script}" in record["command"]
    return record, proc.stdout


def positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_cost_measures_all_six_methods_against_dqn(tmp_path):
    record, stdout = bench("cost.py", tmp_path / "cost.json", "--steps", "200", "--learning-starts", "100",
                           "--repeats", "1")
    assert set(record["cost_percent"]) == set(METHODS) and record["cost_percent"]["dqn"] == 100.0
    assert all(positive(record["cost_percent"][m]) and positive(record["env_steps_per_s"][m]) for m in METHODS)
    assert sorted(run["algo"] for run in record["runs"]) == sorted(METHODS)
    assert all(f"\n| {m} |" in stdout for m in METHODS)


def test_breakdown_times_the_updates_and_the_actors(tmp_path):
    record, stdout = bench("breakdown.py", tmp_path / "breakdown.json", "--updates", "5", "--actor-seconds", "0.2",
                           "--device", "cpu")
    assert {row["algo"] for row in record["learner"]} >= {"dqn", "beta_dqn"}
    assert all(positive(row["update_ms"]) for row in record["learner"])
    assert record["actor"] and all(positive(row["env_steps_per_s"]) for row in record["actor"])
    assert "\ndqn |" in stdout and "\nbeta_dqn |" in stdout


def test_packed_times_the_learner_alone_at_each_pack_size(tmp_path):
    record, stdout = bench("packed.py", tmp_path / "packed.json", "--ks", "1,2", "--learner-seconds", "0.2",
                           "--warmup", "1", "--skip-end-to-end", "--device", "cpu")
    assert record["algo"] == "beta_dqn" and record["end_to_end"] == []
    assert [row["k"] for row in record["learner"]] == [1, 2] and "learner alone" in stdout
    assert all(positive(row["packed_seed_updates_per_s"]) and positive(row["solo_seed_updates_per_s"])
               for row in record["learner"])


def test_a_results_command_names_paths_under_the_checkout_relative_to_it(tmp_path):
    from bench.machine import write_json

    out = tmp_path / "r.json"
    write_json(out, {"command": f"python bench/cost.py --out {ROOT}/bench/results/x.json --repo {tmp_path}"})
    written = json.loads(out.read_text())["command"]
    assert written == f"python bench/cost.py --out bench/results/x.json --repo {tmp_path}"


def test_no_committed_result_names_a_machines_folder():
    """Every command in bench/results/ names its paths relative to the checkout or under /tmp (a throwaway folder),
    never a machine's home or checkout."""
    named = {str(f.relative_to(ROOT)): json.loads(f.read_text()).get("command", "")
             for f in sorted((ROOT / "bench" / "results").rglob("*.json"))}
    bad = {f: c for f, c in named.items() if re.search(r"(?<![\w.])/(?!tmp/)[\w.-]+/", c)}
    assert not bad, bad
