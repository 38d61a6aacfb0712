"""The documentation site (mkdocs.yml, docs/): what it says still holds in the code, it builds with
`mkdocs build --strict`, and its pages load in a real browser.

The text checks need nothing but the source. The build needs the `docs` extra (`pip install -e ".[docs]"`);
the browser test also needs Chromium and its driver (Debian: `apt-get install chromium chromium-driver`).
Each skips with its reason where that is missing. Screenshots of three pages go to `$DOCS_SCREENSHOTS`
(default: the test's temporary directory).
"""

from __future__ import annotations

import ast
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TROUBLESHOOTING = DOCS / "troubleshooting.md"

# Every message docs/troubleshooting.md quotes, as (the file that says it, a stable fragment of it as the code
# writes it). A fragment is literal text between the message's variable parts; it must be in that file's string
# literals (adjacent literals joined, an f-string's fields as "{}") and on the page, and every message block of the
# page must hold one of them.
MESSAGES = [
    # flags and values
    ("beta_dqn/configuration/checks.py", "must be > 0, got"),
    ("beta_dqn/configuration/checks.py", "is not one of: "),
    ("beta_dqn/configuration/checks.py", "must be in (0, 1), got"),
    ("beta_dqn/configuration/checks.py", "must be in [0, 1], got"),
    ("beta_dqn/configuration/checks.py", "must be finite, got"),
    ("beta_dqn/configuration/checks.py", "must be within ±2^53 = "),
    ("beta_dqn/configuration/checks.py", "must be in [0, {}], got"),
    ("beta_dqn/configuration/checks.py", "must be >= 0, got"),
    ("beta_dqn/configuration/checks.py", "must be >= 1, got"),
    ("beta_dqn/configuration/checks.py", "must be >= 0, or -1 for automatic, got"),
    ("learner/methods/ez_greedy/flags.py", "must be > 1 (a Zeta distribution), got"),
    ("beta_dqn/configuration/checks.py", "is a β-DQN ablation; --algo is"),
    ("beta_dqn/configuration/checks.py", "must be >= --batch-size ("),
    ("beta_dqn/configuration/checks.py", "replay hold fewer than --chunk-steps ("),
    ("beta_dqn/configuration/cli.py", "expected true/false, got"),
    ("beta_dqn/configuration/cli.py", "an empty item in the list"),
    ("beta_dqn/configuration/cli.py", "appears twice in the list"),
    ("actors/envs/registry.py", "or module:Id for an id your module registers"),
    ("actors/envs/gymnasium_ids.py", "it must be importable from the working directory or the Python path"),
    ("actors/envs/registry.py", "is registered with Gymnasium but cannot be made here"),
    ("actors/envs/wrappers.py", "only Discrete is supported"),
    ("actors/envs/wrappers.py", "only Box and "),
    ("actors/envs/wrappers.py", "--wrappers minigrid.wrappers.ImgObsWrapper --pixels false (its image, codes "),
    ("actors/envs/__init__.py", "has a 0-d observation space {}; give a Box of at least one dimension"),
    ("actors/envs/checked.py", "where its observation space says {}"),
    ("actors/envs/checked.py", "a non-finite observation (nan or inf)"),
    ("actors/envs/checked.py", "not (observation, info): the Gymnasium API (0.26 and later) is needed"),
    ("beta_dqn/launcher/main.py", "; the run stopped (its last checkpoint, if it wrote one, is kept)"),
    ("beta_dqn/launcher/grid_plan.py", "search holds at most {}: split it into grids of their own"),
    ("beta_dqn/launcher/api.py", "the videos could not be made ({}); none of this"),
    ("beta_dqn/driver/signals.py", "the run goes on (an environment whose episode never ends, or an actor that "),
    ("beta_dqn/launcher/api.py", "is a symbolic link; give a directory of its own (a video is never written"),
    ("beta_dqn/driver/preflight.py", "cuda: no CUDA device is available here; use auto or cpu"),
    ("replay_service/plugins.py", "cannot register the {} of"),
    # run directories
    ("beta_dqn/driver/state.py", "it is finished: give another --out, or replace it with --overwrite true"),
    ("beta_dqn/driver/state.py", "continue it with --resume {}, or replace it with --overwrite true"),
    ("beta_dqn/driver/state.py", "it has no checkpoint to continue from: replace it with --overwrite true"),
    ("beta_dqn/driver/state.py", "already holds a run ("),
    ("beta_dqn/driver/state.py", "one process writes a run directory"),
    ("beta_dqn/driver/state.py", "is not a regular file of its own"),
    ("beta_dqn/driver/state.py", "exists and is not a directory"),
    ("beta_dqn/driver/state.py", "is a symbolic link: a run writes its own files there, never through a link"),
    ("beta_dqn/driver/state.py", "has other hard links: a run writes its own files there"),
    ("beta_dqn/driver/state.py", "holds a config.json that is not a run's of this program"),
    ("beta_dqn/driver/state.py", "is the file system's root: give a directory of the run's own"),
    ("beta_dqn/driver/state.py", "is this project's checkout"),
    ("beta_dqn/driver/state.py", "a run writes into a directory of its own; give a new or empty one"),
    ("beta_dqn/driver/state.py", "cannot write the run directory"),
    ("beta_dqn/files.py", "cannot write {} ({})"),
    ("beta_dqn/driver/state.py", "; the last checkpoint written is intact"),
    ("beta_dqn/driver/state.py", "; no checkpoint was written yet, so there is none to continue from"),
    ("beta_dqn/driver/state.py", "nothing was started, and that run is partly removed"),
    # resume
    ("beta_dqn/driver/resume.py", "no checkpoint.pt in"),
    ("beta_dqn/driver/state.py", "is not a checkpoint this program can read"),
    ("beta_dqn/configuration/compat.py", "written by another version of this program; this one reads "),
    ("beta_dqn/driver/state.py", "is damaged: its configuration's"),
    ("beta_dqn/driver/state.py", "holds non-finite values in"),
    ("beta_dqn/driver/resume.py", "is damaged or not this run's: "),
    ("beta_dqn/driver/resume.py", "the checkpoint holds the run's configuration: restore config.json or remove it"),
    ("beta_dqn/driver/resume.py", "a checkpoint copied from another run directory does not continue this one"),
    ("beta_dqn/driver/resume.py", "config.json was edited after the checkpoint"),
    ("beta_dqn/driver/resume.py", "differs from the run being resumed"),
    ("beta_dqn/driver/resume.py", "--overwrite true starts a new one there: give one of them"),
    ("beta_dqn/driver/resume.py", "and writes there; give one of them"),
    ("beta_dqn/driver/resume.py", "only the URLs of the same number of Redis servers may be given again"),
    ("beta_dqn/driver/resume.py", "this run cannot continue exactly: {}, so its data is gone"),
    ("replay_service/redis_backend.py", "its redis-local replay was not persisted (--replay-persist)"),
    ("beta_dqn/driver/outputs.py", "a resume keeps the metrics up to its checkpoint: repair or remove that line"),
    ("beta_dqn/driver/outputs.py", "last line was cut short (the run stopped while writing it)"),
    ("beta_dqn/driver/checkpoints.py", "networks or arm source ("),
    ("beta_dqn/driver/checkpoints.py", "the run cannot continue exactly without it"),
    ("beta_dqn/driver/state.py", "interrupted; "),
    ("beta_dqn/driver/state.py", "continue with --resume {} (from its last checkpoint)"),
    ("beta_dqn/driver/state.py", "it had written no checkpoint yet: start it again with --out"),
    ("beta_dqn/driver/state.py", "so it cannot be continued: start it again with --out"),
    ("beta_dqn/launcher/main.py", "interrupted before the run started"),
    # grids
    ("beta_dqn/configuration/checks.py", "expected seeds like 0-9, 0,3,7 or 0-2,5 (non-negative)"),
    ("beta_dqn/configuration/checks.py", "twice; give each seed once"),
    ("beta_dqn/configuration/checks.py", "names more than {} seeds"),
    ("beta_dqn/configuration/checks.py", "seeds must be in [0, "),
    ("beta_dqn/launcher/main.py", "a grid's seeds are --seeds; give one of them"),
    ("beta_dqn/launcher/main.py", "packs the seeds of a grid; give them with --seeds"),
    ("beta_dqn/launcher/grid_plan.py", "an empty list"),
    ("beta_dqn/launcher/grid_runs.py", "--actor-cpus {}) but the cluster has"),
    ("beta_dqn/launcher/grid_runs.py", "(--learner-cpus, --learner-gpus); the largest has"),
    ("beta_dqn/launcher/grid_plan.py", "two values in the lists name the same run"),
    ("beta_dqn/launcher/grid_plan.py", "is a list, but no method of the grid reads it"),
    ("beta_dqn/launcher/grid.py", "already holds a grid; continue it with --resume"),
    ("beta_dqn/launcher/grid.py", "holds a run: give the grid a directory of its own"),
    ("beta_dqn/launcher/grid.py", "already holds a run, and the new grid would write there"),
    ("beta_dqn/launcher/grid_task.py", "holds a run that is not this grid's: give the grid another --out"),
    ("beta_dqn/launcher/grid.py", "cannot make the grid directory"),
    ("beta_dqn/launcher/grid.py", "(a single run's directory is resumed without --seeds or lists)"),
    ("beta_dqn/launcher/grid.py", "is not a grid file this program can read"),
    ("beta_dqn/configuration/compat.py", "has grid format"),
    ("beta_dqn/launcher/grid.py", "differs from the grid being resumed"),
    ("beta_dqn/driver/pack.py", "a pack holds each seed once"),
    ("beta_dqn/driver/pack.py", "the seeds of a pack share one configuration"),
    ("beta_dqn/driver/pack.py", "the seeds of a pack continue together only from checkpoints at one update count"),
    ("beta_dqn/launcher/grid_runs.py", "grid interrupted; continue it with --resume"),
    ("beta_dqn/launcher/grid_runs.py", "starting it again"),
    ("beta_dqn/launcher/grid_runs.py", "grid: {} failed: {}"),
    # cluster
    ("beta_dqn/driver/cluster.py", "no Ray cluster answers at"),
    ("beta_dqn/driver/cluster.py", "is not HOST:PORT: its port {} is not a number from 1 to 65535"),
    ("beta_dqn/driver/cluster.py", "cannot join the Ray cluster at"),
    ("beta_dqn/driver/cluster.py", "token authentication is on (RAY_AUTH_MODE=token) and no token was found"),
    ("beta_dqn/driver/cluster.py", "the cluster refused this client's token"),
    ("beta_dqn/driver/cluster.py", "give this client the cluster's token: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH"),
    ("beta_dqn/driver/preflight.py", "CPUs, but the cluster has"),
    ("beta_dqn/driver/preflight.py", "actors wait until the cluster grows"),
    ("beta_dqn/launcher/grid_runs.py", "runs wait until the cluster grows"),
    ("beta_dqn/driver/preflight.py", "of memory, more than this machine's"),
    ("beta_dqn/driver/preflight.py", "with the learner's targets, gradients and Adam moments"),
    ("beta_dqn/driver/preflight.py", "actors each hold a copy of"),
    ("beta_dqn/launcher/main.py", "an actor process kept dying; the run stopped"),
    # replay and Redis
    ("replay_service/local_redis.py", "redis-server is not installed (apt-get install -y redis-server"),
    ("replay_service/local_redis.py", "did not start"),
    ("beta_dqn/configuration/checks.py", "is not a replay service; expected {}"),
    ("replay_service/redis_urls.py", "is not redis://[:password@]host:port[/db]"),
    ("replay_service/redis_urls.py", "the database must be a number"),
    ("replay_service/redis_urls.py", "unknown query argument"),
    ("replay_service/redis_urls.py", "is not a value redis-py takes for"),
    ("replay_service/local_redis.py", "redis-py cannot use it"),
    ("replay_service/local_redis.py", "no Redis answers at"),
    ("replay_service/redis_backend.py", "servers (one shard per URL)"),
    ("replay_service/redis_backend.py", "redis-local with a ray:// client: its servers would run on this machine"),
    ("replay_service/redis_urls.py", "cannot read the password file"),
    ("replay_service/redis_urls.py", "the password file {} {}"),
    ("replay_service/files.py", "is not a regular file ({})"),
    ("replay_service/files.py", "is not UTF-8 text (byte {})"),
    ("beta_dqn/files.py", "is a symbolic link: {} never writes through a link"),
    ("beta_dqn/files.py", "and no earlier output of {}: give a new or empty directory"),
    ("beta_dqn/files.py", "is in use by {}: one process writes {} there at a time"),
    ("beta_dqn/reporting/directory.py", "is a run's directory (it holds {}): a report is never written into one"),
    ("beta_dqn/reporting/directory.py", "; no report was written"),
    ("replay_service/redis_urls.py", "is empty"),
    ("replay_service/redis_backend.py", "Redis URL has a password that was not saved"),
    ("replay_service/local_redis.py", "a Redis server's directory and configuration are the run's own"),
    ("replay_service/redis_backend.py", "already names a run's replay on this Redis"),
    ("replay_service/redis_backend.py", "is claimed on this Redis by another run directory"),
    ("beta_dqn/configuration/checks.py", "true without --overwrite true: taking another run's --run-id replaces"),
    ("replay_service/redis_backend.py", "on this Redis is no longer this run's: its rings carry"),
    ("replay_service/redis_shard.py", "did not answer for"),
    ("replay_service/redis_shard.py", "refused a call"),
    ("replay_service/redis_shard.py", "is damaged"),
    ("replay_service/redis_shard.py", "batches in a row held no valid record"),
    # training
    ("beta_dqn/driver/checkpoints.py", "the loss became"),
    ("beta_dqn/driver/checkpoints.py", "the failing state is in checkpoint-nonfinite.pt"),
    # learner.report
    ("beta_dqn/reporting/report.py", "RUNS_DIRs need --out (where their one report goes)"),
    ("beta_dqn/reporting/report.py", "is not a directory"),
    ("beta_dqn/reporting/report.py", "no run (a directory with config.json) under"),
    ("beta_dqn/reporting/report.py", "no finished run (a directory with summary.json) under"),
    ("beta_dqn/reporting/report.py", "give 100 to {} resamples"),
    ("beta_dqn/reporting/report.py", "has one of those seeds"),
    ("beta_dqn/reporting/report.py", "measure it with bench/cost.py --algos"),
    ("beta_dqn/reporting/report.py", "give the JSON bench/cost.py wrote, e.g. "),
    ("beta_dqn/reporting/cost.py", "where a positive finite number belongs"),
    ("beta_dqn/reporting/report.py", "these runs have no DQN column, which the cost row is relative to "),
    ("beta_dqn/reporting/results.py", "only the seed, the algorithm and a grid's axes"),
    ("beta_dqn/reporting/results.py", "report each run once"),
    ("beta_dqn/reporting/results.py", "is not a flag that can split columns"),
    ("beta_dqn/reporting/results.py", "none of the runs' methods reads it"),
    ("beta_dqn/reporting/results.py", "no run that reads it has that value (they have "),
    ("beta_dqn/reporting/results.py", "in its summary.json"),
    ("beta_dqn/reporting/report.py", "is a report's record, which this report would write into"),
    ("beta_dqn/reporting/report.py", "would put this report's record (runs.csv) at or above the runs of"),
    ("beta_dqn/reporting/records.py", "holds both a report's record (runs.csv, study.json) and a run"),
    ("beta_dqn/reporting/records.py", "is a link or not a directory: a report writes its copies of the runs"),
    ("beta_dqn/reporting/records.py", "exists and is not an earlier report's copies of its runs"),
    ("beta_dqn/reporting/records.py", "is a link or a run's own directory, not a report's copy"),
    ("beta_dqn/reporting/records.py", "is a report's directory whose"),
    ("beta_dqn/reporting/records.py", "study.json is missing (it holds each run's command)"),
    ("beta_dqn/reporting/records.py", "runs.csv, study.json or report.json cannot be read"),
    ("beta_dqn/reporting/records.py", "is not runs.csv's"),
    ("beta_dqn/reporting/records.py", "is not python -m learner.main"),  # "has a command that " + _parsed's reason
    ("beta_dqn/reporting/records.py", "runs.csv names an environment this code does not know"),
    ("beta_dqn/reporting/results.py", "the report leaves this run out"),
    # bench
    ("bench/cost.py", "not among"),
    ("bench/packed.py", "--ks: expected comma-separated positive integers"),
    ("bench/throughput.py", "--actors: expected comma-separated positive integers"),
    ("bench/throughput.py", "--repeats: must be >= 1"),
    ("bench/throughput.py", "--baseline: no bench/throughput.py in"),
]


