"""A run killed (SIGKILL) after its first checkpoint and resumed with --resume: it reaches the steps asked
for, its evaluations have no gap and no duplicate, the bandit's window is the saved one — for the memory
and the Redis replay."""

import contextlib
import csv
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from beta_dqn.configuration.flags import ConfigError, resolve
from beta_dqn.driver.resume import resume_config
from beta_dqn.driver.run import Run
from beta_dqn.driver.signals import CLUSTER_DRAIN_S, Interrupted, sigterm_interrupts
from tests.terminal import python_module

pytestmark = pytest.mark.integration

TOTAL, EVERY = 12_000, 2_000  # killed at its first checkpoint (3k), a resumed run evaluates 5 times on its own


def start_and_kill(out, replay):
    argv = [sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--runtime", "serial", "--actors", "2",
            "--envs-per-actor", "2", "--total-steps", str(TOTAL), "--eval-every", str(EVERY), "--eval-episodes", "3",
            "--checkpoint-every", "3000", "--learning-starts", "1000", "--wandb", "disabled", "--progress", "false",
            "--replay", replay,
            "--out", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = torch.load(out / "checkpoint.pt", weights_only=True)
    assert saved["counters"]["env_steps"] < TOTAL  # killed mid-run
    return saved


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_resume_after_sigkill(tmp_path, redis_url, backend):
    out = tmp_path / "run"
    replay = redis_url if backend == "redis" else "memory"
    saved = start_and_kill(out, replay)
    # a best.pt of an evaluation after the checkpoint (the killed run went on past it): this resume takes that
    # evaluation again, so best.pt goes back to the checkpoint's best, as the run starts (not before: a resume
    # that cannot start leaves it)
    fake = {**torch.load(out / "best.pt", weights_only=True), "counters": {"env_steps": 99_000}}
    fake["best"] = {**fake["best"], "env_steps": 99_000}
    torch.save(fake, out / "best.pt")
    cfg, ckpt = resume_config(["--resume", str(out), "--progress", "false"]
                              + (["--replay", redis_url] if backend == "redis" else []))
    cfg, spec = resolve(cfg)
    assert (cfg.total_steps, cfg.algo, cfg.run_id) == (TOTAL, "beta_dqn", saved["config"]["run_id"])
    run = Run(cfg, spec, ckpt)
    assert torch.load(out / "best.pt", weights_only=True)["best"]["env_steps"] == 99_000
    assert saved["best"]["env_steps"] <= saved["counters"]["env_steps"]
    window = run.backend.get(run.backend.call(run.parts.arm_source, "state_dict"))["window"]
    assert window == saved["arm_source"]["window"] and len(window) > 0
    summary = run.run()
    assert summary["env_steps"] == TOTAL and summary["updates"] == (TOTAL - cfg.learning_starts) // 4
    with open(out / "evals.csv") as f:
        steps = [int(row["env_steps"]) for row in csv.DictReader(f)]
    assert steps == list(range(EVERY, TOTAL + 1, EVERY))  # no gap, no duplicate
    # best.pt: the evaluation with the highest success rate over both lives, the earliest of a tie
    with open(out / "evals.csv") as f:
        rates = [(float(row["success_rate"]), -int(row["env_steps"])) for row in csv.DictReader(f)]
    best = torch.load(out / "best.pt", weights_only=True)["best"]
    assert (best["score"], -best["env_steps"]) == max(rates)  # (never the 99,000 of the later evaluation)
    if backend == "redis":  # every transition of both lives is in the replay, none twice
        assert summary["replay_inserted"] == TOTAL


def test_resume_refuses_a_changed_algorithm(tmp_path, redis_url):
    out = tmp_path / "run"
    start_and_kill(out, "memory")
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(out), "--algo", "dqn"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "--algo: 'dqn' differs from the run being resumed ('beta_dqn')" in proc.stderr


def test_resume_refuses_a_flag_named_at_its_default_that_the_run_did_not_use(tmp_path):
    """`--beta-thread true` is the default, but this run saved false: naming it is a change, refused (before,
    only values off their default counted as given, and the run went on as saved without a word)."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--runtime", "serial",
                           "--beta-thread", "false", "--total-steps", "600", "--learning-starts", "200",
                           "--eval-every", "600", "--eval-episodes", "1", "--checkpoint-every", "300", "--out",
                           str(out), "--progress", "false", "--wandb", "disabled"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(ConfigError, match="--beta-thread: True differs from the run being resumed \\(False\\)"):
        resume_config(["--resume", str(out), "--beta-thread", "true"])
    cfg, _ = resume_config(["--resume", str(out), "--beta-thread", "false"])
    assert cfg.value("beta_thread") is False


def test_a_lost_redis_local_replay_is_refused_and_no_server_outlives_its_run(tmp_path):
    out = tmp_path / "run"
    start_and_kill(out, "redis-local")  # not persisted
    # the run's server followed its process (SIGKILL) instead of staying behind
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", f"{out}/redis/shard0"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "the killed run's redis-server is still running"
        time.sleep(0.1)
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "was not persisted (--replay-persist)" in proc.stderr



def test_a_redis_namespace_belongs_to_one_run(tmp_path, redis_url, capsys):
    """Another run directory's --run-id is not taken by --overwrite alone; taken with --take-run-id, the run that
    owned it can no longer resume on it (its rings carry another claim), said in one line."""
    from beta_dqn.launcher.main import main

    saved = start_and_kill(tmp_path / "owner", redis_url)
    run_id, claim = saved["config"]["run_id"], saved["replay_claim"]
    assert len(claim) == 16
    import redis

    client = redis.Redis.from_url(redis_url)
    keys = sorted(client.keys(f"bdqn:{run_id}:*"))
    stored = {k: client.dump(k) for k in keys}
    short = ["--env", "CliffWalk", "--runtime", "serial", "--actors", "1", "--total-steps", "1200",
             "--learning-starts", "400", "--eval-every", "600", "--eval-episodes", "2", "--wandb", "disabled",
             "--progress", "false", "--replay", redis_url, "--run-id", run_id, "--overwrite", "true",
             "--out", str(tmp_path / "other")]
    capsys.readouterr()
    assert main(short) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--run-id: '{run_id}' is claimed on this Redis by another run directory (run " \
        f"{run_id} writing {(tmp_path / 'owner').resolve()} since " in err[0] and "--take-run-id true" in err[0]
    assert {k: client.dump(k) for k in keys} == stored  # nothing taken, nothing rewound
    assert main([*short, "--take-run-id", "true"]) == 0
    capsys.readouterr()
    assert main(["--resume", str(tmp_path / "owner"), "--replay", redis_url, "--progress", "false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--resume: the replay of run id '{run_id}' on this Redis is no longer this run's: " \
        f"its rings carry claim " in err[0] and f"not this checkpoint's {claim}" in err[0]


@pytest.fixture
def signalled(monkeypatch):
    """A SIGTERM of this test's own: a handler that ignores it stands outside the block (were the block's not
    installed, the default would end pytest itself), and the process's record that one arrived is the test's."""
    import beta_dqn.driver.signals

    monkeypatch.setattr(beta_dqn.driver.signals, "_SIGNALLED", threading.Event())
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    yield
    signal.signal(signal.SIGTERM, previous)


def _said(err: str) -> list[str]:
    """stderr's lines as a terminal shows them (what follows a line's last carriage return)."""
    return [line.split("\r")[-1] for line in err.split("\n") if line.split("\r")[-1].strip()]


def _sigterm_while_blocked(seconds: float = 2.0) -> None:
    """A SIGTERM to this process 0.2 s on, while the main thread blocks it for `seconds`: the kernel gives it to
    another thread (the watcher's), and the KeyboardInterrupt waits for the main thread's next bytecode."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        time.sleep(seconds)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def test_a_sigterm_says_how_to_continue_as_it_arrives_and_once(capfd, signalled):
    """The line is said as the SIGTERM arrives, while the main thread cannot run Python (as inside a Ray call
    whose cluster is gone, or before Ray's core ends the process itself), on a line of its own (a live
    progress bar drawn again after it), and not again as the interrupt leaves."""
    from tqdm import tqdm

    said = []

    def line():
        said.append(time.monotonic())
        return "the line"

    start = time.monotonic()
    with pytest.raises(Interrupted):
        with sigterm_interrupts(line), tqdm(total=10, file=sys.stderr) as bar:
            bar.update(3)
            _sigterm_while_blocked()
    raised = time.monotonic()
    lines = _said(capfd.readouterr().err)
    assert lines.count("the line") == 1, lines
    assert said[0] - start < 1.5 and raised - start >= 2.0, (said, start, raised)


def test_an_error_a_sigterm_led_to_is_the_interrupt(capfd, signalled):
    """What the SIGTERM brought about (an actor it ended too) leaves as the interrupt after its line; an error
    of ours is said too, in a line of its own; an error with no signal leaves as itself, with no line."""
    spoken = threading.Event()

    def line():
        spoken.set()
        return "the line"

    for error, said in ((type("RayActorError", (RuntimeError,), {"__module__": "ray.exceptions"}), ["the line"]),
                        (OSError, ["the line", "warning: OSError: what it led to"])):
        spoken.clear()
        with pytest.raises(Interrupted):
            with sigterm_interrupts(line):
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(30)
                except KeyboardInterrupt:
                    assert spoken.wait(30)  # (the watcher said it)
                    raise error("what it led to") from None
        assert _said(capfd.readouterr().err) == said
    with pytest.raises(RuntimeError):
        with sigterm_interrupts(line):
            raise RuntimeError("no signal")
    assert _said(capfd.readouterr().err) == []


def test_a_line_out_of_date_on_the_way_out_is_said_again(capfd, signalled):
    """The line is what stood when the signal arrived; what was written since (a checkpoint the run was finishing)
    is said as the interrupt leaves. A line that cannot be worked out is still an interrupt's line."""
    state = {"where": "no checkpoint yet"}
    with pytest.raises(Interrupted):
        with sigterm_interrupts(lambda: state["where"]):
            try:
                _sigterm_while_blocked(1.0)
            finally:
                state["where"] = "from its last checkpoint"
    assert _said(capfd.readouterr().err) == ["no checkpoint yet", "from its last checkpoint"]
    with pytest.raises(Interrupted):
        with sigterm_interrupts(lambda: 1 / 0):
            raise KeyboardInterrupt
    assert _said(capfd.readouterr().err) == [
        "python -m learner.main: interrupted (ZeroDivisionError finding where to continue)"]


def test_a_ctrl_c_says_how_to_continue_once_as_it_leaves(capfd):
    """Ctrl-C (SIGINT, no watcher): the line as the KeyboardInterrupt leaves the block, once."""
    with pytest.raises(Interrupted):
        with sigterm_interrupts(lambda: "the line"):
            raise KeyboardInterrupt
    assert _said(capfd.readouterr().err) == ["the line"]


def test_a_ctrl_c_inside_a_condition_wait_is_still_the_interrupt(capfd):
    """A Ctrl-C that lands inside CPython's `Condition.wait` (the learner waiting on β's update, a Future) between
    the lock's release and the `try` that takes it back leaves the `with` as "RuntimeError: cannot release
    un-acquired lock", the interrupt its context (a stop's CI saw it: status 1, a traceback). It is the
    interrupt: the line once, `Interrupted`, no traceback. Another error raised on the interrupt's way out (as
    the run closes) is the interrupt too, and said in a warning line after it."""
    cond = threading.Condition()
    release = cond._release_save

    def release_then_interrupt():  # (the signal arrives right after the release, as it did)
        state = release()
        raise KeyboardInterrupt
        return state

    cond._release_save = release_then_interrupt
    with pytest.raises(RuntimeError, match="un-acquired lock"):  # (what CPython does, without the block)
        with cond:
            cond.wait(1)
    with pytest.raises(Interrupted):
        with sigterm_interrupts(lambda: "the line"):
            with cond:
                cond.wait(1)
    assert _said(capfd.readouterr().err) == ["the line"]
    with pytest.raises(Interrupted):  # an error of ours on the interrupt's way out: the interrupt, not hidden
        with sigterm_interrupts(lambda: "the line"):
            try:
                raise KeyboardInterrupt
            finally:
                raise OSError("the disk is full")
    assert _said(capfd.readouterr().err) == ["the line", "warning: OSError: the disk is full"]
    with pytest.raises(RuntimeError):  # (an error with no interrupt behind it stays itself)
        with sigterm_interrupts(lambda: "the line"):
            try:
                raise ValueError("not an interrupt")
            except ValueError:
                raise RuntimeError("cannot release un-acquired lock") from None
    assert _said(capfd.readouterr().err) == []


def test_a_serial_run_in_a_grids_ray_task_leaves_the_workers_sigterm_to_ray(ray_cluster, tmp_path):
    """A grid runs a serial run inside a Ray task, in the main thread of Ray's worker: the run leaves that process's
    SIGTERM to Ray (which ends its worker with it) instead of taking it as an interrupt of its own, whose line would
    tell the user to resume a run the grid resumes. A serial run in a process of its own takes it (the test below)."""

    @ray_cluster.remote
    def run_and_look(out: str) -> list[bool]:
        from beta_dqn.configuration.flags import Config
        from beta_dqn.driver.outputs import RunLogger

        before, same = signal.getsignal(signal.SIGTERM), []
        log_eval = RunLogger.log_eval

        def look(self, result):
            same.append(threading.current_thread() is threading.main_thread()
                        and signal.getsignal(signal.SIGTERM) is before)
            log_eval(self, result)

        RunLogger.log_eval = look
        try:
            from beta_dqn.driver.run import train

            train(*resolve(Config.of(env="CliffWalk", runtime="serial", actors=1, total_steps=2_000, eval_every=1_000,
                                  eval_episodes=2, learning_starts=500, wandb="disabled", progress=False, out=out)))
        finally:
            RunLogger.log_eval = log_eval
        return same

    assert ray_cluster.get(run_and_look.remote(str(tmp_path / "run"))) == [True, True]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_a_run_in_one_line_that_says_where_to_continue(tmp_path, sig):
    """Ctrl-C or `kill` (to the process or its group): the run ends within seconds, status 130, one line naming
    the directory to resume (no traceback); the resume then finishes it."""
    out = tmp_path / "run"
    # with Ctrl-C as in a terminal (a suite started in the background ignores SIGINT: tests/terminal.py)
    argv = python_module("learner.main", "--env", "CliffWalk", "--runtime", "serial", "--actors", "1",
                         "--total-steps", str(TOTAL), "--eval-every", str(EVERY), "--eval-episodes", "2",
                         "--checkpoint-every", "3000", "--learning-starts", "1000", "--wandb", "disabled",
                         "--progress", "false", "--out", str(out))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (out / "checkpoint.pt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)  # the whole group, as `timeout` and `kill -- -PGID` send it
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert took < 10 and proc.returncode == 130, (took, proc.returncode, err[-2000:])
    assert err.strip().splitlines() == [f"python -m learner.main: interrupted; continue with --resume {out} (from its "
                                        "last checkpoint)"]
    done = subprocess.run([sys.executable, "-m", "learner.main", "--resume", str(out), "--progress", "false"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out / "evals.csv") as f:
        assert [int(row["env_steps"]) for row in csv.DictReader(f)] == list(range(EVERY, TOTAL + 1, EVERY))


def _ray_run(out, grid: bool):
    argv = [sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--actors", "1", "--total-steps", "200000",
            "--checkpoint-every", "2000", "--learning-starts", "1000", "--wandb", "disabled", "--progress", "false",
            "--out", str(out), *(["--seeds", "0"] if grid else [])]
    # as from a shell: not with the RAY_AUTH_MODE=token that Ray put into this process's environment when the
    # suite's own cluster started (conftest's ray_cluster), which would keep Ray's token notice from being said
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)
    checkpoint = (out / "CliffWalk_beta_dqn_s0" if grid else out) / "checkpoint.pt"
    deadline = time.monotonic() + 180
    while not checkpoint.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.2)
    import psutil

    return proc, psutil.Process(proc.pid).children(recursive=True)


def _ray_ended(pid: int, since: float) -> bool:
    """Whether Ray's core ended the driver `pid` itself, as its log written since `since` (monotonic) says."""
    from ray._common.utils import get_default_ray_temp_dir  # (where Ray's sessions are: RAY_TMPDIR, TMPDIR, /tmp)

    wall = time.time() - (time.monotonic() - since)
    for log in Path(get_default_ray_temp_dir()).glob(f"session_*/logs/python-core-driver-*_{pid}.log"):
        if log.stat().st_mtime >= wall - 1:
            text = log.read_text(errors="replace")
            if "Terminate the process" in text or "Exiting because the Raylet IPC connection failed" in text:
                return True
    return False


def _left(processes, seconds: float) -> list[str]:
    """The processes (started under the driver) still running `seconds` after now."""
    import psutil

    time.sleep(seconds)
    left = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                left.append(" ".join(p.cmdline()[:2])[:80])
        except psutil.Error:
            pass
    return left


@pytest.mark.parametrize("grid", [False, True])
def test_sigterm_to_a_ray_runs_process_group_ends_it_in_seconds_and_leaves_no_ray_process(tmp_path, grid):
    """`kill -- -PGID` (what `timeout` and schedulers send) reaches Ray's own processes too: the run still ends
    within seconds in one line naming where to continue, and none of Ray's processes lives on."""
    out = tmp_path / "run"
    proc, ray_processes = _ray_run(out, grid)
    assert len(ray_processes) >= 3  # gcs, raylet, workers, agents
    os.killpg(proc.pid, signal.SIGTERM)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=120)
    # What this bounds is Ray's minute-long wait on a GCS that is gone (the watcher ends the run once the local
    # cluster has ended, and waits at most CLUSTER_DRAIN_S for that): not how fast Ray's raylet drains its workers
    # on a SIGTERM, which is Ray's and the machine's (about 8 s of a run's 12-13 s here beside a training grid,
    # 15.6 s once under the suite and the grid; a grid's raylet about 10 s)
    assert CLUSTER_DRAIN_S + 10 < 60  # below Ray's wait on a gone GCS (a minute): else this bound would hide it
    assert time.monotonic() - sent < CLUSTER_DRAIN_S + 10, err
    # status 130; or Ray's 1 where its raylet ended at once, taking its object store with it, and Ray's core in
    # the driver ended the process itself (`QuickExit`, said in the driver's log) before the watcher could: a
    # race no Python code wins (`bench/sigterm.py --tries 20` here: 1 of 20, the SIGTERM 0-4 s after a
    # checkpoint). The line was said as the signal arrived, either way (in all 20)
    assert proc.returncode == 130 or (proc.returncode == 1 and _ray_ended(proc.pid, sent)), (proc.returncode, err)
    ours = [line for line in err.strip().splitlines() if line.startswith("python -m learner.main")]
    said = (f"grid interrupted; continue it with --resume {out}" if grid
            else f"interrupted; continue with --resume {out} (from its last checkpoint)")
    assert ours == [f"python -m learner.main: {said}"]
    assert "Traceback" not in err
    # what Ray said on every healthy run, and a new user read first: its token notice (the local cluster uses
    # token authentication, as this project wants) and, from its core, that a restartable actor's arguments
    # were in the object store (a grid's runs make their actors in Ray's task processes, whose lines do not
    # reach this terminal: only the single run can show that one)
    assert "Token authentication is enabled" not in err and "constructor arguments" not in err, err
    assert _left(ray_processes, 5) == []


