"""`ray up deploy/onprem.yaml` for real: Ray's own launcher over SSH to two "machines" on this one.

Each machine is a network namespace of the test's own (its own address, reached through a bridge; no traffic
leaves this machine) running an OpenSSH server in its own PID and mount namespaces (its own process table, so
`ray stop` there stops only its own Ray; its own /tmp/ray). The file system is shared, so in each machine's
mount namespace root's home is a directory of the test's own (what the launcher and the setup commands write
there stays out of the real one; everything else of the real home is reachable through links), where the
project's venv is already installed: the test copy of onprem.yaml changes only the addresses, the SSH user and
key, the worker count, and leaves out the setup steps that install system packages and the project (apt-get,
deadsnakes, pip). Then, as a user would: `ray up` → `ray status` shows both nodes → a 2-run grid through `ray
exec` lands actors on both → a driver without the cluster's token is refused in one line → `ray rsync-down`
brings the runs back → `ray down` leaves no Ray process; the SSH servers go with the test. Root only
(namespaces); skipped where sshd, rsync, ip or unshare are missing."""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NEEDS = ("/usr/sbin/sshd", shutil.which("rsync"), shutil.which("ip"), shutil.which("unshare"), shutil.which("ssh"))
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or not all(NEEDS) or not Path(NEEDS[0]).exists(),
                                 reason="needs root, openssh-server, rsync, iproute2 and util-linux")]
SSH = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


def _sh(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, **{"timeout": 120, **kwargs})


@pytest.fixture
def two_machines(tmp_path):
    tag = f"{os.getpid() % 10000}"
    subnet = f"10.{77 + os.getpid() % 100}.{os.getpid() % 200 + 1}"
    root = Path(f"/tmp/bdq{tag}")  # short: sshd and Ray keep sockets under paths of at most 107 characters
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    home, local_home, real = root / "home", root / "local", root / "real"
    (home / ".ray").mkdir(parents=True)
    real.mkdir()
    owned = {".bashrc", ".profile", ".ray", ".ssh", ".bash_history", "venv", "beta-dqn", "ray_bootstrap_key.pem",
             "ray_bootstrap_config.yaml"}
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
            Path("/run/sshd").mkdir(exist_ok=True)
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
    finally:
        for server in servers:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
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
    installs = ("apt-get", "add-apt-repository", "pip install", "deploy/install.sh")
    config["setup_commands"] = [c for c in config["setup_commands"] if not any(s in c for s in installs)]
    return config


def test_ray_up_launches_onprem_yaml_over_ssh_runs_a_grid_across_both_and_tears_down(two_machines, tmp_path):
    m = two_machines
    config_path = tmp_path / "onprem-test.yaml"
    config_path.write_text(yaml.safe_dump(_test_config(m)))
    ray = str(Path(sys.executable).with_name("ray"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "HOME": str(m["local_home"])}

    def launcher(command, *args, timeout=300):  # `ray <command> CONFIG <args>`
        return _sh(ray, command, str(config_path), *args, cwd=ROOT, env=env, timeout=timeout)

    def on_head(command, timeout=300):
        done = _sh(ray, "exec", str(config_path), command, cwd=ROOT, env=env, timeout=timeout)
        return done.returncode, done.stdout + done.stderr

    up = launcher("up", "-y", "--no-config-cache")
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        deadline, status = time.monotonic() + 90, ""
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
        refused_code, refused = on_head(f"cd ~/beta-dqn && env -u RAY_AUTH_MODE HOME=/tmp python -m learner.main "
                                        f"--env CliffWalk --address {m['head']['ip']}:6379 --out /tmp/refused")
        # (ray exec says only that the command failed: our status 2 reaches it as a failure)
        assert refused_code != 0 and "the cluster refused this client's token" in refused, refused[-2000:]
        assert "Traceback" not in refused
        down_dir = tmp_path / "down"
        down_dir.mkdir()
        synced = launcher("rsync-down", "~/beta-dqn/runs/g1", str(down_dir) + "/")
        assert synced.returncode == 0, synced.stderr[-2000:]
        summary = json.loads((down_dir / "g1" / "grid_summary.json").read_text())
        assert summary["done"] == 2
        nodes = {n for r in summary["runs"] for n in [r["placement"]["learner"], *r["placement"]["actors"]]}
        assert len(nodes) == 2  # the runs' parts on both machines
        for r in summary["runs"]:
            assert (down_dir / "g1" / r["name"] / "checkpoint.pt").is_file()
        assert oct((m["home"] / ".ray" / "auth_token").stat().st_mode & 0o777) == "0o600"
    finally:
        down = launcher("down", "-y")
    assert down.returncode == 0, down.stderr[-2000:]
    # `ray down` stops the head's Ray; on a `local` provider a worker's raylet stops by itself once the head's
    # GCS has been gone for a while (Ray's reconnect timeout): wait for it, each machine's own process table
    deadline, left = time.monotonic() + 150, {"head": "?", "worker": "?"}
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(5)
        left = {role: _ssh(m["root"], m[role]["ip"], "ps -eo args | grep -E 'raylet|gcs_server|ray::' | "
                                                      "grep -v grep || true").stdout.strip() for role in left}
    assert not any(left.values()), left
