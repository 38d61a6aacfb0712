"""User mistakes end with status 2 and one line that names the field and what is allowed."""

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from beta_dqn.configuration.cli import build_parser, parse_config
from beta_dqn.configuration.flags import ConfigError, resolve

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    (["--env", "Pong"], "--env: unknown env 'Pong'; known: CliffWalk"),
    (["--algo", "ppo"], "--algo: 'ppo' is not one of: beta_dqn, dqn, bootstrapped_dqn, ez_greedy, rnd, lesson"),
    (["--algo", "ez_greedy", "--ez-mu", "1"], "--ez-mu: must be > 1 (a Zeta distribution), got 1.0"),
    (["--algo", "bootstrapped_dqn", "--boot-heads", "0"], "--boot-heads: must be > 0, got 0"),
    (["--algo", "rnd", "--rnd-scale", "-1"], "--rnd-scale: must be >= 0, got -1.0"),
    (["--algo", "lesson", "--lesson-tau", "0"], "--lesson-tau: must be > 0, got 0.0"),
    (["--algo", "dqn", "--two-q", "true"], "--two-q: is a β-DQN ablation; --algo is dqn"),
    (["--total-steps", "-5"], "--total-steps: must be > 0, got -5"),
    (["--actors", "0"], "--actors: must be > 0, got 0"),
    (["--beta-eps", "1.5"], "--beta-eps: must be in (0, 1), got 1.5"),
    (["--beta-eps", "0"], "--beta-eps: must be in (0, 1), got 0.0"),
    (["--eval-epsilon", "-0.1"], "--eval-epsilon: must be in [0, 1], got -0.1"),
    (["--gamma", "1"], "--gamma: must be in (0, 1), got 1.0"),
    (["--replay-capacity", "16"], "--replay-capacity: must be >= --batch-size (32), got 16"),
    (["--eval-every", "0"], "--eval-every: must be > 0, got 0"),
    (["--lr", "nan"], "--lr: must be finite, got nan"),
    (["--policy-set", "7"], "--policy-set: '7' is not one of: 13, 8, 23, cov, cor0, cor1"),
    (["--actors", "two"], "argument --actors: invalid int value: 'two'"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--totl-steps", "5", "--eval-every=9"],
     "unrecognized arguments: --totl-steps 5 (--totl-steps: did you mean --total-steps?)"),
    (["--lrr", "1", "--lrr=2"], "unrecognized arguments: --lrr 1 --lrr=2 (--lrr: did you mean --lr?)"),
    (["--env", "CliffWalk", "--address", "127.0.0.1:1"], "--address: no Ray cluster answers at '127.0.0.1:1'"),
    (["--address", "127.0.0.1:notaport"],
     "--address: '127.0.0.1:notaport' is not HOST:PORT: its port 'notaport' is not a number from 1 to 65535"),
    (["--address", "ray://127.0.0.1:70000"],
     "--address: 'ray://127.0.0.1:70000' is not HOST:PORT: its port '70000' is not a number from 1 to 65535"),
    (["--replay", "http://127.0.0.1:6379"], "--replay: 'http://127.0.0.1:6379' is not a replay service; expected "
                                            "memory, redis-local or redis:// URLs"),
    (["--replay", "http://:hunter2@127.0.0.1:6379"], "--replay: 'http://***@127.0.0.1:6379' is not a replay service"),
    (["--replay", "memroy"], "--replay: 'memroy' is not a replay service"),
    (["--replay", "redis://127.0.0.1:1"], "--replay: no Redis answers at redis://127.0.0.1:1"),
    (["--replay", "redis://:hunter2@127.0.0.1:1"], "--replay: no Redis answers at redis://:***@127.0.0.1:1"),
    (["--replay", "redis://:hunter2/x@127.0.0.1:1"], "--replay: 'redis://***@127.0.0.1:1' is not redis://"),
    (["--replay", "redis://[::1:6379"], "--replay: 'redis://[::1:6379' is not redis://"),
    (["--replay", "redis://a:1,redis://b:2", "--replay-shards", "3"],
     "--replay-shards: 3, but --replay names 2 servers"),
    (["--replay", "redis://127.0.0.1:6379/x"], "the database must be a number, got 'x'"),
    (["--replay", "redis://127.0.0.1:1/0?pasword=hunter2"],
     "--replay: 'redis://127.0.0.1:1/0': unknown query argument 'pasword'; a redis:// URL takes client_name, db,"),
    (["--replay", "redis://127.0.0.1:1/0?password=hunter2&hunter2rest=x"],
     "unknown query argument (its name is not shown: the URL holds a password, and a & in a password must be"),
    (["--replay", "redis://127.0.0.1:1/0?password=hunter2&socket_timeout=soon"],
     "--replay: 'redis://127.0.0.1:1/0': socket_timeout='soon' is not a value redis-py takes for socket_timeout"),
    (["--checkpoint-every", "0"], "--checkpoint-every: must be > 0, got 0"),
    (["--replay-timeout", "-1"], "--replay-timeout: must be > 0, got -1.0"),
    (["--seeds", "5-2"], "--seeds: '5-2'; expected seeds like 0-9, 0,3,7 or 0-2,5"),
    (["--algo", "dqn,ppo"], "--algo: 'ppo' is not one of"),
    (["--env", "CliffWalk,Pong", "--algo", "dqn"], "--env: unknown env 'Pong'"),
    (["--bandit-returns", "minmax,mean"], "--bandit-returns: 'mean' is not one of: raw, minmax"),
    (["--arm-exchange", "step"], "--arm-exchange: 'step' is not one of: auto, episode, chunk"),
    (["--bandit-returns", "raw", "--seeds", "0", "--actors", "1,x"], "argument --actors: invalid int value: '1,x'"),
    (["--count-mode", "off,off"], "argument --count-mode: 'off' appears twice in the list 'off,off'"),
    (["--seed", "0,1"], "argument --seed: invalid int value: '0,1'"),
    (["--env", "CliffWalk,"], "argument --env: an empty item in the list 'CliffWalk,'"),
    (["--algo", "dqn", "--policy-set", "13,cov"], "--policy-set: is a list, but no method of the grid reads it"),
    (["--seeds", "0-1", "--retries", "-1"], "--retries: must be >= 0, got -1"),
    (["--seeds", "0-1", "--pack-seeds", "0"], "--pack-seeds: must be >= 1, got 0"),
    (["--pack-seeds", "4"], "--pack-seeds: 4: packs the seeds of a grid; give them with --seeds"),
    (["--learner-gpus", "-2"], "--learner-gpus: must be >= 0, or -1 for automatic, got -2.0"),
    (["--resume", "/nonexistent/grid", "--seeds", "0-1"], "--resume"),
    (["--resume", "/nonexistent/run"], "--resume: no checkpoint.pt in '/nonexistent/run'"),
    (["--seed", "2147483648"], "--seed: must be in [0, 2147483647], got 2147483648"),
    (["--seeds", "0-1000000000"], "--seeds: '0-1000000000' names more than 10,000 seeds"),
    (["--lr", "1e-4,2e-4", "--seeds", "0-9999"],
     "--seeds: the grid is 2 lr × 10,000 seeds = 20,000 combinations; a grid or search holds at most 10,000: split it "
     "into grids of their own"),
    (["--seeds", "0,2147483648"], "--seeds: '0,2147483648'; seeds must be in [0, 2147483647]"),
    (["--replay", "redis-local", "--address", "ray://127.0.0.1:1"],
     "--replay: redis-local with a ray:// client: its servers would run on this machine"),
    (["--total-steps", "100000000000000000000"], "--total-steps: must be within ±2^53 = 9,007,199,254,740,992, got 1"),
    (["--replay-capacity", "1000000000000"],
     "--replay-capacity: 1,000,000,000,000 transitions of MinAtar/Breakout (113 B each) need 102.8 TiB of memory"),
    (["--algo", "bootstrapped_dqn", "--boot-heads", "1000000"],
     "--algo: bootstrapped_dqn's networks for MinAtar/Breakout have 131,974,000,592 parameters: "),
    (["--replay", "redis://127.0.0.1:1", "--replay-password-file", "/nonexistent/pass"],
     "--replay: cannot read the password file /nonexistent/pass"),
    (["--env", "LunarLander-v3"], "--env: env 'LunarLander-v3' is registered with Gymnasium but cannot be made here "
                                  "(DependencyNotInstalled: Box2D is not installed"),
    (["--env", "GymV26Environment-v0"], "--env: env 'GymV26Environment-v0' is registered with Gymnasium but cannot "
                                        "be made here (ImportError: "),
    (["--seeds", "0-2,1"], "--seeds: '0-2,1' names seed 1 twice; give each seed once"),
    (["--seed", "5", "--seeds", "1,2"], "--seed: 5 with --seeds 1,2: a grid's seeds are --seeds; give one of them"),
    (["--seed", "0", "--seeds", "1,2"], "--seed: 0 with --seeds 1,2: a grid's seeds are --seeds; give one of them"),
    (["--take-run-id", "true"], "--take-run-id: true without --overwrite true: taking another run's --run-id"),
    (["--env", "CliffWalk", "--out", "/"], "--out: / is the file system's root: give a directory of the run's own"),
    (["--env", "CliffWalk", "--out", str(ROOT)], f"--out: {ROOT} is this project's checkout: give a directory"),
    (["--env", "CliffWalk", "--out", str(ROOT / "tests")], f"--out: {ROOT / 'tests'} holds other files ("),
]


