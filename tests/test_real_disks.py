"""A disk that really fills and a file system that is really read-only (no monkeypatching): a small tmpfs in
a mount namespace of the test's own (`unshare -m`, root only; skipped elsewhere). Each ends in one line, the
last good checkpoint intact."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ["--env", "CliffWalk", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "2", "--learning-starts",
       "400", "--eval-every", "600", "--eval-episodes", "2", "--checkpoint-every", "600", "--wandb", "disabled",
       "--progress", "false", "--json", "true"]

CHECK = """
import json, os, sys, torch
out = sys.argv[1]
ckpt = torch.load(os.path.join(out, "checkpoint.pt"), weights_only=True)
print(json.dumps({"env_steps": ckpt["counters"]["env_steps"], "files": sorted(os.listdir(out))}))
"""


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_mount(), reason="needs root and mount namespaces (unshare -m)")


def _in_namespace(script: str, mount: Path) -> subprocess.CompletedProcess:
    """`script` (sh) in a mount namespace where `mount` is a small tmpfs; gone with the namespace."""
    mount.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PY": sys.executable})


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.strip().splitlines() if line.startswith("python -m learner.main")]


def test_a_disk_that_fills_at_the_second_checkpoint_is_one_line_and_keeps_the_first(tmp_path):
    """480 kB: the first checkpoint fits (checkpoint.pt ~260 kB, its replay snapshot ~17 kB, best.pt ~60 kB), the
    second's temp file does not."""
    disk = tmp_path / "disk"
    out = disk / "run"
    args = " ".join([*RUN, "--total-steps", "1800", "--out", str(out)])
    done = _in_namespace(f'mount -t tmpfs -o size=480k tmpfs {disk} && "$PY" -m learner.main {args} >/dev/null; '
                         f'echo "status=$?" >&2; "$PY" -c \'{CHECK}\' {out}; '
                         f'"$PY" -m learner.main --resume {out} --json true >/dev/null; echo "resume=$?" >&2', disk)
    err = done.stderr
    assert "status=1" in err and "Traceback" not in err, err
    first = _lines(err)[0]
    assert first.startswith(f"python -m learner.main: cannot write {out / 'checkpoint.pt'} (")
    assert first.endswith("the last checkpoint written is intact")
    kept = json.loads(done.stdout.strip().splitlines()[-1])
    assert kept["env_steps"] == 600 and "checkpoint.pt.tmp" not in kept["files"], kept
    assert "resume=1" in err and len(_lines(err)) == 2  # the disk is still full: the resume says so, in one line


def test_a_read_only_file_system_is_one_line(tmp_path):
    disk = tmp_path / "disk"
    out = disk / "run"
    args = " ".join([*RUN, "--total-steps", "600", "--out", str(out)])
    done = _in_namespace(f'mount -t tmpfs -o ro,size=64k tmpfs {disk} && "$PY" -m learner.main {args}; '
                         'echo "status=$?" >&2', disk)
    assert "status=2" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert _lines(done.stderr) == [f"python -m learner.main: error: --out: cannot write the run directory {out} "
                                   "(Read-only file system)"]


def test_a_run_on_a_file_system_made_read_only_is_one_line_and_unchanged_on_resume(tmp_path):
    """A finished run's directory, then the file system remounted read-only: --resume cannot take the lock and
    says so; every file as it was."""
    disk = tmp_path / "disk"
    out = disk / "run"
    args = " ".join([*RUN, "--total-steps", "1200", "--out", str(out)])
    done = _in_namespace(f'mount -t tmpfs -o size=2m tmpfs {disk} && "$PY" -m learner.main {args} >/dev/null && '
                         f'rm {out}/summary.json && sum_before=$(cat {out}/* 2>/dev/null | md5sum) && '
                         f'mount -o remount,ro {disk} && "$PY" -m learner.main --resume {out}; echo "status=$?" >&2; '
                         f'[ "$(cat {out}/* 2>/dev/null | md5sum)" = "$sum_before" ] && echo same >&2', disk)
    assert "status=2" in done.stderr and "same" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert _lines(done.stderr) == [f"python -m learner.main: error: --out: cannot write the run directory {out} "
                                   "(Read-only file system)"]
