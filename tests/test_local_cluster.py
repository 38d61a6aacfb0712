"""The Ray cluster a run starts on this machine: its dashboard agent takes a port the system picks, not Ray's one
port for the whole machine (52365), and Ray starts no worker ahead of the actors that ask for one."""

import errno
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# in a process of its own (a cluster per process): the backend a Ray run makes, one actor on it, and where the
# cluster wrote its logs
START = """
import json, sys
import ray
from beta_dqn.driver.runtime import RayBackend

class Echo:
    def echo(self, x):
        return x

backend = RayBackend()
echo = backend.make(Echo)
assert backend.get(backend.call(echo, "echo", 7)) == 7
node = ray._private.worker.global_worker.node
print(json.dumps({"logs": node.get_logs_dir_path(), "agent_port": node.dashboard_agent_listen_port}))
ray.shutdown()
"""


@pytest.mark.integration
@pytest.mark.ray_default_ports
def test_a_second_cluster_on_the_machine_takes_a_free_agent_port_and_starts_only_the_workers_asked_for():
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (a port only in TIME_WAIT is not held)
    try:  # the port Ray's agents take by default, held as another cluster here would (or already held)
        held.bind(("0.0.0.0", 52365))
        held.listen()
    except OSError as e:
        assert e.errno == errno.EADDRINUSE, e
        with socket.socket() as probe:  # held by another process: one that listens (a cluster's agent does)
            if probe.connect_ex(("127.0.0.1", 52365)) != 0:
                pytest.skip("port 52365 is taken here, but nothing answers on it: it cannot be held for the test")
    try:
        done = subprocess.run([sys.executable, "-c", START], cwd=ROOT, capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    finally:
        held.close()
    assert done.returncode == 0, done.stderr[-3000:]
    started = json.loads(done.stdout.strip().splitlines()[-1])
    port = started["agent_port"]  # the port the agent bound, the system's pick (-1 where its bind failed)
    assert isinstance(port, int) and port > 0 and port != 52365, started
    agent = (Path(started["logs"]) / "dashboard_agent.log").read_text()
    assert "Failed to bind" not in agent and "failed to bind" not in agent, agent[-2000:]
    # one worker process: the actor's (Ray's default starts one per CPU as the node comes up, and more as the
    # driver connects, whether or not an actor takes them)
    workers = sorted(p.name for p in Path(started["logs"]).glob("python-core-worker-*.log"))
    assert len(workers) == 1, workers
