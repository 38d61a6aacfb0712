"""Learning on CliffWalk with every spec default: the greedy policy reaches the goal (success ≥ 0.9
over the final evaluation's 30 episodes) within 100k env steps for at least 2 of the seeds 0, 1, 2,
for β-DQN and for DQN.

Serial mode: the same classes as the Ray runner, deterministic for a seed (the Ray path is covered
by tests/test_integration_ray.py); 2 actors × 2 environments, as `--actors 2` runs on Ray.
Measured on the development machine (README, "The CliffWalk bar"): DQN 3 of 3, β-DQN 2 of 3 (seed 0
stays at 0: its bandit settles on a policy whose episodes loop until the time limit).
"""

import csv

import pytest

from learner.config import Config, resolve
from learner.run import train

pytestmark = pytest.mark.learning

BAR, STEPS, SEEDS, NEEDED = 0.9, 100_000, (0, 1, 2), 2


def final_success(tmp_path, algo: str, seed: int) -> tuple[float, list[float]]:
    out = tmp_path / f"{algo}-{seed}"
    cfg, spec = resolve(Config(env="CliffWalk", algo=algo, seed=seed, runtime="serial", actors=2,
                               envs_per_actor=2, total_steps=STEPS, eval_every=10_000, wandb="disabled",
                               progress=False, out=str(out)))
    summary = train(cfg, spec)
    assert summary["env_steps"] == STEPS
    with open(out / "evals.csv") as f:
        curve = [float(row["success_rate"]) for row in csv.DictReader(f)]
    return summary["final_eval"]["success_rate"], curve


@pytest.mark.parametrize("algo", ["beta_dqn", "dqn"])
def test_cliffwalk_reaches_the_goal(tmp_path, algo):
    results = {}
    for seed in SEEDS:
        results[seed] = final_success(tmp_path, algo, seed)
        passed = sum(s >= BAR for s, _ in results.values())
        if passed >= NEEDED or passed + len(SEEDS) - len(results) < NEEDED:
            break  # decided either way
    passed = [seed for seed, (s, _) in results.items() if s >= BAR]
    curves = {seed: curve for seed, (_, curve) in results.items()}
    assert len(passed) >= NEEDED, f"{algo}: success every 10k steps, per seed: {curves}"
