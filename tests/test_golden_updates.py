"""Goldens that hold across hosts: every method's first learner updates on fixed batches, against values
recorded in `golden_updates.json` (relative tolerance 1e-4: float32 kernels differ between CPU kinds by far
less, while a change to a loss, a network or an optimizer step moves them by far more).

Bit-for-bit proof of an unchanged behaviour is `tests/golden.py` (whole serial runs, on one machine).
Record anew only when a change of results is intended:  python -m tests.test_golden_updates
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from beta_dqn.configuration.flags import ALGOS, Config, resolve
from replay_service.buffer import make_packer
from tests.test_learner import solo

FIXTURE = Path(__file__).with_name("golden_updates.json")
ENVS = ("CliffWalk", "MinAtar/Breakout")  # the MLP and the conv network
UPDATES = 3


def batch(spec, rng: np.random.Generator, n: int = 32) -> dict[str, np.ndarray]:
    packer = make_packer(spec)
    if spec.name == "CliffWalk":  # one-hot cells
        cells = rng.integers(spec.obs_shape[0], size=(2, n))
        obs = np.eye(spec.obs_shape[0], dtype=np.float32)[cells]
    else:
        obs = rng.random((2, n, *spec.obs_shape)) < 0.1
    return {"obs": packer.pack(obs[0]), "next_obs": packer.pack(obs[1]),
            "action": rng.integers(spec.n_actions, size=n), "reward": rng.normal(size=n).astype(np.float32),
            "terminated": rng.random(n) < 0.1, "option": rng.integers(4, size=n).astype(np.int8)}


def updates(env: str, algo: str) -> dict:
    """Losses of the first UPDATES updates, and each network's Σ|θ| after them (a target copy in between)."""
    torch.set_num_threads(1)
    cfg, spec = resolve(Config.of(env=env, algo=algo, seed=3, wandb="disabled"))
    learner = solo(cfg, spec)
    rng = np.random.default_rng(11)
    losses = []
    for i in range(UPDATES):
        losses.append(float(learner.update(batch(spec, rng))["loss"]))
        if i == 1:
            learner.sync_target()
    learner.close()
    with torch.no_grad():
        sums = {name: float(sum(p.abs().sum() for p in net.parameters())) for name, net in learner.nets.items()}
    return {"losses": losses, "abs_sums": sums}


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("algo", ALGOS)
def test_the_first_updates_match_the_recorded_golden(env, algo):
    expected = json.loads(FIXTURE.read_text())[f"{env}/{algo}"]
    got = updates(env, algo)
    assert got["losses"] == pytest.approx(expected["losses"], rel=1e-4, abs=1e-7)
    assert got["abs_sums"] == pytest.approx(expected["abs_sums"], rel=1e-4)


def test_golden_py_never_writes_into_an_existing_directory(tmp_path):
    """`tests/golden.py --out DIR` refuses a DIR that exists, in one line, before any run: a comparison against
    outputs partly replaced would prove nothing."""
    import subprocess
    import sys

    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "kept").write_text("x")
    done = subprocess.run([sys.executable, "tests/golden.py", "--out", str(tmp_path / "old")],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"golden.py: error: --out {tmp_path / 'old'} exists; give a new " \
                                                   "directory"
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["kept"]


if __name__ == "__main__":
    record = {f"{env}/{algo}": updates(env, algo) for env in ENVS for algo in ALGOS}
    FIXTURE.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {FIXTURE}")
