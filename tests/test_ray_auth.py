"""Joining a Ray cluster that uses token authentication: no token, or a wrong one, is one line; the right one runs."""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.test_cli import RAY_LOG_LINE


def _client_env(home, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), **extra)
    return env


def _run(args, env, timeout=180):
    return subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--wandb", "disabled", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def _one_line(proc) -> str:
    lines = [line for line in proc.stderr.strip().splitlines() if not RAY_LOG_LINE.match(line)]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_token_mode_without_a_token_is_one_line_before_anything_is_written(tmp_path):
    """RAY_AUTH_MODE=token and no token anywhere: Ray refuses before it connects (any listening port will do)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        (tmp_path / "home").mkdir()
        out = tmp_path / "run"
        proc = _run(["--address", f"127.0.0.1:{port}", "--out", str(out)],
                    _client_env(tmp_path / "home", RAY_AUTH_MODE="token"), timeout=120)
    line = _one_line(proc)
    assert f"--address: cannot join the Ray cluster at '127.0.0.1:{port}'" in line
    assert "RAY_AUTH_MODE=token" in line and "no token was found" in line and "RAY_AUTH_TOKEN_PATH" in line
    assert not out.exists()


@pytest.fixture
def token_cluster():
    """A head node of its own (own temp dir, own port) with token authentication; its token in its HOME."""
    if shutil.which("ray") is None and not os.path.exists(os.path.join(os.path.dirname(sys.executable), "ray")):
        pytest.skip("the ray command is not installed")
    ray_cmd = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    root = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths must fit 107 characters
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".ray"))
    token_path = os.path.join(home, ".ray", "auth_token")
    with open(os.open(token_path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as token:  # `ray start` needs one
        token.write(secrets.token_hex(32))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = _client_env(home, RAY_AUTH_MODE="token")
    head = subprocess.Popen([ray_cmd, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", f"--temp-dir={root}/ray", "--node-ip-address=127.0.0.1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _answers(port):
            assert head.poll() is None and time.monotonic() < deadline, "the Ray head did not start"
            time.sleep(0.5)
        yield {"address": f"127.0.0.1:{port}", "token_path": token_path}
    finally:
        head.terminate()  # `ray start --block` drains and stops what it started (a signal to all at once hangs)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(root, ignore_errors=True)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.integration
@pytest.mark.ray_default_ports
def test_a_token_cluster_refuses_a_client_without_its_token_in_one_line_and_runs_with_it(token_cluster, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "run"
    address = token_cluster["address"]
    # no token on this side (the usual mistake: RAY_AUTH_MODE not set): Ray's core retries for ~20 s, printing
    # a warning a second that alone says why; the user sees one line that does
    refused = _run(["--address", address, "--out", str(out)], _client_env(tmp_path / "elsewhere"))
    line = _one_line(refused)
    assert f"cannot join the Ray cluster at '{address}': the cluster refused this client's token" in line
    assert "RAY_AUTH_TOKEN_PATH" in line and not out.exists()
    # the cluster's token, named by RAY_AUTH_TOKEN_PATH: the run joins and ends as usual
    token_path = token_cluster["token_path"]
    ran = _run(["--address", address, "--out", str(out), "--total-steps", "600", "--eval-every", "600",
                "--eval-episodes", "2", "--actors", "1", "--learning-starts", "200"],
               _client_env(tmp_path / "elsewhere", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=token_path))
    assert ran.returncode == 0, ran.stderr
    assert (out / "summary.json").exists()
    token = Path(token_path).read_text().strip()
    assert all(token not in p.stderr + p.stdout for p in (refused, ran))  # the token never reaches the terminal
    assert token not in (out / "config.json").read_text()
