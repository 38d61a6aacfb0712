"""Grids: every combination of the lists runs in parallel on Ray, packed by declared resources; a crashed run
starts again from its checkpoint; an interrupted grid resumes only what is unfinished; on a cluster of two
nodes the learners go where the `learner` resource is and the actors spread over both."""

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from beta_dqn.configuration.cli import build_parser
from beta_dqn.configuration.flags import ConfigError
from beta_dqn.launcher.grid import describe_grid, grid_from_args, parse_seeds

ROOT = Path(__file__).resolve().parents[1]
SHORT = ["--env", "CliffWalk", "--actors", "1", "--envs-per-actor", "2", "--total-steps", "3000",
         "--learning-starts", "500", "--eval-every", "1500", "--eval-episodes", "2", "--wandb", "disabled",
         "--progress", "false"]


def args_of(argv):
    return vars(build_parser().parse_args(argv))


def complete(run_dir: Path, steps: int = 3000, every: int = 1500) -> None:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["env_steps"] == steps
    with open(run_dir / "evals.csv") as f:
        assert [int(r["env_steps"]) for r in csv.DictReader(f)] == list(range(every, steps + 1, every))
    assert (run_dir / "checkpoint.pt").is_file() and (run_dir / "metrics.jsonl").stat().st_size > 0


def test_seed_lists():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0,3,7") == [0, 3, 7]
    assert parse_seeds("0-2,5") == [0, 1, 2, 5]
    for bad in ("3-1", "a", "1,,2", "-1", "0-2,5,1"):  # a seed named twice is a mistake, as in an axis
        with pytest.raises(ConfigError, match="--seeds"):
            parse_seeds(bad)


def test_a_grid_expands_every_combination_and_refuses_a_used_directory(tmp_path):
    grid = grid_from_args(args_of(["--algo", "beta_dqn,dqn", "--env", "CliffWalk,DoorKey", "--seeds", "0-2",
                                   "--out", str(tmp_path / "g")]))
    names = [Path(r["out"]).name for r in grid.runs]
    assert len(names) == 12 and "DoorKey_dqn_s2" in names and "CliffWalk_beta_dqn_s0" in names
    assert all(r["grid"] == "g" and r["actor_cpus"] > 0 for r in grid.runs)
    grid.write_spec()
    with pytest.raises(ConfigError, match="already holds a grid; continue it with --resume"):
        grid_from_args(args_of(["--algo", "beta_dqn,dqn", "--out", str(tmp_path / "g")]))
    with pytest.raises(ConfigError, match="--algo: 'ppo' is not one of"):
        grid_from_args(args_of(["--algo", "dqn,ppo", "--out", str(tmp_path / "h")]))
    with pytest.raises(ConfigError, match="--env: unknown env 'Pong'"):
        grid_from_args(args_of(["--algo", "dqn,beta_dqn", "--env", "CliffWalk,Pong", "--out", str(tmp_path / "i")]))


def test_beta_dqn_reads_the_epsilon_schedule_only_with_beta_epsilon_so_a_list_of_it_is_an_axis_only_then(tmp_path):
    """β-DQN reads --eps-decay-steps only with --beta-epsilon true: a list of it is refused without, an axis with."""
    with pytest.raises(ConfigError, match="eps-decay-steps: is a list, but no method of the grid reads it"):
        grid_from_args(args_of(["--env", "CliffWalk", "--algo", "beta_dqn", "--eps-decay-steps", "1000,2000",
                                "--runtime", "serial", "--out", str(tmp_path / "g")]))
    grid = grid_from_args(args_of(["--env", "CliffWalk", "--algo", "beta_dqn", "--beta-epsilon", "false,true",
                                   "--eps-decay-steps", "1000,2000", "--runtime", "serial",
                                   "--out", str(tmp_path / "h")]))
    assert sorted(r["variant"] for r in grid.runs) == [  # without ε, one run: the decay is not its to vary
        "beta-epsilon=false", "eps-decay-steps=1000,beta-epsilon=true", "eps-decay-steps=2000,beta-epsilon=true"]


