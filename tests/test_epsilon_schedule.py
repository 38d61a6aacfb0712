"""The ε schedule scales with the run (spec §4: 20% of its env steps unless given in steps); a run, its summary,
its report and --help say which it used; runs and checkpoints from before keep the 1M steps they ran with; β-DQN's
--beta-epsilon puts the same schedule on every arm, and without it β-DQN draws nothing more from its rng."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from beta_dqn.configuration.flags import Config, epsilon_plan, fit_warning, method_settings, resolve, run_command
from beta_dqn.driver.resume import resume_config
from learner.methods import acting
from learner.methods.beta_dqn.policies import act_beta_dqn, is_exploitation

ROOT = Path(__file__).resolve().parents[1]
RUN = ["--env", "CliffWalk", "--algo", "dqn", "--runtime", "serial", "--actors", "1", "--envs-per-actor", "1",
       "--learning-starts", "500", "--eval-every", "2500", "--eval-episodes", "2", "--wandb", "disabled",
       "--progress", "false"]


def test_a_5000_step_run_decays_over_1000_steps_and_says_so(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "learner.main", *RUN, "--total-steps", "5000", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "exploration: ε 1 → 0.01 over 1,000 env steps (20% of the run), then held" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epsilon"] == {"start": 1.0, "end": 0.01, "decay_steps": 1000, "decay_share": 0.2}
    assert set(summary["versions"]) == {"python", "beta-dqn", "torch", "numpy", "gymnasium", "minigrid", "minatar",
                                        "ray"}
    assert summary["versions"]["beta-dqn"]  # our own version, installed by deploy/install.sh
    # the instruction set its kernels dispatched to (a serial run that repeats on one host may not on another)
    assert summary["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and summary["cpu_capability"]
    kernels = summary["cpu_kernels"]  # and numpy's and OpenBLAS's (the actors' forward passes)
    assert kernels["torch"] == summary["cpu_capability"] and kernels["numpy"]
    if "openblas" in np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]:
        assert kernels["openblas"]  # the core it chose, asked of the library numpy loaded
    config = json.loads((out / "config.json").read_text())
    assert (config["eps_decay_steps"], config["eps_decay_fraction"]) == (1000, 0.2)
    assert "--eps-decay-steps 1000" in run_command(config)  # its command says the decay it ran with
    helped = subprocess.run([sys.executable, "-m", "learner.main", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120).stdout
    assert "(default: 20% of the" in helped and "(default: None)" not in helped


def test_an_explicit_count_or_fraction_and_what_does_not_fit():
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="dqn", total_steps=500_000, eps_decay_steps=1_000_000))
    assert cfg.eps_decay_steps == 1_000_000 and method_settings(cfg).epsilon.decay_steps == 1_000_000
    assert fit_warning(cfg) == ("warning: ε decays over 1,000,000 env steps, longer than the run: it ends at "
                                "ε = 0.505, not --eps-end 0.01")
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="dqn", total_steps=500_000, eps_decay_fraction=0.1))
    assert cfg.eps_decay_steps == 50_000 and fit_warning(cfg) is None
    cfg, _ = resolve(Config.of(env="CliffWalk", algo="dqn", total_steps=2000))
    assert fit_warning(cfg).startswith("warning: --learning-starts 5,000 is not below --total-steps 2,000")
    # β-DQN acts on no ε unless asked: nothing to say of a schedule it does not read
    assert epsilon_plan(resolve(Config.of(env="CliffWalk", algo="beta_dqn"))[0]) is None
    assert epsilon_plan(resolve(Config.of(env="CliffWalk", algo="beta_dqn", beta_epsilon=True,
                                       total_steps=1000))[0])["decay_steps"] == 200


@pytest.mark.parametrize("value,message", [("0", "must be in (0, 1], got 0.0"), ("1.5", "must be in (0, 1], got 1.5")])
def test_a_bad_fraction_is_one_line(value, message):
    done = subprocess.run([sys.executable, "-m", "learner.main", "--eps-decay-fraction", value], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == f"python -m learner.main: error: --eps-decay-fraction: {message}"


def test_a_checkpoint_from_before_the_change_resumes_with_its_1m_decay(tmp_path):
    out = tmp_path / "old"
    done = subprocess.run([sys.executable, "-m", "learner.main", *RUN, "--total-steps", "2000", "--eval-every",
                           "1000", "--learning-starts", "200", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True, map_location="cpu")
    old = {k: v for k, v in ckpt["config"].items() if k not in ("eps_decay_fraction", "beta_epsilon")}
    old["eps_decay_steps"] = 1_000_000  # as every run saved before the change
    torch.save({**ckpt, "config": old}, out / "checkpoint.pt")
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**{k: config[k] for k in old}, "eps_decay_steps": 1_000_000}))
    cfg, _ = resume_config(["--resume", str(out)])
    cfg, _ = resolve(cfg)
    assert cfg.eps_decay_steps == 1_000_000 and epsilon_plan(cfg)["decay_steps"] == 1_000_000


def test_beta_epsilon_puts_a_uniform_action_on_every_arm_and_off_draws_nothing():
    q, beta = np.array([0.1, 0.9, 0.3, 0.2]), np.array([0.7, 0.2, 0.06, 0.04])
    values = {"q": q, "beta": beta}

    class Ep:
        arm, arm_steps, memory = 2, 1, None  # π_cor(0): pure exploitation

    on = acting(method_settings(Config.of(algo="beta_dqn", beta_epsilon=True, eps_start=1.0, eps_end=1.0)))
    rng = np.random.default_rng(0)
    ep = Ep()
    actions = [on.act(ep, np.zeros(3), values, 0, rng) for _ in range(4000)]
    counts = np.bincount(actions, minlength=4) / len(actions)
    assert np.all(np.abs(counts - 0.25) < 0.03), counts  # ε = 1: uniform, whatever the arm's policy
    off_exploiting = sum(not is_exploitation(a, q, beta, 0.05) for a in actions)
    assert ep.memory.explored == off_exploiting  # B counts the steps off pure exploitation, ε's among them
    off = acting(method_settings(Config.of(algo="beta_dqn")))
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    arm = off.arms[2]
    for _ in range(50):  # without the flag: the policy's action, from the same rng draws as before the flag
        assert off.act(Ep(), np.zeros(3), values, 0, a) == act_beta_dqn(arm, q, beta, 0.05, b, None, "augment", None)
    assert a.random() == b.random()


def test_the_kernels_never_stop_a_summary(tmp_path, monkeypatch):
    """cpu_kernels reads /proc/self/maps as bytes (a mapped file whose name is not UTF-8 is no error), and a library
    that fails to say gives None instead of failing the summary at a run's end."""
    import mmap

    from beta_dqn.driver import host

    odd = tmp_path / "kernels-\udcff.bin"  # the byte 0xff in the name, as the filesystem holds it
    odd.write_bytes(b"0" * 4096)
    with open(odd, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ):
        before = host.cpu_kernels()
    assert set(before) >= {"torch", "numpy", "openblas"}

    def fails():
        raise RuntimeError("a library that fails to say")

    monkeypatch.setattr(host, "openblas_core", fails)
    monkeypatch.setattr(host, "numpy_simd", fails)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    after = host.cpu_kernels()
    assert after["openblas"] is None and after["numpy"] is None and after["torch"] == before["torch"]
    assert after["OPENBLAS_CORETYPE"] == "Haswell"  # the variables that steer them, where set
