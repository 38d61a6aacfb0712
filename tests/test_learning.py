"""Learning on CliffWalk with every spec default: the greedy policy reaches the goal (success ≥ 0.9
over the final evaluation's 30 episodes) within 100k env steps for at least 2 of the seeds 0, 1, 2,
for β-DQN and for DQN; and every baseline reaches that bar at one of its evaluations (every 10k steps)
within a budget of its own, for at least 2 of the 3 seeds.

Serial mode: the same classes as the Ray runner, deterministic for a seed (the Ray path is covered
by tests/test_integration_ray.py); 2 actors × 2 environments, as `--actors 2` runs on Ray.
Measured on the development machine (docs/benchmarks.md, "The learning bar"): DQN 3 of 3, β-DQN 2 of 3 (seed 0
stays at 0: its 5,000-step random warm-up never reaches the goal, and β-DQN's own policies do not find it
within 100k steps; RESULTS.md, the CliffWalk study).
"""

import csv

import pytest

from configuration.flags import Config, resolve
from driver.run import train

pytestmark = pytest.mark.learning

BAR, STEPS, SEEDS, NEEDED = 0.9, 100_000, (0, 1, 2), 2


def final_success(tmp_path, algo: str, seed: int, steps: int = STEPS) -> tuple[float, list[float]]:
    out = tmp_path / f"{algo}-{seed}"
    cfg, spec = resolve(Config(env="CliffWalk", algo=algo, seed=seed, runtime="serial", actors=2,
                               envs_per_actor=2, total_steps=steps, eval_every=10_000, wandb="disabled",
                               progress=False, out=str(out)))
    summary = train(cfg, spec)
    assert summary["env_steps"] == steps
    with open(out / "evals.csv") as f:
        curve = [float(row["success_rate"]) for row in csv.DictReader(f)]
    return summary["final_eval"]["success_rate"], curve


@pytest.mark.parametrize("algo", ["beta_dqn", "dqn"])
def test_cliffwalk_reaches_the_goal(tmp_path, algo):
    results = {}
    # β-DQN's seed 0 last (it stays at 0, above): a passing suite runs two seeds, not three. The verdict, at least
    # NEEDED of SEEDS, is the same in any order; the order moves only how soon it is reached
    for seed in (1, 2, 0) if algo == "beta_dqn" else SEEDS:
        results[seed] = final_success(tmp_path, algo, seed)
        passed = sum(s >= BAR for s, _ in results.values())
        if passed >= NEEDED or passed + len(SEEDS) - len(results) < NEEDED:
            break  # decided either way
    passed = [seed for seed, (s, _) in results.items() if s >= BAR]
    curves = {seed: curve for seed, (_, curve) in results.items()}
    assert len(passed) >= NEEDED, f"{algo}: success every 10k steps, per seed: {curves}"


# Budgets: about 1.5x the steps at which the development machine's runs first passed the bar (docs/benchmarks.md,
# "The learning bar"): Bootstrapped DQN and εz-greedy by 20-30k (all seeds), RND by 40-50k (all seeds),
# LESSON by 30k (seeds 1, 2) and 50k (seed 0). The bar is met at an evaluation, not necessarily the last: RND's bonus
# (scale 10 against a goal reward of 1) keeps pulling its greedy policy away from the solved path now and
# then (seed 2: 1.0 at 50k, 0.0 at 60k), which is the method, not a failure to learn. A
# policy that never learned stays at 0 (the goal is 11 steps along the cliff, 30 episodes at ε = 0.01).
BASELINE_BUDGETS = {"bootstrapped_dqn": 30_000, "ez_greedy": 30_000, "rnd": 60_000, "lesson": 60_000}


@pytest.mark.parametrize("algo", list(BASELINE_BUDGETS))
def test_every_baseline_learns_cliffwalk_within_its_budget(tmp_path, algo):
    results = {}
    for seed in SEEDS:
        _, curve = final_success(tmp_path, algo, seed, BASELINE_BUDGETS[algo])
        results[seed] = curve
        passed = sum(max(c) >= BAR for c in results.values())
        if passed >= NEEDED or passed + len(SEEDS) - len(results) < NEEDED:
            break
    assert sum(max(c) >= BAR for c in results.values()) >= NEEDED, f"{algo}: success every 10k steps: {results}"