def test_a_grid_settles_auto_to_serial_runs_one_a_core_here_and_to_ray_on_a_cluster(tmp_path, monkeypatch):
    """--runtime auto: a grid on this machine runs serial runs, β on the learner's thread unless --beta-thread is
    given, and grid.json keeps what it settled on; a grid that joins a cluster runs Ray runs; auto in a list is
    refused."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    argv = ["--env", "CliffWalk", "--algo", "beta_dqn", "--seeds", "0-1"]
    grid = grid_from_args(args_of([*argv, "--out", str(tmp_path / "a")]), frozenset({"env", "algo", "seeds"}))
    assert {(r["runtime"], r["beta_thread"]) for r in grid.runs} == {("serial", False)}
    assert (grid.args["runtime"], grid.args["beta_thread"]) == ("serial", False)
    named = frozenset({"env", "algo", "seeds", "beta_thread"})
    grid = grid_from_args(args_of([*argv, "--beta-thread", "true", "--out", str(tmp_path / "b")]), named)
    assert {(r["runtime"], r["beta_thread"]) for r in grid.runs} == {("serial", True)}
    grid = grid_from_args(args_of([*argv, "--runtime", "serial", "--out", str(tmp_path / "c")]))
    assert {(r["runtime"], r["beta_thread"]) for r in grid.runs} == {("serial", True)}  # given: kept as it is
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    grid = grid_from_args(args_of([*argv, "--out", str(tmp_path / "d")]), frozenset({"env", "algo", "seeds"}))
    assert {(r["runtime"], r["beta_thread"]) for r in grid.runs} == {("ray", True)}
    with pytest.raises(ConfigError, match="--runtime: auto,ray: auto in a list"):
        grid_from_args(args_of([*argv, "--runtime", "auto,ray", "--out", str(tmp_path / "e")]))
    # a resume that names --beta-thread at its default's value (true) against the saved false is refused, not
    # run silently as saved; naming it as saved, or not at all, resumes
    monkeypatch.delenv("RAY_ADDRESS")
    grid_from_args(args_of([*argv, "--out", str(tmp_path / "f")]), frozenset({"env", "algo", "seeds"})).write_spec()
    resume = ["--resume", str(tmp_path / "f")]
    with pytest.raises(ConfigError, match="--beta-thread: True differs from the grid being resumed \\(False\\)"):
        grid_from_args(args_of([*resume, "--beta-thread", "true"]), frozenset({"resume", "beta_thread"}))
    assert not grid_from_args(args_of([*resume, "--beta-thread", "false"]),
                              frozenset({"resume", "beta_thread"})).args["beta_thread"]
    assert not grid_from_args(args_of(resume), frozenset({"resume"})).args["beta_thread"]


def test_any_flag_given_as_a_list_is_an_axis_and_a_method_ignores_the_flags_it_does_not_read(tmp_path):
    grid = grid_from_args(args_of(["--env", "CliffWalk", "--algo", "beta_dqn,dqn", "--seeds", "0,1",
                                   "--bandit-returns", "minmax,raw", "--eps-decay-steps", "1000000,10000",
                                   "--runtime", "serial", "--out", str(tmp_path / "g")]))
    runs = {Path(r["out"]).name: r for r in grid.runs}
    assert sorted(runs) == sorted(f"CliffWalk_{a}_{v}_s{s}" for a, v in (
        ("beta_dqn", "bandit-returns=minmax"), ("beta_dqn", "bandit-returns=raw"),
        ("dqn", "eps-decay-steps=1000000"), ("dqn", "eps-decay-steps=10000")) for s in (0, 1))
    beta = runs["CliffWalk_beta_dqn_bandit-returns=raw_s1"]
    assert (beta["bandit_returns"], beta["eps_decay_steps"], beta["variant"], beta["seed"]) == (
        "raw", None, "bandit-returns=raw", 1)
    dqn = runs["CliffWalk_dqn_eps-decay-steps=10000_s0"]
    assert (dqn["bandit_returns"], dqn["eps_decay_steps"]) == ("raw", 10_000)
    assert dqn["variant"] == "eps-decay-steps=10000"
    # a serial run is one process: its placement group is its learner's bundle alone
    from beta_dqn.launcher.grid_runs import _actor_bundles

    assert _actor_bundles(beta) == 0 and _actor_bundles({**beta, "runtime": "ray"}) == beta["actors"]
    grid.write_spec()
    saved = json.loads((tmp_path / "g" / "grid.json").read_text())
    assert saved["format"] == 2 and saved["args"]["eps_decay_steps"] == [1_000_000, 10_000]
    # a grid written before the axes (format 1: --algo and --env as comma-separated text, and none of the
    # fields added since) resumes as the same grid
    old = {k: v for k, v in args_of([]).items() if k not in ("variant", "bandit_returns", "json", "arm_exchange")}
    old.update(algo="beta_dqn,dqn", env="CliffWalk,DoorKey", seeds="0,1", out=str(tmp_path / "old"))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "grid.json").write_text(json.dumps({"format": 1, "args": old, "runs": []}))
    resumed = grid_from_args(args_of(["--resume", str(tmp_path / "old")]))
    assert sorted(Path(r["out"]).name for r in resumed.runs) == sorted(
        f"{e}_{a}_s{s}" for e in ("CliffWalk", "DoorKey") for a in ("beta_dqn", "dqn") for s in (0, 1))
    assert {r["bandit_returns"] for r in resumed.runs} == {"minmax"}
    # its β-DQN runs keep asking the bandit once per episode, as they did
    assert {r["arm_exchange"] for r in resumed.runs if r["algo"] == "beta_dqn"} == {"episode"}
    # a grid written when a seed named twice ran once (before that was refused) resumes as it ran
    saved["args"]["seeds"] = "0-1,1"
    (tmp_path / "g" / "grid.json").write_text(json.dumps(saved))
    again = grid_from_args(args_of(["--resume", str(tmp_path / "g")]))
    assert sorted(Path(r["out"]).name for r in again.runs) == sorted(runs)


@pytest.mark.integration
def test_a_serial_grid_run_is_computed_again_by_its_command(ray_cluster, tmp_path):
    """The report's study.json gives every run of a grid the command line that computes it again: run alone,
    a serial run gives the same evaluations as in the grid."""
    import shlex

    from beta_dqn.launcher.main import main
    from beta_dqn.reporting.report import write_report

    args = args_of(["--algo", "beta_dqn", "--bandit-returns", "minmax,raw", *SHORT, "--runtime", "serial",
                    "--eval-episodes", "5", "--learner-cpus", "0.5", "--out", str(tmp_path / "grid")])
    assert grid_from_args(args).run()["done"] == 2
    write_report(tmp_path / "grid")
    study = json.loads((tmp_path / "grid" / "report" / "study.json").read_text())
    [command] = study["commands"]
    assert command.startswith("python -m learner.main --env CliffWalk --algo beta_dqn ")
    assert " --runtime serial " in command and " --bandit-returns minmax,raw " in command
    row = next(r for r in study["runs"] if r["variant"] == "bandit-returns=raw")
    argv = shlex.split(row["cmd"])[3:]
    assert main([*argv, "--wandb", "disabled", "--progress", "false", "--out", str(tmp_path / "alone")]) == 0
    grid_run = tmp_path / "grid" / "CliffWalk_beta_dqn_bandit-returns=raw_s0"
    assert (tmp_path / "alone" / "evals.csv").read_text() == (grid_run / "evals.csv").read_text()


@pytest.mark.integration
def test_a_grid_runs_in_parallel_and_a_crashed_run_restarts_from_its_checkpoint(ray_cluster, tmp_path):
    """2 algorithms × 2 seeds, each declaring 0.5 + 0.5 CPUs on the 4-CPU test cluster: all four may run at once.
    One run's process is killed (SIGKILL) after its first checkpoint: it is started again from it."""
    import psutil

    args = args_of(["--algo", "dqn,beta_dqn", "--seeds", "0,1", *SHORT, "--total-steps", "6000",
                    "--checkpoint-every", "1500", "--learner-cpus", "0.5", "--actor-cpus", "0.5",
                    "--out", str(tmp_path / "grid")])
    grid = grid_from_args(args)
    result: list = []
    thread = threading.Thread(target=lambda: result.append(grid.run()))
    thread.start()
    deadline = time.monotonic() + 120
    while not all((Path(r["out"]) / "checkpoint.pt").exists() for r in grid.runs):  # whichever dies has one
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.05)
    # this test's cluster was started by this process: its runs' processes descend from it (another cluster
    # on the machine is not ours to kill)
    def is_run(p) -> bool:
        try:
            return (p.cmdline() or [""])[0] == "ray::_run_unit"
        except psutil.Error:  # gone meanwhile
            return False

    victims = [p for p in psutil.Process().children(recursive=True) if is_run(p)]
    assert victims, "no run process found"
    victims[0].send_signal(signal.SIGKILL)
    thread.join(timeout=240)
    assert result, "the grid did not finish"
    summary = result[0]
    assert summary["done"] == 4 and summary["failed"] == 0
    assert sorted(r["attempts"] for r in summary["runs"]) == [1, 1, 1, 2]  # the killed one ran twice
    import torch

    for r in summary["runs"]:  # the second attempt continued from the checkpoint (a resume's generation)
        generation = torch.load(tmp_path / "grid" / r["name"] / "checkpoint.pt")["counters"]["generation"]
        assert generation == r["attempts"] - 1
    for r in summary["runs"]:
        complete(tmp_path / "grid" / r["name"], 6000, 1500)
    # in parallel: the first wave's runs took longer together than the span they ran in, which one at a time
    # they could not. Not every run beside every other: on a loaded 2-core machine a run's worker process may
    # start after the shortest run has ended (seen in CI: 0.18 s after)
    first = [(r["task"]["started"], r["task"]["ended"]) for r in summary["runs"] if r["attempts"] == 1]
    assert sum(end - start for start, end in first) > max(end for _, end in first) - min(start for start, _ in first)
    assert json.loads((tmp_path / "grid" / "grid_summary.json").read_text()) == summary
    # and the grid's directory is what beta_dqn.reporting.report reads: a table and figures, CliffWalk's visits too
    from beta_dqn.reporting.report import write_report

    report = write_report(tmp_path / "grid").read_text()
    assert "| CliffWalk | CliffWalk |" in report and "(n=2)" in report
    for name in ("curves_CliffWalk.png", "visits_CliffWalk.png", "selection_CliffWalk.png"):
        assert (tmp_path / "grid" / "report" / name).stat().st_size > 5000


