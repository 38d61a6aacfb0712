"""The whole run in serial mode: outputs, checkpoint, determinism, every environment family."""

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from beta_dqn.configuration.flags import Config, ConfigError, resolve
from beta_dqn.driver.checkpoints import Checkpointer
from beta_dqn.driver.run import Run, train


def short(tmp_path, name, **kw):
    base = dict(runtime="serial", actors=2, envs_per_actor=2, total_steps=3000, learning_starts=500,
                eval_every=1000, eval_episodes=3, wandb="disabled", progress=False, log_every=0.2,
                out=str(tmp_path / name))
    base.update(kw)
    return resolve(Config.of(**base))


def test_outputs_are_complete(tmp_path):
    cfg, spec = short(tmp_path, "cw", env="CliffWalk")
    summary = train(cfg, spec)
    out = tmp_path / "cw"
    for key in ("env", "algo", "seed", "env_steps", "updates", "replay_ratio", "wall_seconds",
                "env_steps_per_s", "final_eval"):
        assert key in summary
    assert summary["env_steps"] == 3000
    assert summary["updates"] == (3000 - 500) // 4
    assert summary["replay_inserted"] == 3000
    assert json.loads((out / "summary.json").read_text()) == summary
    assert json.loads((out / "config.json").read_text())["env"] == "CliffWalk"
    with open(out / "evals.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["env_steps"]) for r in rows] == [1000, 2000, 3000]
    scores = ("return_mean", "return_std", "success_rate")
    # β-DQN's evaluation also records the two other basic policies (--eval-basic, on by default)
    assert list(rows[0]) == ["env_steps", *scores, *[f"{p}_{k}" for p in ("argmin_beta", "argmax_q") for k in scores]]
    assert summary["final_eval"]["success_rate"] == float(rows[-1]["success_rate"])
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1]["env_steps"] == 3000
    keys = set().union(*lines)
    for key in ("loss_q", "loss_beta", "q_mean", "beta_entropy", "updates_per_s", "env_steps_per_s",
                "replay_ratio", "staleness_p95", "arm_proportions", "arms_cov", "arms_cor", "arms_cor0"):
        assert key in keys
    ckpt = torch.load(out / "checkpoint.pt")  # plain torch.load: weights_only by default
    assert ckpt["counters"]["env_steps"] == 3000
    assert set(ckpt["learner"]["nets"]) >= {"q.fc1.weight", "beta.fc1.weight"}
    assert len(ckpt["arm_source"]["window"]) == summary["arm_episodes"]


def test_target_copies_and_evaluations_follow_the_learners_clock(tmp_path):
    """With many actors the learner trails the actors; target copies and evaluations must still
    happen every 1,000 / `eval_every` env steps, right after the update owed at that step."""
    cfg, spec = short(tmp_path, "many", env="CliffWalk", algo="dqn", actors=8, total_steps=6000)
    run = Run(cfg, spec)
    summary = run.run()
    owed = run.limiter.owed
    assert run.state.target_syncs == [(t, owed(t)) for t in range(1000, 6001, 1000)]
    assert summary["target_updates"] == 6
    with open(tmp_path / "many" / "evals.csv") as f:
        assert [int(r["env_steps"]) for r in csv.DictReader(f)] == [1000, 2000, 3000, 4000, 5000, 6000]


def test_same_seed_same_evaluations(tmp_path):
    for name in ("a", "b"):
        cfg, spec = short(tmp_path, name, env="CliffWalk", seed=3)
        train(cfg, spec)
    assert (tmp_path / "a" / "evals.csv").read_text() == (tmp_path / "b" / "evals.csv").read_text()
    cfg, spec = short(tmp_path, "c", env="CliffWalk", seed=4)
    train(cfg, spec)
    a = torch.load(tmp_path / "a" / "checkpoint.pt")["learner"]["nets"]["q.fc1.weight"]
    c = torch.load(tmp_path / "c" / "checkpoint.pt")["learner"]["nets"]["q.fc1.weight"]
    assert not torch.equal(a, c)


@pytest.mark.parametrize("env,algo", [("MinAtar/Breakout", "beta_dqn"), ("DoorKey", "beta_dqn"),
                                      ("MinAtar/SpaceInvaders", "dqn"), ("CartPole-v1", "dqn")])
def test_smoke_every_family(tmp_path, env, algo):
    cfg, spec = short(tmp_path, "run", env=env, algo=algo, total_steps=1500, eval_every=1500,
                      eval_episodes=1, learning_starts=300)
    summary = train(cfg, spec)
    assert summary["env_steps"] == 1500 and summary["updates"] == 300
    assert summary["final_eval"]["return_mean"] is not None


def test_weights_are_shared_once_per_version_and_only_when_asked(tmp_path):
    cfg, spec = short(tmp_path, "pub", env="CliffWalk", algo="dqn", publish_every=1)
    run = Run(cfg, spec)
    shared = []
    real_put = run.backend.put

    def put(value):
        shared.append(run.learner.version)
        return real_put(value)

    run.backend.put = put
    summary = run.run()
    # a version per update (and per evaluation), but a share only when an actor or the evaluator asked
    assert summary["weight_versions"] == summary["updates"] + 3
    assert len(shared) == len(set(shared)) < summary["weight_versions"] / 2
    # every chunk was acted with a version that was shared
    assert {v for first_last in run.actor_versions for v in first_last} <= set(shared)
    assert summary["throughput"]["staleness_p95"] is not None


