"""The second hostile pass (issue 50): every writer as safe as a run's, special files, full disks and runs
that cannot learn. Real links, real FIFOs, real devices, a real full or read-only tmpfs (root and mount
namespaces: skipped elsewhere, with the reason)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beta_dqn.configuration.flags import Config, OutputError, fit_warning, no_update_error, resolve
from beta_dqn.files import OutputDirectory, lock_directory
from beta_dqn.reporting.cost import markdown_text
from beta_dqn.reporting.report import ReportError, finite, write_report
from beta_dqn.reporting.report import main as report_main
from tests.test_real_disks import _can_mount, _in_namespace
from tests.test_report import make_run

ROOT = Path(__file__).resolve().parents[1]
COST = {"command": "python bench/cost.py", "cost_percent": {"dqn": 100.0, "beta_dqn": 150.0}}


def _runs(root: Path, envs=("CliffWalk",)) -> Path:
    for env in envs:
        for seed in (0, 1):
            make_run(root, env, "dqn", seed, 0.5 + seed / 4, 1000.0)
    return root


def _one_line(stderr: str, start: str) -> str:
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith(start), stderr
    return stderr


mounts = pytest.mark.skipif(not _can_mount(), reason="needs root and mount namespaces (unshare -m) for a tmpfs")


# 1. links planted in --out

def test_a_report_never_writes_through_a_link_planted_in_its_out(tmp_path):
    runs = _runs(tmp_path / "runs")
    out = tmp_path / "out"
    write_report([runs], out)  # an earlier report: its entries may be replaced
    victims = {name: tmp_path / f"victim-{name}" for name in ("report.md", "runs.csv", "curves_CliffWalk.png")}
    for name, victim in victims.items():
        victim.write_text("a user's file")
        (out / name).rename(tmp_path / "kept")
        (out / name).symlink_to(victim)
        with pytest.raises(ReportError, match=rf"{out / name} is a symbolic link: a report never writes through"):
            write_report([runs], out)
        assert victim.read_text() == "a user's file" and (out / name).is_symlink()
        (out / name).unlink()
        (tmp_path / "kept").rename(out / name)
    linked = tmp_path / "linked-out"
    linked.symlink_to(out)
    with pytest.raises(ReportError, match="linked-out is a symbolic link"):
        write_report([runs], linked)


# 2. a user's directory, a run's directory

def test_a_report_refuses_a_users_directory_and_a_runs_directory(tmp_path):
    runs = _runs(tmp_path / "runs")
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("report.md", "report.json", "study.json", "runs.csv", "notes.txt"):
        (mine / name).write_text(f"my {name}")
    with pytest.raises(ReportError, match=r"mine holds other files \('notes.txt' …\) and no earlier output of a "
                                          r"report: give a new or empty directory"):
        write_report([runs], mine)
    assert all((mine / n).read_text() == f"my {n}" for n in ("report.md", "report.json", "study.json", "runs.csv"))
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "report.json", "report.md", "runs.csv",
                                                       "study.json"]  # (no lock, no stage left)
    run = next(runs.iterdir())
    other = _runs(tmp_path / "other")
    with pytest.raises(ReportError, match=rf"--out {run} is a run's directory \(it holds config.json\)"):
        write_report([other], run)
    assert not (run / "report.md").exists()


def test_a_users_files_beside_an_earlier_report_are_kept_and_named(tmp_path, capsys):
    runs = _runs(tmp_path / "runs")
    out = tmp_path / "out"
    write_report([runs], out)
    (out / "README.md").write_text("what this study is")
    write_report([runs], out)
    assert (out / "README.md").read_text() == "what this study is"
    said = capsys.readouterr().err
    assert f"note: {out} holds an earlier report and other files, kept as they are: README.md" in said


# 3. two reports at once; stale copies

def test_a_second_report_on_one_out_names_the_holder_and_a_later_one_leaves_nothing_stale(tmp_path):
    runs = _runs(tmp_path / "runs", envs=("CliffWalk", "MinAtar/Breakout"))
    out = tmp_path / "out"
    write_report([runs], out)
    assert (out / "curves_MinAtar-Breakout.png").is_file()
    before = (out / "report.md").read_text()
    held = lock_directory(out, OutputDirectory.LOCK)  # another writer, mid-report
    try:
        with pytest.raises(ReportError, match=rf"{out} is in use by process {os.getpid()} on .*: one process "
                                              "writes a report there at a time"):
            write_report([runs], out, seeds="0")
    finally:
        held.close()
    assert (out / "report.md").read_text() == before
    write_report([runs], out, seeds="0", column_flags="")  # fewer runs: the copies of the others go
    copies = sorted(p.name for p in (out / "runs").iterdir())
    assert copies and all(name.endswith("_s0") for name in copies), copies
    only = tmp_path / "only"
    shutil.copytree(runs, only, ignore=shutil.ignore_patterns("MinAtar*"))
    write_report([only], out)
    assert not (out / "curves_MinAtar-Breakout.png").exists() and (out / "curves_CliffWalk.png").is_file()
    assert not [p.name for p in out.iterdir() if p.name.startswith(".report-")]


# 4. write failures are one line, and true

def test_out_an_existing_file_is_one_line(tmp_path):
    runs = _runs(tmp_path / "runs")
    (tmp_path / "afile").write_text("x")
    proc = subprocess.run([sys.executable, "-m", "learner.report", str(runs), "--out", str(tmp_path / "afile")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    _one_line(proc.stderr, f"python -m learner.report: error: {tmp_path / 'afile'} exists and is not a directory")
    assert (tmp_path / "afile").read_text() == "x"


@mounts
def test_a_report_on_a_full_disk_and_on_a_read_only_one_is_one_line_and_leaves_no_half_report(tmp_path):
    runs = _runs(tmp_path / "runs", envs=("CliffWalk", "MinAtar/Breakout"))
    disk = tmp_path / "disk"
    report = f'"$PY" -m learner.report {runs} --out {disk}/out'
    done = _in_namespace(f"mount -t tmpfs -o size=48k tmpfs {disk} && {report}; echo status=$? >&2; "
                         f"ls -A {disk}/out >&2; umount {disk}; "
                         f"mount -t tmpfs -o ro,size=64k tmpfs {disk} && {report}; echo status=$? >&2", disk)
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and lines.count("status=2") == 2, done.stderr
    full, left, ro = lines[0], lines[2:-2], lines[-2]
    assert full.startswith(f"python -m learner.report: error: cannot write {disk}/out") and \
        full.endswith("(No space left on device); no report was written"), full
    assert left == [OutputDirectory.LOCK], left  # no report.md, no figure, no stage: the lock file alone
    assert ro == (f"python -m learner.report: error: cannot write {disk}/out (Read-only file system); no report "
                  "was written"), ro


@mounts
def test_a_run_started_on_a_full_disk_is_one_line_and_leaves_no_lock(tmp_path):
    disk = tmp_path / "disk"
    out = disk / "run"
    done = _in_namespace(f"mount -t tmpfs -o size=16k tmpfs {disk} && mkdir {out} && "
                         f"(head -c 1000000 /dev/zero > {disk}/filler || true) && "
                         f'"$PY" -m learner.main --env CliffWalk --total-steps 600 --learning-starts 100 --out {out} '
                         "--eval-every 300 --wandb disabled --progress false; echo status=$? >&2; "
                         f"ls -A {out} >&2", disk)
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith(("head:", "warning:"))]
    assert "Traceback" not in done.stderr and "status=2" in lines, done.stderr
    assert lines[0] == (f"python -m learner.main: error: --out: cannot write the run directory {out} (No space left "
                        "on device)"), lines
    assert lines[-1] == "status=2"  # the directory is empty again: no .lock left


def test_a_failed_first_checkpoint_does_not_say_an_earlier_one_is_intact(tmp_path):
    from beta_dqn.driver.state import write_checkpoint

    gone = tmp_path / "gone"  # (a directory removed under the run: the write fails, nothing was ever written)
    with pytest.raises(OutputError) as caught:
        write_checkpoint(gone, {"counters": {}})
    assert str(caught.value) == (f"cannot write {gone / 'checkpoint.pt'} (No such file or directory); no checkpoint "
                                 "was written yet, so there is none to continue from")


# 5. special files given by flag

def test_cost_and_password_files_that_are_devices_fifos_huge_or_not_utf8_are_one_line(tmp_path):
    from replay_service.redis_urls import RedisSetupError, given_password

    runs = _runs(tmp_path / "runs")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    big.write_text(" " * (2 << 20))
    for path, said in (("/dev/zero", "is not a regular file (a device)"), (fifo, "is not a regular file (a FIFO)"),
                       (big, "is larger than 1024 KiB")):
        proc = subprocess.run([sys.executable, "-m", "learner.report", str(runs), "--out", str(tmp_path / "o"),
                               "--cost", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert said in _one_line(proc.stderr, f"python -m learner.report: error: --cost {path}")
    latin = tmp_path / "latin.pass"
    latin.write_bytes(b"s\xe9cret\n")
    for path, said in (("/dev/zero", "is not a regular file (a device)"), (fifo, "is not a regular file (a FIFO)"),
                       (latin, "is not UTF-8 text (byte 1)")):
        with pytest.raises(RedisSetupError) as caught:
            given_password(str(path))
        assert str(caught.value) == f"the password file {path} {said}" and "cret" not in str(caught.value)
    with pytest.raises(RedisSetupError, match=r"^cannot read the password file /nonexistent/p \(No such file"):
        given_password("/nonexistent/p")


# 6. numbers and text from files

def test_costs_out_of_range_are_refused_and_report_json_is_always_valid_json(tmp_path):
    runs = _runs(tmp_path / "runs")
    make_run(runs, "CliffWalk", "beta_dqn", 0, 1.0, 500.0)
    make_run(runs, "CliffWalk", "beta_dqn", 1, 1.0, 500.0)
    (tmp_path / "tiny.json").write_text(json.dumps({**COST, "cost_percent": {"dqn": 1e-300, "beta_dqn": 150.0}}))
    with pytest.raises(ReportError, match=r"cost_percent\['dqn'\] is 1e-300, where a positive finite number belongs "
                                          r"\(a percentage of DQN's cost, 0.01 to 1,000,000\)"):
        write_report([runs], tmp_path / "o", cost=tmp_path / "tiny.json")
    assert finite({"a": [float("inf"), 1.0], "b": float("nan")}) == {"a": [None, 1.0], "b": None}
    # text fields of a cost file: no heading or table row of their own in report.md
    (tmp_path / "cost.json").write_text(json.dumps({**COST, "env": "x\n## Injected\n| a | b |", "device": "`cpu`"}))
    report = write_report([runs], tmp_path / "o", cost=tmp_path / "cost.json")
    lines = report.read_text().splitlines()
    assert not any(line.startswith(("## Injected", "| a")) for line in lines)
    assert "x \\#\\# Injected \\| a \\| b \\|" in report.read_text() and "\\`cpu\\`" in report.read_text()
    json.loads((report.parent / "report.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert markdown_text("a" * 500).endswith("…") and len(markdown_text("a" * 500)) == 120


@pytest.mark.parametrize("script", ["learner.report", "results/bandit-returns/verdict.py",
                                    "results/beta-epsilon/verdict.py"])
def test_reps_is_bounded_and_argument_errors_are_one_line(tmp_path, script, capsys):
    command = [sys.executable, *(["-m", script, str(tmp_path)] if script == "learner.report" else [script])]
    for reps, said in (("10000000000", "--reps 10000000000: give 100 to 1,000,000 resamples"),
                       ("many", "argument --reps: invalid int value: 'many'")):
        proc = subprocess.run([*command, "--reps", reps], cwd=ROOT, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})  # (this checkout's reporting)
        assert proc.returncode == 2 and said in _one_line(proc.stderr, "")
    assert report_main([str(tmp_path), "--reps", "99"]) == 2
    assert "give 100 to 1,000,000 resamples" in capsys.readouterr().err


# 7. runs that cannot learn say so before they start

def test_a_run_that_would_make_no_update_is_refused_unless_learning_starts_is_named(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--total-steps", "2000",
                           "--out", str(out), "--wandb", "disabled"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and not out.exists()
    _one_line(proc.stderr, "python -m learner.main: error: --learning-starts: 5,000 (the default for CliffWalk) is "
                           "not below --total-steps 2,000: the run would act at random throughout")
    grid = subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--algo", "dqn,beta_dqn",
                           "--total-steps", "2000", "--out", str(tmp_path / "grid"), "--wandb", "disabled"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert grid.returncode == 2 and not (tmp_path / "grid").exists()
    _one_line(grid.stderr, "python -m learner.main: error: --learning-starts: 5,000 (the default for CliffWalk)")
    named = subprocess.run([sys.executable, "-m", "learner.main", "--env", "CliffWalk", "--algo", "dqn",
                            "--total-steps", "1000", "--learning-starts", "5000", "--eval-every", "1000",
                            "--eval-episodes", "1", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "1",
                            "--out", str(out), "--wandb", "disabled", "--progress", "false", "--json", "true"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)  # random acting, as asked
    assert named.returncode == 0, named.stderr
    assert "warning: --learning-starts 5,000 is not below --total-steps 1,000" in named.stderr
    assert json.loads(named.stdout)["updates"] == 0
    cfg, _ = resolve(Config.of(env="CliffWalk", total_steps=2000))
    assert no_update_error(cfg) is not None
    assert no_update_error(resolve(Config.of(env="CliffWalk", total_steps=6000))[0]) is None


def test_a_bandit_window_beyond_the_run_and_actors_the_budget_cannot_feed_warn_in_one_line():
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="beta_dqn", total_steps=2000, learning_starts=100,
                            eval_every=1000, bandit_window=5000))
    assert fit_warning(cfg) == ("warning: --bandit-window 5,000 episodes is more than the run can have (at most "
                                "2,000, one a step): the meta-controller's window never fills")
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="dqn", total_steps=2000, learning_starts=100, eval_every=1000,
                            actors=100_000))
    assert fit_warning(cfg) == ("warning: --actors 100,000 × --chunk-steps 64 is more env steps than --total-steps "
                                "2,000: some actors never collect a chunk")
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="beta_dqn", total_steps=200_000))
    assert fit_warning(cfg) is None


# 8. the rest

def test_install_sh_fails_in_one_line_per_step(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    script = str(ROOT / "deploy" / "install.sh")
    proc = subprocess.run(["bash", script, "--tset"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    _one_line(proc.stderr, "deploy/install.sh: unknown option '--tset'; give none (the runtime) or --test")
    proc = subprocess.run(["bash", script], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1
    _one_line(proc.stderr, "deploy/install.sh: no virtual environment is active")
    fake = tmp_path / "bin"  # a pip that fails as pip does: a page of output, its reason on an ERROR: line
    fake.mkdir()
    (fake / "pip").write_text("#!/bin/sh\nfor i in $(seq 20); do echo \"  line $i\"; done\n"
                              "echo 'ERROR: Could not find a version that satisfies the requirement pip' >&2\n"
                              "exit 1\n")
    (fake / "pip").chmod(0o755)
    proc = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                          env={**env, "VIRTUAL_ENV": str(tmp_path), "PATH": f"{fake}:{env['PATH']}"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("deploy/install.sh: upgrading pip failed: ERROR: Could not find a version that satisfies "
                           "the requirement pip\n")


def test_resume_names_the_keys_it_drops_from_a_hand_edited_config(tmp_path, capsys):
    from beta_dqn.driver.resume import _check_directory

    saved = {"run_id": "r1", "env": "CliffWalk", "seed": 0}
    (tmp_path / "config.json").write_text(json.dumps({**saved, "my_note": "tried lr 1e-3", "api_token": "t0p"}))
    _check_directory(tmp_path, saved)
    err = capsys.readouterr().err
    assert err == (f"warning: {tmp_path / 'config.json'} has keys this program does not read, dropped as the run "
                   "continues (config.json is written again from the checkpoint): 'api_token', 'my_note'\n")
    (tmp_path / "config.json").write_text(json.dumps(saved))
    _check_directory(tmp_path, saved)
    assert capsys.readouterr().err == ""


def test_a_reports_copies_of_the_runs_carry_only_known_fields(tmp_path):
    runs = _runs(tmp_path / "runs")
    for config in runs.glob("*/config.json"):
        config.write_text(json.dumps({**json.loads(config.read_text()), "api_token": "s3cret", "my_note": "x"}))
    out = write_report([runs], tmp_path / "out").parent
    copies = list((out / "runs").glob("*/config.json"))
    assert copies and all("s3cret" not in c.read_text() and "my_note" not in c.read_text() for c in copies)
    assert all(json.loads(c.read_text())["env"] == "CliffWalk" for c in copies)


def test_redis_local_keeps_its_data_owner_only(tmp_path):
    from replay_service.local_redis import LocalServer, RedisSetupError, redis_server_binary

    try:
        redis_server_binary()
    except RedisSetupError as e:
        pytest.skip(str(e))
    server = LocalServer(tmp_path / "redis", persist=True).start()
    try:
        import redis

        redis.Redis.from_url(server.url).set("k", "v")
    finally:
        server.stop()
    assert (tmp_path / "redis").stat().st_mode & 0o777 == 0o700
    made = [p for p in (tmp_path / "redis").rglob("*") if p.is_file()]
    assert made and all(p.stat().st_mode & 0o077 == 0 for p in made), [(p, oct(p.stat().st_mode)) for p in made]


def test_a_retired_env_id_is_one_line_without_gymnasiums_warning_before_it(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "learner.main", "--env", "Reacher-v2", "--out", str(tmp_path / "r"),
                           "--wandb", "disabled"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "WARN" not in proc.stderr
    _one_line(proc.stderr, "python -m learner.main: error: --env: env 'Reacher-v2' is registered with Gymnasium but "
                           "cannot be made here")


def test_a_benchmarks_json_is_written_whole_never_through_a_link_and_fails_in_one_line(tmp_path):
    from bench.machine import write_json

    victim = tmp_path / "victim.json"
    victim.write_text("a user's file")
    (tmp_path / "out.json").symlink_to(victim)
    write_json(tmp_path / "out.json", {"rows": [1]})
    assert victim.read_text() == "a user's file" and not (tmp_path / "out.json").is_symlink()
    assert json.loads((tmp_path / "out.json").read_text()) == {"rows": [1]}
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit, match=rf"cannot write {tmp_path / 'afile' / 'r.json'} \(File exists\)$"):
        write_json(tmp_path / "afile" / "r.json", {})