@pytest.mark.integration
def test_an_interrupted_grid_resumes_only_its_unfinished_runs(tmp_path):
    """One run at a time (each declares all but half a CPU for its learner); stopped after the first finishes,
    as a grid started in the background by a script is (SIGINT ignored there: `kill`, SIGTERM, stops it as
    Ctrl-C would); `--resume GRID_DIR` runs the other three and leaves the finished one alone."""
    grid_dir = tmp_path / "grid"
    cpus = os.cpu_count()
    argv = [sys.executable, "-m", "learner.main", "--algo", "dqn,beta_dqn", "--seeds", "0,1", *SHORT,
            "--checkpoint-every", "1000", "--learner-cpus", str(cpus - 0.5), "--actor-cpus", "0.5",
            "--out", str(grid_dir)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    deadline = time.monotonic() + 180
    while not list(grid_dir.glob("*/summary.json")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"continue it with --resume {grid_dir}" in err
    finished = {p.parent.name: p.stat().st_mtime_ns for p in grid_dir.glob("*/summary.json")}
    assert 1 <= len(finished) < 4
    started = {p.parent.name for p in grid_dir.glob("*/checkpoint.pt")} - set(finished)
    resumed = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(grid_dir), "--progress", "false",
                              "--json", "true"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    status = {r["name"]: r["status"] for r in summary["runs"]}
    assert {n for n, s in status.items() if s == "done before"} == set(finished)
    assert all(s in ("done", "done before") for s in status.values()) and len(status) == 4
    for name, mtime in finished.items():  # not run again
        assert (grid_dir / name / "summary.json").stat().st_mtime_ns == mtime
    for name in status:
        complete(grid_dir / name)
    import torch

    for name in started:  # interrupted after a checkpoint: continued from it
        assert torch.load(grid_dir / name / "checkpoint.pt")["counters"]["generation"] >= 1, name


TWO_NODES = """
import json, sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "resources": {"learner": 2}})
worker = cluster.add_node(num_cpus=2)
cluster.wait_for_nodes()
from beta_dqn.launcher.main import main
status = main(sys.argv[2:] + ["--address", cluster.address, "--out", sys.argv[1]])
print(json.dumps({"status": status, "head": cluster.head_node.node_id, "worker": worker.node_id}), file=sys.stderr)
cluster.shutdown()
"""


def two_node_grid(out: Path, *extra: str) -> tuple[dict, dict]:
    """A 2-run grid (2 actors each) on TWO_NODES: its grid_summary.json and the two nodes' ids."""
    argv = ["--algo", "dqn", "--seeds", "0,1", *SHORT, "--runtime", "ray", "--actors", "2", "--learner-cpus", "0.5",
            "--actor-cpus", "0.5", *extra]
    proc = subprocess.run([sys.executable, "-c", TWO_NODES, str(out), *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    nodes = json.loads(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0 and nodes["status"] == 0, proc.stderr
    summary = json.loads((out / "grid_summary.json").read_text())
    assert summary["done"] == 2
    return summary, nodes


@pytest.mark.integration
@pytest.mark.ray_default_ports
def test_a_grid_on_two_nodes_places_learners_by_resource_and_actors_on_both(tmp_path):
    """Two Ray nodes on this machine: the head has the `learner` resource (as deploy/*.yaml give the GPU
    head), the other only CPUs. Learners land on the head; the actors that do not fit there go to the other."""
    out = tmp_path / "grid"
    summary, nodes = two_node_grid(out)
    learners = {r["placement"]["learner"] for r in summary["runs"]}
    actors = {n for r in summary["runs"] for n in r["placement"]["actors"]}
    assert learners == {nodes["head"]}
    assert actors == {nodes["head"], nodes["worker"]}
    for r in summary["runs"]:
        complete(out / r["name"])


@pytest.mark.integration
@pytest.mark.ray_default_ports
def test_redis_local_replay_works_across_two_nodes(tmp_path):
    """`--replay redis-local` on a cluster: each run's servers listen on its learner node's cluster address
    (not loopback), and its actors on the other node insert into them; the runs finish."""
    out = tmp_path / "grid"
    summary, nodes = two_node_grid(out, "--replay", "redis-local")
    assert {n for r in summary["runs"] for n in r["placement"]["actors"]} == {nodes["head"], nodes["worker"]}
    for r in summary["runs"]:
        complete(out / r["name"])
        run = json.loads((out / r["name"] / "summary.json").read_text())
        (server,) = run["replay_servers"]
        assert server.startswith("redis://:***@") and "@127.0.0.1:" not in server, server
        assert run["replay_inserted"] == 3000


@pytest.mark.integration
def test_a_grid_on_the_cluster_it_started_keeps_its_redis_servers_on_loopback(tmp_path):
    """A grid without --address starts a cluster of this machine alone: its runs' redis-local servers listen on
    127.0.0.1 (no network address), although each run joins that cluster from a Ray task."""
    out = tmp_path / "grid"
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--algo", "dqn", "--seeds", "0,1", *SHORT,
                           "--actors", "1", "--learner-cpus", "0.5", "--actor-cpus", "0.5", "--replay", "redis-local",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    assert proc.returncode == 0, proc.stderr
    for run in out.glob("*/summary.json"):
        (server,) = json.loads(run.read_text())["replay_servers"]
        assert "@127.0.0.1:" in server, server


@pytest.mark.integration
def test_a_run_no_node_can_hold_is_refused_in_one_line(ray_cluster, tmp_path):
    """The test cluster has 4 CPUs: a run asking for 1 + 8 × 0.5 would wait forever; it is refused."""
    grid = grid_from_args(args_of(["--algo", "dqn,beta_dqn", *SHORT, "--runtime", "ray", "--actors", "8",
                                   "--actor-cpus", "0.5", "--out", str(tmp_path / "g")]))
    with pytest.raises(ConfigError, match=r"--actors: a run needs 5 CPUs .* but the cluster has 4"):
        grid.run()
    assert not (tmp_path / "g").exists()  # nothing left behind: the same command, corrected, can run


def test_a_run_this_machine_can_never_hold_is_refused_before_its_cluster_starts(tmp_path, two_cpu_machine):
    """A grid that would start a Ray cluster of 2 CPUs here is refused by its CPUs before the cluster starts; a
    grid that joins a cluster asks that cluster instead (above)."""
    Started = two_cpu_machine

    def run(*argv):
        grid_from_args(args_of(["--algo", "dqn,beta_dqn", *SHORT, "--runtime", "ray", *argv,
                                "--out", str(tmp_path / "g")])).run()

    with pytest.raises(ConfigError, match=r"--actors: a run needs 3 CPUs \(--learner-cpus 1 \+ --actors 4 × "
                                          r"--actor-cpus 0.5\) but the cluster has 2"):
        run("--actors", "4", "--actor-cpus", "0.5")
    with pytest.raises(ConfigError, match=r"--actors: no node has the learner's \{'CPU': 3.0\} \(--learner-cpus, "
                                          r"--learner-gpus\); the largest has \{'CPU': 2.0\}"):
        run("--learner-cpus", "3")
    with pytest.raises(ConfigError, match=r"a pack \(--pack-seeds\) needs 2.5 CPUs"):
        run("--seeds", "0-2", "--pack-seeds", "3", "--actors", "2", "--actor-cpus", "0.25")
    assert not (tmp_path / "g").exists()
    for fits in (("--actors", "4", "--actor-cpus", "0.25"),  # 1 + 4 × 0.25 = 2
                 ("--actors", "4", "--actor-cpus", "0.5", "--address", "10.0.0.1:6379")):  # a cluster may grow
        with pytest.raises(Started):
            run(*fits)


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_grid_out_that_cannot_be_a_directory_is_one_line_before_anything_starts(tmp_path, where):
    (tmp_path / "f").write_text("mine\n")
    out = tmp_path / "f" if where == "a file" else tmp_path / "f" / "grid"
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--algo", "dqn,beta_dqn", *SHORT, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--out: " in proc.stderr and str(out) in proc.stderr
    assert "is not a directory" in proc.stderr and (tmp_path / "f").read_text() == "mine\n"


@pytest.mark.integration
def test_a_grid_file_that_cannot_be_written_is_one_line(ray_cluster, tmp_path, monkeypatch, capsys):
    """A full disk as grid.json is written: one line naming it, status 1, no grid.json or temp file left."""
    import errno

    import beta_dqn.driver.outputs
    from beta_dqn.launcher.main import main

    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == "grid.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(beta_dqn.driver.outputs.os, "replace", replace)
    grid_dir = tmp_path / "g"
    assert main(["--algo", "dqn,beta_dqn", *SHORT, "--out", str(grid_dir)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"python -m learner.main: cannot write {grid_dir / 'grid.json'} (No space left on device)"]
    assert list(grid_dir.iterdir()) == []


def test_a_grid_ends_with_a_table_for_people(tmp_path):
    runs = [{"name": f"CliffWalk_beta_dqn_bandit-returns=raw_s{s}", "env": "CliffWalk", "algo": "beta_dqn",
             "variant": "bandit-returns=raw", "seed": s, "status": "done", "env_steps_per_s": 2000.0,
             "final_eval": {"success_rate": v, "return_mean": v}} for s, v in ((0, 1.0), (1, 0.5))]
    runs.append({"name": "CliffWalk_dqn_s0", "env": "CliffWalk", "algo": "dqn", "variant": "", "seed": 0,
                 "status": "failed", "error": "NonFiniteLoss: the loss became nan"})
    text = describe_grid({"grid": "g", "runs": runs, "done": 2, "failed": 1, "total": 3, "wall_seconds": 61.2},
                         tmp_path / "g")
    lines = text.splitlines()
    assert lines[0] == "grid g: 2 of 3 runs done, 1 failed, 61 s"
    assert lines[3].split() == ["CliffWalk", "β-DQN", "[bandit-returns=raw]", "2/2", "0.75", "[0.50,", "1.00]",
                                "2,000"]
    assert lines[4].split()[:4] == ["CliffWalk", "DQN", "0/1", "—"]
    assert "  CliffWalk_dqn_s0: NonFiniteLoss: the loss became nan" in lines
    assert lines[-1] == f"report:  python -m learner.report {tmp_path / 'g'}"


def test_a_long_variant_gives_a_short_unique_name():
    from beta_dqn.configuration.flags import run_name

    a, b = "bandit-window=" + "1" * 300, "bandit-window=" + "1" * 299 + "2"
    assert len(run_name("CliffWalk", "beta_dqn", 0, a)) < 255
    assert run_name("CliffWalk", "beta_dqn", 0, a) != run_name("CliffWalk", "beta_dqn", 0, b)
    assert run_name("CliffWalk", "beta_dqn", 0, "count-mode=off") == "CliffWalk_beta_dqn_count-mode=off_s0"


def test_a_run_whose_replay_died_with_it_starts_over_and_a_refusal_crosses_processes_whole():
    """A grid restarts a crashed run from its checkpoint only where its replay survived (memory snapshots, a
    Redis of the user's, a persisted redis-local); and a ConfigError raised in a run's Ray task reaches the
    grid as itself (not retried), not as an unpicklable wrapper (which was retried)."""
    import pickle

    from beta_dqn.launcher.grid_runs import _retryable
    from beta_dqn.launcher.grid_task import _resumable

    assert _resumable({"replay": "memory", "replay_persist": False})
    assert _resumable({"replay": "redis://h:1", "replay_persist": False})
    assert _resumable({"replay": "redis-local", "replay_persist": True})
    assert not _resumable({"replay": "redis-local", "replay_persist": False})
    error = pickle.loads(pickle.dumps(ConfigError("resume", "its data is gone")))
    assert isinstance(error, ConfigError) and str(error) == "--resume: its data is gone" and error.field == "resume"
    assert not _retryable(error)
    # as Ray gives them back: the run's exception as the cause of its RayTaskError, in a process that may not have
    # imported where it comes from
    from ray.exceptions import RayTaskError

    from beta_dqn.driver.outputs import NonFiniteLoss
    from replay_service.redis_shard import ReplayDamaged

    for cause in (NonFiniteLoss("the loss became nan at update 3"), ReplayDamaged("shard 0: a ring cut short")):
        wrapped = RayTaskError("_run_unit", "Traceback ...", cause)
        assert not _retryable(pickle.loads(pickle.dumps(wrapped))), cause
    assert _retryable(RayTaskError("_run_unit", "Traceback ...", RuntimeError("a node was lost")))
