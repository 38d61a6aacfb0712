"""`ray up deploy/onprem.yaml` for real: Ray's own launcher over SSH to two "machines" on this one.

Each machine is a network namespace of the test's own (its own address, reached through a bridge; no traffic
leaves this machine) running an OpenSSH server in its own PID and mount namespaces (its own process table, so
`ray stop` there stops only its own Ray; its own /tmp/ray). The file system is shared, so in each machine's
mount namespace root's home is a directory of the test's own (what the launcher and the setup commands write
there stays out of the real one; everything else of the real home is reachable through links), where the
project's venv is already installed: the test copy of onprem.yaml changes only the addresses, the SSH user and
key, the worker count, and leaves out the setup steps that install system packages and the project (apt-get,
deadsnakes, pip). Then, as a user would: `ray up` → `ray status` shows both nodes → a 2-run grid through `ray
exec` lands actors on both → a client without the cluster's token is refused (a run's one line for it:
tests/test_ray_auth.py) → `ray rsync-down` brings the runs back → `ray down` leaves no Ray process; the SSH
servers go with the test. Root only (namespaces); skipped where sshd, rsync, ip or unshare are missing."""

import ipaddress
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NEEDS = ("/usr/sbin/sshd", shutil.which("rsync"), shutil.which("ip"), shutil.which("unshare"), shutil.which("ssh"))
SSH = ["-F", "/dev/null", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o",
       "LogLevel=ERROR"]
# what the test copy keeps of onprem.yaml's setup: the lines that configure a node's shell; the others install
# system packages or the project (the nodes share this machine: they would act on it), each named here, so
# that a line added to onprem.yaml fails this test until it is placed
KEPT = ("venv/bin/activate' >> ~/.bashrc", "chmod 600 ~/.ray/auth_token")
DROPPED = ("apt-get update", "systemctl disable", "add-apt-repository", "python3.11 -m venv",
           "pip install -q --upgrade", "deploy/install.sh")


def _can_make_machines() -> bool:
    """Root, the programs, and the right to make namespaces (a container may give root without it)."""
    if os.geteuid() != 0 or not all(NEEDS) or not Path(NEEDS[0]).exists():
        return False
    probe = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "true"], capture_output=True)
    return probe.returncode == 0


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not _can_make_machines(),
                                 reason="needs root with namespaces, openssh-server, rsync, iproute2, util-linux")]


def _sh(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, **{"timeout": 120, **kwargs})


def _free_subnet() -> str:
    """A /24 of 198.18.0.0/15 (set aside for benchmarks: no real network uses it) that no route here names."""
    routes = _sh("ip", "-4", "route").stdout
    for third in range(os.getpid() % 250, os.getpid() % 250 + 250):
        net = ipaddress.ip_network(f"198.18.{third % 250}.0/24")
        if str(net.network_address)[:-1] not in routes:
            return str(net.network_address)[:-2]
    pytest.skip("no free /24 in 198.18.0.0/16")