def test_a_nan_loss_stops_the_run_with_one_line_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, capsys):
    from beta_dqn.launcher.main import main
    from learner.learner import Learner

    real_update = Learner.update

    def update(self, batch):
        metrics = real_update(self, batch)
        if self.updates == 400:
            metrics["loss"] = torch.tensor(float("nan"))
        return metrics

    monkeypatch.setattr(Learner, "update", update)
    out = tmp_path / "nan"
    status = main(["--env", "CliffWalk", "--runtime", "serial", "--actors", "2", "--total-steps", "5000",
                   "--learning-starts", "500", "--checkpoint-every", "1000", "--eval-every", "5000",
                   "--wandb", "disabled",
                   "--progress", "false", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1
    assert "the loss became nan at update 400" in err[0] and "Traceback" not in err[0]
    good = torch.load(out / "checkpoint.pt", weights_only=True)
    assert good["learner"]["updates"] < 400 and good["counters"]["env_steps"] <= 2100
    assert (out / "checkpoint-nonfinite.pt").exists()


ALGO_LOSSES = {"beta_dqn": {"loss_beta"}, "dqn": set(), "bootstrapped_dqn": set(), "ez_greedy": set(),
               "rnd": {"loss_rnd", "intrinsic_mean"},
               "lesson": {"loss_q_int", "loss_option", "loss_termination", "loss_rnd", "termination_mean",
                          "option_share_random", "option_share_greedy"}}


@pytest.mark.parametrize("algo", list(ALGO_LOSSES))
def test_every_algorithm_runs_on_minatar_minigrid_and_cliffwalk_with_the_same_cli(tmp_path, capsys, monkeypatch,
                                                                                   algo):
    """`--algo` is the only flag that changes: the same command, outputs and summary for every method; and
    each continues from a mid-run checkpoint (a copy of the run directory taken when it was written)."""
    import shutil

    from beta_dqn.launcher.main import main

    save = Checkpointer.save

    def save_and_copy(self, wall):
        save(self, wall)
        if self.state.env_steps == 600:
            shutil.copytree(self.out, Path(f"{self.out}-at600"))

    monkeypatch.setattr(Checkpointer, "save", save_and_copy)
    for env in ("MinAtar/Breakout", "DoorKey", "CliffWalk"):
        out = tmp_path / f"{algo}-{env.replace('/', '-')}"
        argv = ["--algo", algo, "--env", env, "--runtime", "serial", "--actors", "2", "--envs-per-actor", "2",
                "--total-steps", "1200", "--learning-starts", "400", "--eval-every", "600", "--eval-episodes", "2",
                "--checkpoint-every", "600", "--wandb", "disabled", "--progress", "false", "--log-every", "0.01",
                "--json", "true", "--out", str(out)]
        assert main(argv) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (summary["algo"], summary["env"], summary["env_steps"], summary["updates"]) == (algo, env, 1200, 200)
        with open(out / "evals.csv") as f:
            assert [int(r["env_steps"]) for r in csv.DictReader(f)] == [600, 1200]
        keys = set().union(*[json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()])
        assert {"loss_q", "q_mean", "loss", "env_steps_per_s"} | ALGO_LOSSES[algo] <= keys
        ckpt = torch.load(out / "checkpoint.pt")
        assert ckpt["counters"]["env_steps"] == 1200 and ckpt["config"]["algo"] == algo
        arms = ckpt["arm_source"]  # the run's arm source heard of every episode played under an arm
        heard = {"beta_dqn": len(arms.get("window", [])), "bootstrapped_dqn": sum(arms.get("plays", []))}
        assert heard.get(algo, arms.get("episodes")) == summary["arm_episodes"]
        # resume from the copy taken at 600 steps: the method's whole state loads and the run finishes
        first = torch.load(Path(f"{out}-at600") / "checkpoint.pt")["counters"]["wall_seconds"]
        assert main(["--resume", f"{out}-at600", "--progress", "false", "--json", "true"]) == 0
        resumed = json.loads(capsys.readouterr().out)
        assert (resumed["env_steps"], resumed["updates"]) == (1200, 200)
        assert 0 < first < resumed["wall_seconds"]  # its seconds: the first sitting's to its checkpoint, and this one's
        with open(f"{out}-at600/evals.csv") as f:
            assert [int(r["env_steps"]) for r in csv.DictReader(f)] == [600, 1200]


def test_a_person_reads_a_few_lines_and_a_script_reads_json(tmp_path, capsys):
    """The end of a run on stdout: what ran, its speed, the evaluations, the final score, where the outputs are
    (at most 15 lines); `--json true` prints summary.json's document instead."""
    from beta_dqn.launcher.main import main

    argv = ["--env", "CliffWalk", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "1",
            "--total-steps", "3000", "--learning-starts", "500", "--eval-every", "1000", "--eval-episodes", "2",
            "--wandb", "disabled", "--progress", "false"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert 5 <= len(lines) <= 15
    assert lines[0].startswith("β-DQN on CliffWalk, seed 0: 3,000 env steps in ")
    assert lines[2].split() == ["env", "steps", "1k", "2k", "3k"]
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert lines[3].split()[1:] == [f"{float(row['success_rate']):.2f}"
                                    for row in csv.DictReader(open(tmp_path / "a" / "evals.csv"))]
    assert f"final: success {summary['final_eval']['success_rate']:.2f}" in lines[4]
    assert any(f"python -m learner.report {tmp_path / 'a'}" in line for line in lines)
    assert f"outputs: {tmp_path / 'a'}/ (summary.json, evals.csv, metrics.jsonl, checkpoint.pt, best.pt)" in lines
    assert main([*argv, "--out", str(tmp_path / "b"), "--json", "true"]) == 0
    assert json.loads(capsys.readouterr().out)["final_eval"] == summary["final_eval"]  # deterministic


def test_arm_exchange_per_episode_or_per_chunk_and_the_lag_it_costs(tmp_path):
    """The serial runner asks the bandit once per episode (auto): one actor stepping one env is the paper's loop,
    every arm chosen knowing every earlier episode (lag 0). Arms chosen a chunk ahead (as on Ray) are late
    by a few episodes, every episode still reported before the checkpoint."""
    from beta_dqn.driver.resume import resume_config

    cfg, spec = short(tmp_path, "paper", env="CliffWalk", actors=1, envs_per_actor=1)
    assert cfg.value("arm_exchange") == "episode"
    summary = train(cfg, spec)
    assert summary["bandit"]["lag"] == {"median": 0.0, "p95": 0.0, "max": 0}
    cfg, spec = short(tmp_path, "chunk", env="CliffWalk", arm_exchange="chunk")
    summary = train(cfg, spec)
    assert summary["bandit"]["lag"]["max"] > 0 and summary["arm_episodes"] > 20
    ckpt = torch.load(tmp_path / "chunk" / "checkpoint.pt")
    assert len(ckpt["arm_source"]["window"]) == summary["arm_episodes"] == ckpt["arm_source"]["reported"]
    assert ckpt["config"]["arm_exchange"] == "chunk"
    lines = [json.loads(line) for line in (tmp_path / "chunk" / "metrics.jsonl").read_text().splitlines()]
    assert any("arm_lag_p95" in line for line in lines)
    # a checkpoint from before --arm-exchange continues as it ran: an exchange per episode
    for path in (tmp_path / "chunk" / "checkpoint.pt", tmp_path / "chunk" / "config.json"):
        if path.suffix == ".pt":
            ckpt["config"].pop("arm_exchange")
            torch.save(ckpt, path)
        else:
            config = json.loads(path.read_text())
            config.pop("arm_exchange")
            path.write_text(json.dumps(config))
    resume = ["--resume", str(tmp_path / "chunk")]
    assert resume_config(resume)[0].value("arm_exchange") == "episode"
    assert resume_config([*resume, "--arm-exchange", "episode"])[0].value("arm_exchange") == "episode"
    with pytest.raises(ConfigError, match="arm_exchange|arm-exchange"):
        resume_config([*resume, "--arm-exchange", "chunk"])


def test_the_summary_says_where_the_actors_time_went(tmp_path):
    cfg, spec = short(tmp_path, "clock", env="MinAtar/Breakout", algo="dqn")
    t = train(cfg, spec)["throughput"]
    busy, insert, idle = (t[f"actor_{k}_fraction"] for k in ("busy", "insert", "idle"))
    assert busy + insert + idle == pytest.approx(1.0)
    assert 0 < busy < 1 and 0 < insert < busy and 0 < idle < 1
    # serial: the actors take turns in one process, beside the learner, so together they act less than the
    # run's steady time (each is idle while the other acts: at least half the time with two)
    assert busy + insert <= 1 / cfg.actors + 1e-9


def test_the_actors_clock_counts_the_steady_state_only(monkeypatch):
    from beta_dqn.driver import outputs

    now = [0.0]
    monkeypatch.setattr(outputs.time, "perf_counter", lambda: now[0])
    clock = outputs.Clock()
    clock.actor({"seconds": 5.0, "insert_seconds": 1.0})  # before the steady state: forgotten at its start
    now[0] = 10.0
    clock.start_steady(1000, 0)
    for _ in range(4):  # two actors, 20 s of steady state: 6 s of `collect`, 2 of them inserting
        clock.actor({"seconds": 1.5, "insert_seconds": 0.5})
    clock.actor({})  # a collector without a clock (none of its own) adds nothing
    now[0] = 30.0
    clock.stop(5000, 1000)
    t = clock.summary(5000, 1000, Counter(), actors=2)
    assert t["actor_busy_fraction"] == pytest.approx(4 / 40)
    assert t["actor_insert_fraction"] == pytest.approx(2 / 40)
    assert t["actor_idle_fraction"] == pytest.approx(34 / 40)
    assert "actor_busy_fraction" not in clock.summary(5000, 1000, Counter())  # the actors' count not given
