"""The suite on two pytest-xdist workers (the README's test command, `-n 2`): what tests/conftest.py does so two
workers can share this machine, run on a small suite of its own, in a subprocess, with that conftest:

- the tests marked `ray_default_ports` run one at a time across the workers (a file lock in the run's temp root);
- Ray's token file (`~/.ray/auth_token`) is written once, by the controller, before any worker starts, so no two
  workers' first clusters write it at once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Four marked tests, two on each worker (xdist's load scheduling sends 4 tests to 2 workers 2 and 2); each writes
# when it held the lock (CLOCK_MONOTONIC, one clock for the machine), on which worker, and whether Ray's token file
# was there when it began.
INNER = '''
import json, os, time
from pathlib import Path

import pytest


@pytest.mark.ray_default_ports
@pytest.mark.parametrize("i", range(4))
def test_marked(i):
    began = time.monotonic()
    token = (Path.home() / ".ray" / "auth_token").is_file()
    time.sleep(1.0)
    span = {"worker": os.environ["PYTEST_XDIST_WORKER"], "began": began, "ended": time.monotonic(), "token": token}
    (Path(os.environ["SPANS"]) / f"{i}.json").write_text(json.dumps(span))
'''


def test_marked_tests_take_turns_across_two_workers_and_rays_token_is_written_before_them(tmp_path):
    pytest.importorskip("ray._private.authentication.authentication_token_setup")  # what the controller writes with
    suite, home, spans = tmp_path / "suite", tmp_path / "home", tmp_path / "spans"
    for d in (suite, home, spans):
        d.mkdir()
    (suite / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (suite / "test_inner.py").write_text(INNER)
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    ray_default_ports: takes turns\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # (this suite's own worker)
    env.update(HOME=str(home), SPANS=str(spans))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                           "--basetemp", str(tmp_path / "basetemp")],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = sorted((json.loads(p.read_text()) for p in spans.glob("*.json")), key=lambda s: s["began"])
    assert len(runs) == 4
    assert {s["worker"] for s in runs} == {"gw0", "gw1"}  # the check means something only across two workers
    for first, then in zip(runs, runs[1:], strict=False):
        assert first["ended"] <= then["began"], f"two marked tests at once: {first} and {then}"
    assert all(s["token"] for s in runs), "a worker began before Ray's token file was written"
    assert (home / ".ray" / "auth_token").read_text().strip()