@pytest.fixture
def two_machines():
    tag, subnet = str(os.getpid()), _free_subnet()  # names: at most 15 characters (bdqbr + a pid)
    root = Path(tempfile.mkdtemp(prefix="bdq", dir="/tmp"))  # short: sockets under it (107 characters at most)
    home, local_home, real = root / "home", root / "local", root / "real"
    (home / ".ray").mkdir(parents=True)
    real.mkdir()
    owned = {".bashrc", ".profile", ".bash_profile", ".bash_login", ".bash_logout", ".bash_history", ".ray", ".ssh",
             "venv", "beta-dqn", "ray_bootstrap_key.pem", "ray_bootstrap_config.yaml"}
    for entry in os.listdir(os.path.expanduser("~root")):  # e.g. the Python the venv is made from
        if entry not in owned:
            (home / entry).symlink_to(real / entry)
    (local_home / ".ray").mkdir(parents=True)
    # Ubuntu's skeleton: a login shell reads .profile, which reads .bashrc (where setup_commands add lines)
    (home / ".profile").write_text('[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n')
    (home / ".bashrc").write_text("")
    (home / "venv").symlink_to(sys.prefix)  # the project, installed: this test's own environment
    token = local_home / ".ray" / "auth_token"
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    for name in ("host_key", "user_key"):
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name), check=True)
    (root / "authorized_keys").write_text((root / "user_key.pub").read_text())
    (root / "authorized_keys").chmod(0o600)
    bridge, machines, servers = f"bdqbr{tag}", {}, []
    try:
        _sh("ip", "link", "add", bridge, "type", "bridge", check=True)
        _sh("ip", "addr", "add", f"{subnet}.1/24", "dev", bridge, check=True)
        _sh("ip", "link", "set", bridge, "up", check=True)
        for i, role in enumerate(("head", "worker")):
            ns, veth, peer, ip = f"bdq{role[0]}{tag}", f"bdq{role[0]}h{tag}", f"bdq{role[0]}p{tag}", f"{subnet}.{i + 2}"
            _sh("ip", "netns", "add", ns, check=True)
            machines[role] = {"ns": ns, "ip": ip}
            for command in (["ip", "link", "add", veth, "type", "veth", "peer", "name", peer],
                            ["ip", "link", "set", peer, "netns", ns], ["ip", "link", "set", veth, "master", bridge],
                            ["ip", "link", "set", veth, "up"],
                            ["ip", "netns", "exec", ns, "ip", "addr", "add", f"{ip}/24", "dev", peer],
                            ["ip", "netns", "exec", ns, "ip", "link", "set", peer, "up"],
                            ["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"],
                            # a default route (to this machine's end of the bridge, which forwards nothing):
                            # Ray finds a node's address by the route out, else it takes 127.0.0.1
                            ["ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", f"{subnet}.1"]):
                _sh(*command, check=True)
            conf = root / f"sshd_{role}.conf"
            conf.write_text(f"ListenAddress {ip}\nPort 22\nHostKey {root}/host_key\n"
                            f"AuthorizedKeysFile {root}/authorized_keys\nPermitRootLogin prohibit-password\n"
                            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                            f"PidFile {root}/sshd_{role}.pid\n")
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
            # sshd is the first process of its own PID namespace: when it goes, everything it started goes
            servers.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--pid", "--fork", "--mount", "--mount-proc", "sh", "-c",
                 f"mkdir -p /tmp/ray && mount -t tmpfs tmpfs /tmp/ray && mount --bind ~root {real} && "
                 f"mount --bind {home} ~root && exec /usr/sbin/sshd -D -e -f {conf}"],
                stdout=subprocess.DEVNULL, stderr=open(root / f"sshd_{role}.log", "w"), start_new_session=True))
        deadline = time.monotonic() + 30
        while any(_ssh(root, m["ip"], "true").returncode for m in machines.values()):
            assert time.monotonic() < deadline, (root / "sshd_head.log").read_text()
            time.sleep(0.5)
        yield {"root": root, "home": home, "local_home": local_home, "token": token, **machines}
    finally:  # each step on its own: one that fails leaves the others to run
        for server in servers:
            try:
                os.killpg(server.pid, signal.SIGKILL)  # sshd is its PID namespace's first process: all go with it
                server.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for m in machines.values():
            _sh("ip", "netns", "del", m["ns"])
        _sh("ip", "link", "del", bridge)
        shutil.rmtree(root, ignore_errors=True)


def _ssh(root: Path, ip: str, command: str) -> subprocess.CompletedProcess:
    return _sh("ssh", "-i", str(root / "user_key"), *SSH, f"root@{ip}", command, timeout=60)


def _test_config(machines: dict) -> dict:
    config = yaml.safe_load((ROOT / "deploy/onprem.yaml").read_text())
    config["cluster_name"] = f"bdq-test-{os.getpid()}"
    config["provider"].update(head_ip=machines["head"]["ip"], worker_ips=[machines["worker"]["ip"]])
    config["auth"] = {"ssh_user": "root", "ssh_private_key": str(machines["root"] / "user_key")}
    config["min_workers"] = config["max_workers"] = 1
    kept = [c for c in config["setup_commands"] if any(k in c for k in KEPT)]
    dropped = [c for c in config["setup_commands"] if c not in kept]
    assert len(kept) == len(KEPT) and len(dropped) == len(DROPPED), config["setup_commands"]
    assert all(any(d in c for c in dropped) for d in DROPPED), dropped
    config["setup_commands"] = kept
    # each machine reports 2 CPUs (as test_grid's two nodes do): on a bigger host both runs would fit the head
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        config[key] = [c.replace("ray start ", "ray start --num-cpus=2 ") for c in config[key]]
    # after `ray down`, a worker's raylet (which the `local` provider does not stop) ends by itself once the
    # head's GCS has been gone for Ray's reconnect timeout: 10 s here, not 60 s, which the test would wait
    # (its agents then take up to 60 s more: they tell the gone GCS that their raylet died, with a fixed timeout).
    # While the test runs it also means the worker gives up on a silent head after 10 s, not 60 s: the head is on
    # this machine, and answers within that on a loaded 2-core one (seen beside a training grid)
    config["worker_start_ray_commands"] = [
        c.replace("ray start ", "RAY_gcs_rpc_server_reconnect_timeout_s=10 ray start ")
        for c in config["worker_start_ray_commands"]]
    return config