def test_a_killed_drivers_ray_processes_end_within_seconds(tmp_path):
    """SIGKILL to the driver: nothing of ours runs, yet Ray's processes (its agents wait minutes on a GCS that is
    gone) end within seconds: the reaper, a process of its own outside the group, sees the driver's pipe close."""
    proc, ray_processes = _ray_run(tmp_path / "run", grid=False)
    proc.kill()
    proc.communicate(timeout=60)
    assert _left(ray_processes, 8) == []


def test_where_to_continue_says_a_finished_run_finished(tmp_path):
    """A run whose summary is written (a signal in its last seconds) has nothing to continue, checkpoint or not."""
    from beta_dqn.driver.state import where_to_continue

    (tmp_path / "checkpoint.pt").write_bytes(b"")
    assert where_to_continue(tmp_path).startswith("continue with --resume")
    (tmp_path / "summary.json").write_text("{}")
    assert where_to_continue(tmp_path) == f"it had finished: its outputs are in {tmp_path}"


def test_an_interrupt_before_the_run_says_so_and_an_error_on_its_way_out_beside_it(monkeypatch, capfd):
    """A Ctrl-C before the run's own handling starts (as the configuration is read) ends the command with status
    130 and one line; an error raised on its way out (a `finally` that fails) is the interrupt too, and said in
    a warning line after it, not hidden and not a traceback."""
    import beta_dqn.launcher.main as cli

    def interrupted(*args):
        try:
            raise KeyboardInterrupt
        finally:
            raise OSError("No space left on device")

    monkeypatch.setattr(cli, "for_run", interrupted)  # (the run's configuration from the command line's values)
    assert cli.main(["--env", "CliffWalk"]) == 130
    assert _said(capfd.readouterr().err) == ["python -m learner.main: interrupted before the run started",
                                            "warning: OSError: No space left on device"]


def test_a_runs_interrupt_said_already_is_not_said_again_when_an_error_follows_it(monkeypatch, capfd, tmp_path):
    """The run said where to continue (its interrupt leaves as Interrupted); an error after it, on the command's
    way out (behind a second Ctrl-C), is said in a warning line, with no second interrupt line that would say
    the run never started."""
    import beta_dqn.driver.run
    import beta_dqn.launcher.main as cli

    def interrupted(cfg, spec, resume):
        raise Interrupted

    @contextlib.contextmanager
    def failing_on_exit(path):  # (a second Ctrl-C on the way out, then an error while it is handled)
        try:
            yield
        finally:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                raise OSError("stdout is gone")  # noqa: B904 - the chain as it would be

    monkeypatch.setattr(beta_dqn.driver.run, "train", interrupted)
    monkeypatch.setattr(cli, "_quiet_stdout", failing_on_exit)
    assert cli.main(["--env", "CliffWalk", "--out", str(tmp_path / "run")]) == 130
    assert _said(capfd.readouterr().err) == ["warning: OSError: stdout is gone"]