# in a process of their own, as a user meets them: the first case, those that reach for a Ray cluster (which would
# leave Ray's state in this process) and a password's; the others call the same `main` in this process (a second
# each instead of a process's start)
OWN_PROCESS = {0, *(i for i, (argv, _) in enumerate(CASES) if "--address" in argv or "hunter2@" in " ".join(argv))}


@pytest.mark.parametrize("argv,message", CASES)
def test_bad_input_exits_2_with_one_line(argv, message, capfd):
    if CASES.index((argv, message)) in OWN_PROCESS:
        proc = subprocess.run([sys.executable, "-m", "learner.main", *argv], capture_output=True, text=True,
                              timeout=120)
        status, err = proc.returncode, proc.stderr
    else:
        from beta_dqn.launcher.main import main

        with warnings.catch_warnings(record=True) as warned:  # (a warning would be a line of its own)
            warnings.simplefilter("always")
            try:
                status = main(argv)
            except SystemExit as e:  # what argparse ends with
                status = e.code
        err = capfd.readouterr().err + "".join(f"{w.category.__name__}: {w.message}\n" for w in warned)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert message in lines[0]
    assert "Traceback" not in err
    assert "hunter2" not in err  # a password never reaches the terminal


@pytest.mark.parametrize("prog,command", [
    *((f"bench/{name}.py", [f"bench/{name}.py"]) for name in ("arithmetic", "breakdown", "contention", "cost", "grid",
                                                                 "packed", "replay", "throughput")),
    ("python -m learner.report", ["-m", "learner.report", "."]),
])
def test_every_command_says_a_mistake_in_one_line_with_status_2(prog, command):
    proc = subprocess.run([sys.executable, *command, "--no-such-flag"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"{prog}: error: unrecognized arguments: --no-such-flag"]


@pytest.mark.parametrize("command,line", [
    (["bench/contention.py", "--steps", "500", "--warmup", "0", "--window", "5"],
     "bench/contention.py: error: out of range: --steps 500 (allowed: 2,000 to 10,000,000); --warmup 0 (allowed: 1 to "
     "1,000,000)"),
    (["bench/grid.py", "--runs", "2", "--steps", "12345678"],
     "bench/grid.py: error: out of range: --steps 12345678 (allowed: 1,000 to 10,000,000)"),
    (["bench/replay.py", "--chunks", "0"], "bench/replay.py: error: out of range: --chunks 0 (allowed: 4 to 100,000)"),
    (["results/minatar-departure/calibration.py", "--games", "4", "--datasets", "9", "--reps", "5"],
     "python results/minatar-departure/calibration.py: error: --games 4 (allowed: 1, 3, 5, 7 or 9); --reps 5 "
     "(allowed: 100 or more)"),
])
def test_a_script_names_its_flags_out_of_range_and_no_other(command, line):
    proc = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [line]

SCRIPTS = sorted(p.relative_to(ROOT).as_posix() for folder in ("results", "docs") for p in (ROOT / folder).rglob("*.py")
                 if 'if __name__ == "__main__":' in p.read_text())  # the studies' and the docs' own (bench/: above)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_reads_its_command_line_before_it_does_anything(script, tmp_path):
    """--help is its usage and a flag it does not know one line with status 2, and neither writes a file (a report
    script that took no arguments once rewrote its figures and tables on --help). Each runs from a copy of the
    checkout's scripts in results/ and docs/ (the records left out), so what it would write lands where nothing
    else writes: not beside the checkout's records, which a study's runner and other tests write into."""
    for p in (*(ROOT / "results").rglob("*.py"), *(ROOT / "docs").rglob("*.py")):
        (tmp_path / p.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, tmp_path / p.relative_to(ROOT))
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    shown = subprocess.run([sys.executable, script, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: "), shown.stdout[:500] + shown.stderr[-500:]
    bad = subprocess.run([sys.executable, script, "--no-such-flag"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2, bad.stderr[-2000:]
    (line,) = bad.stderr.strip().splitlines()
    assert line.endswith("error: unrecognized arguments: --no-such-flag"), line
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before

RAY_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(INFO|WARNING) \w+\.py:\d+ -- ")


@pytest.mark.parametrize("replay", ["memory", "redis-local"])
def test_actors_a_local_cluster_cannot_place_are_one_line_and_leave_nothing(tmp_path, replay):
    """Nothing is left: no Ray cluster, no Redis server, none of their files (redis-local's are under --out)."""
    out = tmp_path / "big"
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--actors", "100000",
                           "--total-steps", "1000", "--learning-starts", "100", "--eval-every", "1000",
                           "--wandb", "disabled", "--replay", replay, "--out", str(out)],
                          capture_output=True, text=True, timeout=180)
    # ours, without Ray's own notices (e.g. its one-time "Token authentication is enabled" on a new machine)
    # (and the warning before it that so many actors cannot be fed by 1000 steps: issue 50)
    lines = [line for line in proc.stderr.strip().splitlines() if not RAY_LOG_LINE.match(line)]
    assert lines[0] == ("warning: --actors 100,000 × --chunk-steps 64 is more env steps than --total-steps 1,000: "
                        "some actors never collect a chunk"), proc.stderr
    lines = lines[1:]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    from beta_dqn.driver.preflight import machine_memory

    if machine_memory() > 13_576 * 4 * (5 + 100_001):  # the actors' copies of the networks fit: CPUs are short
        assert "--actors: 100000 actors × 0.01 CPUs need 1000 CPUs, but the cluster has" in lines[0]
    else:
        assert "--actors: 100000 actors each hold a copy of beta_dqn's networks" in lines[0]
    assert not out.exists() or [p.name for p in out.iterdir()] == [".lock"]  # no run: the corrected command goes ahead


def test_the_cluster_a_ray_run_would_start_here_is_this_machines(monkeypatch):
    """What RayBackend would start: a cluster of this machine's CPUs, unless it joins one (an address,
    RAY_ADDRESS) or one is already started in this process (a grid's run); `import ray` is not made to ask."""
    import types

    from beta_dqn.driver.cluster import cluster_to_start

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray_here = types.SimpleNamespace(is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "ray", ray_here)
    assert cluster_to_start() == cluster_to_start("") == os.cpu_count()
    assert cluster_to_start("10.0.0.1:6379") is None
    ray_here.is_initialized = lambda: True
    assert cluster_to_start() is None
    ray_here.is_initialized = lambda: False
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert cluster_to_start() is None
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.delitem(sys.modules, "ray")  # not imported yet: nothing started in this process
    assert cluster_to_start() == os.cpu_count() and "ray" not in sys.modules


def test_actors_a_cluster_of_this_machine_cannot_place_are_refused_before_it_starts(tmp_path, two_cpu_machine):
    """A Ray run that would start a cluster of 2 CPUs here is refused before its backend is made (the slow part)
    when its actors could never be placed; one that joins a cluster, or runs serially, is not judged then."""
    from beta_dqn.driver.run import train

    Started = two_cpu_machine

    def start(*argv):
        cfg, spec = resolve(parse_config(["--env", "CliffWalk", "--wandb", "disabled", "--progress", "false",
                                          "--out", str(tmp_path / "run"), *argv]))
        train(cfg, spec)

    with pytest.raises(ConfigError, match=r"5 actors × 0.5 CPUs need 2.5 CPUs, but the cluster has 2 \(--actors"):
        start("--actors", "5", "--actor-cpus", "0.5")
    with pytest.raises(ConfigError, match=r"300 actors × 0.01 CPUs need 3 CPUs"):  # the default share
        start("--actors", "300")
    assert not (tmp_path / "run").exists()
    for fits in (("--actors", "4", "--actor-cpus", "0.5"), ("--actors", "100"),  # the default share, 0.01 each
                 ("--actors", "5", "--actor-cpus", "0.5", "--runtime", "serial"),
                 ("--actors", "5", "--actor-cpus", "0.5", "--address", "10.0.0.1:6379")):  # a cluster may grow
        with pytest.raises(Started):
            start(*fits)


def test_defaults_are_the_papers_configuration():
    cfg = parse_config(["--actors", "32"])
    assert (cfg.env, cfg.algo, cfg.total_steps, cfg.actors) == ("MinAtar/Breakout", "beta_dqn", 5_000_000, 32)
    assert (cfg.batch_size, cfg.replay_capacity, cfg.target_update, cfg.replay_ratio) == (32, 100_000, 1000, 0.25)
    assert cfg.learning_starts == 5000
    assert (cfg.value("beta_eps"), cfg.value("bandit_window"), cfg.value("policy_set")) == (0.05, 1000, "13")
    assert (cfg.eval_every, cfg.eval_episodes, cfg.eval_epsilon) == (100_000, 30, 0.01)
    # the baselines' (spec §7)
    assert [cfg.value(n) for n in ("boot_heads", "ez_mu", "rnd_scale", "lesson_tau")] == [10, 2.0, 10.0, 0.02]
    assert not cfg.value("two_q")
    # β-DQN's actors reach the bandit once per episode in one process, once per chunk on Ray
    assert resolve(cfg)[0].value("arm_exchange") == "chunk"
    assert resolve(parse_config(["--runtime", "serial"]))[0].value("arm_exchange") == "episode"
    help_text = build_parser().format_help()
    for flag in ("--env", "--algo", "--actors", "--total-steps", "--seed", "--out", "--eval-every",
                 "--eval-episodes", "--device", "--address", "--beta-eps", "--replay-ratio"):
        assert flag in help_text


def test_a_checkpoint_of_another_format_is_refused_with_one_line(tmp_path):
    import torch

    torch.save({"config": {"algo": "dqn"}, "learner": {"target_q": {}}}, tmp_path / "checkpoint.pt")  # format 1
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "checkpoint format 1, written by another version of this program" in proc.stderr


def test_the_raylet_warnings_about_starting_many_workers_go_to_a_file(tmp_path, capsys, monkeypatch):
    """With --actors 32 the raylet warns a dozen times that it started many worker processes at once: the
    run's stdout filter files them (RAY_WORKER_WARNINGS=1 shows them) and passes everything else to stderr."""
    from beta_dqn.launcher.main import _Quiet

    noise = ("\x1b[33m(raylet)\x1b[0m WARNING: 8 PYTHON worker processes have been started on node: abc with "
             "address: 127.0.0.1, which is 4x the maximum expected startup concurrency (2).")
    monkeypatch.delenv("RAY_WORKER_WARNINGS", raising=False)
    quiet = _Quiet(tmp_path / "run" / "ray_warnings.log")
    quiet.write(noise + "\nsomething else\npart")
    quiet.write("ial line\n")
    assert capsys.readouterr().err == "something else\npartial line\n"
    assert (tmp_path / "run" / "ray_warnings.log").read_text() == noise + "\n"
    monkeypatch.setenv("RAY_WORKER_WARNINGS", "1")
    _Quiet(tmp_path / "other.log").write(noise + "\n")
    assert capsys.readouterr().err == noise + "\n" and not (tmp_path / "other.log").exists()


def test_what_a_resume_may_change_and_what_is_masked_derive_from_the_fields_roles():
    from beta_dqn.configuration.flags import GRID_RESUME_MAY_CHANGE, RESUME_MAY_CHANGE, SECRETS, public

    assert RESUME_MAY_CHANGE == {"address", "device", "progress", "log_every", "wandb", "replay", "json",
                                 "replay_password_file"}
    assert GRID_RESUME_MAY_CHANGE == {"address", "retries", "pack_seeds", "progress", "wandb", "replay", "json",
                                      "replay_password_file"}
    assert SECRETS == {"replay"}
    saved = public({"replay": "redis://:hunter2@h1:6379,redis://:hunter2@h2:6379", "seed": 3})
    assert saved == {"replay": "redis://:***@h1:6379,redis://:***@h2:6379", "seed": 3}


def test_a_masked_password_is_restored_from_the_environment_or_named_in_one_line(monkeypatch):
    from beta_dqn.configuration.flags import restore_password

    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    assert restore_password("memory", "run", {}) == "memory"
    with pytest.raises(ConfigError, match="the grid's Redis URL has a password that was not saved: give --replay "
                                          "with it again, --replay-password-file FILE, or set REDIS_PASSWORD"):
        restore_password("redis://:***@h:6379", "grid", {})
    monkeypatch.setenv("REDIS_PASSWORD", "p@ss")
    assert restore_password("redis://:***@h:6379", "run", {}) == "redis://:p%40ss@h:6379"


@pytest.mark.parametrize("url,shown", [
    ("redis://:hunter2@h:6379/0", "redis://:***@h:6379/0"),
    ("redis://alice:hunter2@h:6379", "redis://alice:***@h:6379"),
    ("redis://h:6379/0?password=hunter2", "redis://h:6379/0?password=***"),
    ("redis://alice@h:6379/0?Password=hunter2&db=1", "redis://***@h:6379/0?Password=***&db=1"),
    ("redis://u:hun?ter2@h:1", "redis://***@h:1"),
    ("redis://:hunter2@h:6379?password=hunter2", "redis://:***@h:6379?password=***"),
    ("redis://:hunt@er2@h:6379", "redis://:***@h:6379"),
    ("redis://:hun/ter2@h:6379/0", "redis://***@h:6379/0"),
])
def test_every_form_of_a_redis_password_is_masked(url, shown):
    from beta_dqn.configuration.flags import public
    from replay_service.redis_urls import redact

    assert redact(url) == shown and "hunter2" not in public({"replay": url})["replay"]


def test_a_password_file_fills_a_url_that_names_none_and_is_restored_on_resume(tmp_path, monkeypatch):
    from beta_dqn.configuration.flags import restore_password
    from replay_service.redis_urls import RedisSetupError, with_password

    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    secret = tmp_path / "redis.pass"
    secret.write_text("s3cr/t\n")
    assert with_password("redis://h:6379", str(secret)) == "redis://:s3cr%2Ft@h:6379"
    assert with_password("redis://:other@h:6379", str(secret)) == "redis://:other@h:6379"  # the URL's own wins
    assert restore_password("redis://:***@h:6379", "run", {"replay_password_file": str(secret)}) == "redis://:s3cr%2Ft@h:6379"
    for bad, why in ((tmp_path / "missing", "cannot read the password file"), (tmp_path / "empty", "is empty")):
        if "empty" in str(bad):
            bad.write_text("")
        with pytest.raises(RedisSetupError, match=why):
            with_password("redis://h:6379", str(bad))
        with pytest.raises(ConfigError, match=f"--replay-password-file: .*{why}"):
            restore_password("redis://:***@h:6379", "run", {"replay_password_file": str(bad)})


def test_help_shows_every_flag_once_in_its_group():
    from beta_dqn.configuration.cli import HELP_GROUPS, help_group
    from beta_dqn.configuration.flags import ALGOS, FIELDS

    listed = [name for names in HELP_GROUPS.values() for name in names]
    assert len(listed) == len(set(listed))  # a field in two groups
    assert not [n for n in listed if FIELDS[n].algos != ALGOS]  # a method's flag is "the method"'s
    assert all(help_group(name) for name in FIELDS), [n for n in FIELDS if not help_group(n)]
    text = build_parser().format_help()
    titles = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert titles == ["options", *HELP_GROUPS]
    lines = [line.split()[0] for line in text.splitlines() if line.startswith("  --")]
    assert sorted(lines) == sorted(f"--{name.replace('_', '-')}" for name in FIELDS)
    method = text.split("\nthe method:\n")[1].split("\nreplay:\n")[0]
    assert "--bandit-returns" in method and "[read by beta_dqn]" in method and "--eps-start" in method