def test_ray_up_launches_onprem_yaml_over_ssh_runs_a_grid_across_both_and_tears_down(two_machines, tmp_path):
    m = two_machines
    config_path = tmp_path / "onprem-test.yaml"
    config_path.write_text(yaml.safe_dump(_test_config(m)))
    ray = str(Path(sys.executable).with_name("ray"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "HOME": str(m["local_home"]),
           "RAY_USAGE_STATS_ENABLED": "0"}

    def launcher(command, *args, timeout=300):  # `ray <command> CONFIG <args>`
        return _sh(ray, command, str(config_path), *args, cwd=ROOT, env=env, timeout=timeout)

    def on_head(command, timeout=300):
        done = _sh(ray, "exec", "--no-config-cache", str(config_path), command, cwd=ROOT, env=env, timeout=timeout)
        return done.returncode, done.stdout + done.stderr

    up = launcher("up", "-y", "--no-config-cache")
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        deadline, status = time.monotonic() + 240, ""
        while "2 local.cluster.node" not in status:  # the autoscaler starts the worker over SSH
            if time.monotonic() > deadline:
                pytest.fail(status + on_head("grep -v VVINFO /tmp/ray/session_latest/logs/monitor.out | tail -40",
                                             timeout=60)[1])
            time.sleep(5)
            status = on_head("ray status", timeout=60)[1]
        grid = ("cd ~/beta-dqn && python -m learner.main --env CliffWalk --algo dqn --seeds 0,1 --actors 2 "
                "--envs-per-actor 2 --total-steps 3000 --learning-starts 500 --eval-every 1500 --eval-episodes 2 "
                "--learner-cpus 0.5 --actor-cpus 0.5 --wandb disabled --progress false --address auto --out runs/g1")
        code, text = on_head(grid)
        assert code == 0 and "grid g1: 2 of 2 runs done" in text, text[-3000:]
        # a client without the token is refused: asked once, by Ray's own client of the cluster's GCS (a run's
        # join asks 20 times, a second apart, before it says so in its one line, with no traceback: that line is
        # tested on a local token cluster only, tests/test_ray_auth.py, not on this one)
        refused_code, refused = on_head(
            f"env -u RAY_AUTH_MODE HOME=/tmp/ray python -c \"from ray._raylet import GcsClient; "
            f"GcsClient(address='{m['head']['ip']}:6379')\"")
        assert refused_code != 0 and "InvalidAuthToken" in refused, refused[-2000:]
        down_dir = tmp_path / "down"
        down_dir.mkdir()
        synced = launcher("rsync-down", "~/beta-dqn/runs/g1", str(down_dir) + "/")
        assert synced.returncode == 0, synced.stderr[-2000:]
        summary = json.loads((down_dir / "g1" / "grid_summary.json").read_text())
        assert summary["done"] == 2
        learners = {r["placement"]["learner"] for r in summary["runs"]}
        actors = {n for r in summary["runs"] for n in r["placement"]["actors"]}
        assert len(learners) == 1 and actors - learners  # learners on the head (its `learner` resource), actors
        assert len(learners | actors) == 2  # on the other machine too
        for r in summary["runs"]:
            assert (down_dir / "g1" / r["name"] / "checkpoint.pt").is_file()
        assert oct((m["home"] / ".ray" / "auth_token").stat().st_mode & 0o777) == "0o600"
    finally:
        down = launcher("down", "-y")
        for leftover in Path("/tmp/ray").glob(f"cluster-{_test_config(m)['cluster_name']}.*"):  # launcher's state
            leftover.unlink()
    assert down.returncode == 0, down.stderr[-2000:]
    # `ray down` stops the head's Ray; on a `local` provider a worker's raylet stops by itself once the head's
    # GCS has been gone for a while (Ray's reconnect timeout): wait for it, each machine's own process table
    deadline, left = time.monotonic() + 150, {"head": "?", "worker": "?"}
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(5)
        seen = {role: _ssh(m["root"], m[role]["ip"], "ps -eo comm=") for role in left}
        assert all(done.returncode == 0 for done in seen.values()), seen
        # each machine's own process table: no Ray node (raylet, GCS, Ray's workers and agents) and no Redis of
        # a run (a helper of Ray's in plain Python may outlive the worker's raylet: not counted)
        left = {role: sorted(c for c in done.stdout.split() if c in ("raylet", "gcs_server", "redis-server")
                             or c.startswith("ray::")) for role, done in seen.items()}
    assert not any(left.values()), left