@functools.cache
def code_strings(relative: str) -> str:
    """The text of every string literal in a source file, one per line: adjacent literals joined (as Python
    joins them) and an f-string's fields written "{}", so a message split over source lines reads whole."""
    tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append("".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return "\n".join(found)


def said_by_code(relative: str, fragment: str) -> bool:
    return fragment in code_strings(relative)


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def message_blocks(text: str) -> list[str]:
    """The ```text blocks of a page: on the troubleshooting page, each is one message as a user sees it."""
    return re.findall(r"^```text\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def on_page(fragment: str, text: str) -> bool:
    """A fragment's text on the page, where the code's "{}" fields show as the page's <…> or example values."""
    pattern = r".*?".join(re.escape(piece) for piece in fragment.split("{}"))
    return re.search(pattern, text) is not None


@pytest.mark.parametrize(("source", "fragment"), MESSAGES, ids=[f"{s}:{f[:40]}" for s, f in MESSAGES])
def test_documented_message_is_still_in_the_code(source, fragment):
    assert (ROOT / source).is_file(), f"{source} is gone: docs/troubleshooting.md quotes its messages"
    assert said_by_code(source, fragment), (
        f"docs/troubleshooting.md quotes a message of {source} that its code no longer says: {fragment!r}; "
        "update the page (and MESSAGES in tests/test_docs.py) to the message's new text")
    assert on_page(fragment, "\n".join(message_blocks(page("troubleshooting.md")))), (
        f"{fragment!r} is in MESSAGES but in no message block of docs/troubleshooting.md")


def test_every_documented_message_is_checked():
    blocks = message_blocks(page("troubleshooting.md"))
    assert len(blocks) >= 100, "the troubleshooting page lost its messages"
    unchecked = [b for b in blocks if not any(on_page(fragment, b) for _, fragment in MESSAGES)]
    assert not unchecked, f"message blocks with no fragment in MESSAGES (nothing checks them): {unchecked[:3]}"


def test_the_message_check_can_fail():
    """The checker itself: a message the code does not say is not found, nor one of another file."""
    assert not said_by_code("beta_dqn/configuration/checks.py", "must be > 0, but was")
    # beta_dqn/driver/state.py's
    assert not said_by_code("beta_dqn/configuration/checks.py", "one process writes a run directory")
    assert said_by_code("beta_dqn/driver/state.py", "one process writes a run directory")
    # a message whose literal pieces span source lines is read whole
    assert said_by_code("replay_service/redis_backend.py",
                        "out of the cluster's actors' reach; run the job on the cluster (ray exec, ray job submit)")
    assert not on_page("is in use by {} — elsewhere", "x is in use by y: one process")


CODE_REF = re.compile(r"`((?:actors|beta_dqn|learner|meta_controller|replay_service|bench|tests)/[\w/]+\.py): "
                      r"([^`]+)`")


def defined_names(relative: str) -> set[str]:
    """Top-level functions, classes and assigned names of a module, and `Class.member` for each class member."""
    tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(f"{node.name}.{member.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


@pytest.mark.parametrize("name", ["method.md", "architecture.md", "grids.md"])
def test_code_the_pages_name_exists(name):
    """Every `path.py: name` on the paper-to-code map (and the architecture) names a file and what it defines."""
    refs = CODE_REF.findall(page(name))
    assert refs or name != "method.md", "the paper-to-code map names no code"
    missing = []
    for path, names in refs:
        if not (ROOT / path).is_file():
            missing.append(path)
            continue
        defined = defined_names(path)
        missing += [f"{path}: {n.strip()}" for n in names.split(",") if n.strip() not in defined]
    assert not missing, f"docs/{name} names code that is not there: {missing}"


PATH_REF = re.compile(r"`((?:actors|beta_dqn|learner|meta_controller|replay_service|bench|tests|deploy|results)/"
                      r"[\w./=-]*)`")


def test_paths_the_pages_name_exist():
    missing = []
    for path in sorted(DOCS.glob("*.md")):
        for ref in PATH_REF.findall(path.read_text(encoding="utf-8")):
            if not (ROOT / ref.rstrip("/")).exists():
                missing.append(f"{path.name}: {ref}")
    for ref in re.findall(r"`([\w-]+\.json)`", page("benchmarks.md")):
        if ref.startswith(("throughput-", "actors-", "breakdown-", "cost-", "replay-", "packed-")):
            if not (ROOT / "bench" / "results" / ref).is_file():
                missing.append(f"benchmarks.md: bench/results/{ref}")
    assert not missing, f"the pages name paths that are not in the tree: {missing}"


def test_benchmarks_page_lists_every_committed_result_under_its_date_and_machine():
    """docs/benchmarks.md's table names every file (or folder) in bench/results/, and its list by date puts each
    under the date and machine its JSON records."""
    text, results = page("benchmarks.md"), ROOT / "bench" / "results"
    table = "\n".join(line for line in text.splitlines() if line.startswith("| `bench/"))
    bullets = re.findall(r"^- (\d{4}-\d\d-\d\d), ([^:]+): (.*?)(?=^- |^$)", text, re.M | re.S)
    listed: dict[str, tuple[str, str]] = {}
    for date, machine, names in bullets:
        for name in re.findall(r"`([\w./-]+(?:\.json|/))`", names):
            files = sorted((results / name).glob("*.json")) if name.endswith("/") else [results / name]
            for f in files:
                assert f.is_file(), f"benchmarks.md lists {name}, which bench/results/ does not have"
                assert str(f.relative_to(results)) not in listed, f"benchmarks.md lists {name} twice"
                listed[str(f.relative_to(results))] = (date, machine)
    kinds = {"2-core AMD EPYC": "AMD EPYC", "2-core Intel Xeon": "Intel(R) Xeon(R) Processor",
             "the H200": "NVIDIA H200"}
    wrong = []
    for f in sorted(results.rglob("*.json")):
        name, recorded = str(f.relative_to(results)), json.loads(f.read_text())["machine"]
        if f"`{name.split('/')[0]}{'/' if '/' in name else ''}`" not in table:
            wrong.append(f"{name}: not in the table")
        date, machine = listed.get(name, ("", ""))
        if (date, kinds.get(machine)) != (recorded["date"], recorded["gpu"] or recorded["cpu"]):
            wrong.append(f"{name}: listed under {date or 'no date'}, {machine or 'no machine'}; its JSON: "
                         f"{recorded['date']}, {recorded['gpu'] or recorded['cpu']}")
    assert not wrong, wrong


def config_flags() -> list[str]:
    """Every flag of `python -m learner.main`, read from the source (no import: no numpy or torch needed)."""
    flags = []
    sources = [ROOT / "beta_dqn" / "configuration" / "fields.py",
               *sorted((ROOT / "learner" / "methods").glob("*/flags.py")), ROOT / "replay_service" / "redis_backend.py"]
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in ("Config", "Flags", "RedisFlags"):
                flags += ["--" + s.target.id.replace("_", "-") for s in node.body
                          if isinstance(s, ast.AnnAssign) and s.target.id not in ("methods", "replays")]  # (not flags)
    return flags


def test_every_flag_is_documented():
    flags = config_flags()
    assert len(flags) > 50 and "--bandit-returns" in flags
    text = page("running.md")
    undocumented = [f for f in flags if f"`{f}`" not in text]
    assert not undocumented, f"flags of learner.main missing from docs/running.md: {undocumented}"


def test_the_readme_is_short_and_starts_with_its_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    blocks = re.findall(r"```bash\n(.*?)\n```", text, re.S)
    assert blocks[0].startswith("python3 -m venv .venv && . .venv/bin/activate && bash deploy/install.sh && ")
    assert "beta-dqn-train" in blocks[0]  # the console script (`python -m learner.main` is the same)
    assert blocks[1] == ("python3 -m venv .venv && . .venv/bin/activate && bash deploy/install.sh --test && "
                         "python -m pytest -q -n 2 --durations=15")
    assert blocks[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # CI runs the README's test command
    for target in re.findall(r"\]\(([^)#]+)", text):  # its links lead somewhere
        assert (ROOT / target).exists(), target


# a preregistered plan stands as it was committed before its first run (its tracker number included)
PLANS_AS_COMMITTED = {ROOT / "results" / "minatar-departure" / "PLAN.md"}


def test_no_tracker_numbers_in_the_site():
    pages = [*DOCS.glob("*.md"), *(ROOT / "results").rglob("*.md"), ROOT / "README.md", ROOT / "RESULTS.md"]
    pages = [p for p in pages if p not in PLANS_AS_COMMITTED]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages
             for m in re.finditer(r"(?i)\bissues? #?\d+|(?<![\w/])#\d+\b", p.read_text(encoding="utf-8"))]
    assert not found, f"internal tracker numbers in user-facing pages: {found}"


# ---- the build and the browser ----

def _mkdocs_or_skip():
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (pip install -e '.[docs]')")


def build_site(site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


def test_mkdocs_build_strict(tmp_path):
    _mkdocs_or_skip()
    done = build_site(tmp_path / "site")
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    for name in ("index.html", "reproducing/index.html", "api/index.html", "troubleshooting/index.html"):
        assert (tmp_path / "site" / name).is_file(), name
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for contract in ("Algorithm", "Acting", "ArmSource", "Backend", "ReplaySampler"):
        assert f"id=\"{contract}\"" in api or f"{contract}</code>" in api, f"no API entry for {contract}"
    assert "next_batch" in api and "exchange" in api  # members rendered from the docstrings


def nav_pages() -> list[tuple[str, str]]:
    """(title, URL path) of every page in mkdocs.yml's nav, as the built site serves them."""
    import yaml

    class Loader(yaml.SafeLoader):  # mkdocs.yml may hold !ENV and Python tags: read the nav only
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)["nav"]
    pages = []
    for entry in nav:
        ((title, target),) = entry.items()
        pages.append((title, "/" if target == "index.md" else "/" + target.removesuffix(".md") + "/"))
    return pages


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served_site(tmp_path):
    _mkdocs_or_skip()
    site = tmp_path / "site"
    done = build_site(site)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-3000:]}"
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # a free port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_site_in_a_browser(served_site, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e "
                                                                  "'.[docs]')")
    found = _chromium()
    if found is None:
        pytest.skip("no Chromium and chromedriver here (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    base = served_site
    shots = Path(os.environ.get("DOCS_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    pages = nav_pages()
    assert len(pages) >= 13
    for title, path in pages:  # every page of the nav is served
        with urllib.request.urlopen(base + path, timeout=10) as response:
            assert response.status == 200, f"{title}: {path} answered {response.status}"

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1500"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        browser.set_page_load_timeout(60)
        for title, path in pages:  # each page renders with its title and content
            browser.get(base + path)
            heading = browser.find_element(By.CSS_SELECTOR, "article h1").text
            assert heading, f"{title} ({path}): no heading"
            assert "404" not in browser.title, f"{title} ({path}): {browser.title}"

        browser.get(base + "/reproducing/")
        images = _wait_for_images(browser)
        assert len(images) >= 10, f"the reproducing page shows {len(images)} figures"
        broken = [src for src, width in images if width == 0]
        assert not broken, f"figures that did not load: {broken}"

        browser.get(base + "/")  # a click on a nav link navigates
        link = browser.find_element(By.CSS_SELECTOR, "nav.md-nav a.md-nav__link[href*='architecture']")
        link.click()
        _wait(lambda: browser.current_url.rstrip("/").endswith("/architecture"), "the click on Architecture")
        assert browser.find_element(By.CSS_SELECTOR, "article h1").text == "Architecture"

        for name, path in (("home", "/"), ("reproducing", "/reproducing/"), ("architecture", "/architecture/")):
            browser.get(base + path)
            _wait_for_images(browser)
            assert browser.save_screenshot(str(shots / f"{name}.png")), name
        browser.get(base + "/reproducing/#table-1-at-laptop-scale-on-one-commit")  # and a figure of it, in view
        figure = browser.find_element(By.CSS_SELECTOR, "article img")
        browser.execute_script("arguments[0].scrollIntoView();", figure)
        time.sleep(0.5)  # the header's title changes as the page scrolls: let it settle
        assert browser.save_screenshot(str(shots / "reproducing-figure.png"))
    finally:
        browser.quit()
    for name in ("home", "reproducing", "architecture"):
        assert (shots / f"{name}.png").stat().st_size > 10_000, name


def _wait(condition, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _wait_for_images(browser) -> list[tuple[str, int]]:
    """Every <img> of the page once the browser has finished loading it: (src, naturalWidth)."""
    script = "return Array.from(document.images).map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth]);"
    _wait(lambda: all(done for _, done, _ in browser.execute_script(script)), "the page's images")
    return [(src, width) for src, _, width in browser.execute_script(script)]


def test_the_frames_the_docs_show_are_what_the_environments_draw_now(monkeypatch):
    """docs/img/envs/: one frame of each of the paper's environments, each the pixels `docs/frames.py` draws today
    (a change to an environment's drawing that is not redrawn fails here), each shown on docs/running.md."""
    import numpy as np
    from PIL import Image

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    monkeypatch.syspath_prepend(str(DOCS))
    import frames

    running = (DOCS / "running.md").read_text()
    shown = sorted(p.name for p in (DOCS / "img" / "envs").iterdir())
    assert shown == sorted(frames.file_name(env) for env in frames.known_names())
    for env in frames.known_names():
        drawn = np.asarray(Image.open(DOCS / "img" / "envs" / frames.file_name(env)).convert("RGB"))
        assert np.array_equal(drawn, frames.frame(env)), f"{env}: run python docs/frames.py"
        assert f"(img/envs/{frames.file_name(env)})" in running, env
