"""Learning on CliffWalk with every spec default: the greedy policy reaches the goal (success ≥ 0.9
over the final evaluation's 30 episodes) within 100k env steps for at least 2 of the seeds 0, 1, 2,
for β-DQN and for DQN; and every baseline reaches that bar at one of its evaluations (every 10k steps)
within a budget of its own, for at least 2 of the 3 seeds.

Serial mode: the same classes as the Ray runner, deterministic for a seed (the Ray path is covered
by tests/test_integration_ray.py); 2 actors × 2 environments, as `--actors 2` runs on Ray. A serial run has one
torch thread (β-DQN's β update a second, while it lasts), so a test runs two seeds at once, each in a process of
its own (spawned: it imports this module as `tests.test_learning`, as pytest's default import mode allows).
Measured on the development machine (docs/benchmarks.md, "The learning bar"): DQN 3 of 3, β-DQN 2 of 3 (seed 0
stays at 0: its 5,000-step random warm-up never reaches the goal, and β-DQN's own policies do not find it
within 100k steps; RESULTS.md, the CliffWalk study).
"""

import contextlib
import csv
import math
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from beta_dqn.configuration.flags import Config, resolve
from beta_dqn.driver.outputs import RunLogger
from beta_dqn.driver.run import train

pytestmark = pytest.mark.learning

BAR, STEPS, SEEDS, NEEDED = 0.9, 100_000, (0, 1, 2), 2


class BarReached(Exception):
    """Raised by an evaluation at the bar, in a run that may stop there."""


@contextlib.contextmanager
def stopping_at_the_bar():
    """While it lasts, a run in this (spawned) process stops at its first evaluation at the bar, once that
    evaluation is in evals.csv. For a verdict that asks whether any evaluation within the budget reaches the
    bar, the rest of the budget cannot change it, and a serial run's evaluations up to there are those of the
    whole run. What it gives up: a fault after that evaluation (a non-finite loss, the final checkpoint) goes
    unseen here; the full runs of β-DQN and DQN above and tests/test_run_serial.py run every method to its end."""
    log_eval = RunLogger.log_eval

    def log_and_stop(self, result: dict) -> None:
        log_eval(self, result)
        if result["success_rate"] >= BAR:
            raise BarReached

    RunLogger.log_eval = log_and_stop
    try:
        yield
    finally:
        RunLogger.log_eval = log_eval


def final_success(out: str, algo: str, seed: int, steps: int, stop_at_bar: bool = False) -> tuple[float, list[float]]:
    """(The final evaluation's success, every evaluation's), or (nan, those up to the first at the bar) for a run
    that stops there."""
    cfg, spec = resolve(Config.of(env="CliffWalk", algo=algo, seed=seed, runtime="serial", actors=2,
                               envs_per_actor=2, total_steps=steps, eval_every=10_000, wandb="disabled",
                               progress=False, out=out))
    with stopping_at_the_bar() if stop_at_bar else contextlib.nullcontext():
        try:
            summary = train(cfg, spec)
            final = summary["final_eval"]["success_rate"]
            assert summary["env_steps"] == steps, f"{algo} seed {seed}: {summary['env_steps']} env steps, not {steps}"
        except BarReached:
            final = math.nan
    with open(Path(out) / "evals.csv") as f:
        rows = list(csv.DictReader(f))
    curve = [float(row["success_rate"]) for row in rows]
    # every evaluation where it is due, within the budget (a stopped run's up to its last)
    assert [int(row["env_steps"]) for row in rows] == list(range(10_000, 10_000 * len(rows) + 1, 10_000)), rows
    assert int(rows[-1]["env_steps"]) <= steps and (math.isnan(final) or int(rows[-1]["env_steps"]) == steps)
    assert math.isnan(final) == (stop_at_bar and max(curve) >= BAR), (algo, seed, final, curve)
    return final, curve


def seeds_until_decided(tmp_path, algo: str, order, steps: int, passes,
                        stop_at_bar: bool = False) -> dict[int, tuple[float, list[float]]]:
    """Each seed's (final success, curve), in `order`, until the verdict (at least NEEDED of SEEDS pass) is
    decided either way: NEEDED seeds at once, then one at a time, side by side in processes of their own (one
    at a time on a machine of one core). Each is the same run, for its seed, as in this process; the verdict is the same
    as seed after seed, only the wall clock changes."""
    results: dict[int, tuple[float, list[float]]] = {}
    todo = list(order)
    with ProcessPoolExecutor(min(NEEDED, os.cpu_count() or 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        while todo:
            short = NEEDED - sum(map(passes, results.values()))  # seeds that must still pass
            batch, todo = todo[:short], todo[short:]
            runs = {seed: pool.submit(final_success, str(tmp_path / f"{algo}-{seed}"), algo, seed, steps,
                                      stop_at_bar) for seed in batch}
            results.update({seed: run.result() for seed, run in runs.items()})
            passed = sum(map(passes, results.values()))
            if passed >= NEEDED or passed + len(todo) < NEEDED:
                break  # decided either way
    return results


@pytest.mark.parametrize("algo", ["beta_dqn", "dqn"])
def test_cliffwalk_reaches_the_goal(tmp_path, algo):
    # β-DQN's seed 0 last (it stays at 0, above): a passing suite runs two seeds, not three. The verdict, at least
    # NEEDED of SEEDS, is the same in any order; the order moves only how soon it is reached
    results = seeds_until_decided(tmp_path, algo, (1, 2, 0) if algo == "beta_dqn" else SEEDS, STEPS,
                                  lambda result: result[0] >= BAR)
    passed = [seed for seed, (s, _) in results.items() if s >= BAR]
    curves = {seed: curve for seed, (_, curve) in results.items()}
    assert len(passed) >= NEEDED, f"{algo}: success every 10k steps, per seed: {curves}"


# Budgets: about 1.5x the steps at which the development machine's runs first passed the bar (docs/benchmarks.md,
# "The learning bar"), with every default, ε over 20% of the run included: RND by 40-50k (all seeds), LESSON by
# 30k (seeds 1, 2) and 50k (seed 0). Bootstrapped DQN and εz-greedy get DQN's 100k: with ε decayed over 20% of the
# run, they first pass the bar at 20-40k of a 100k run (measured at 9381f3c, Intel Xeon). Their old budget,
# 30k, was set when ε decayed over 1M steps (ε ≈ 1 throughout: a random walk's replay); under the scaled ε a 30k
# run's ε reaches 0.01 at 6k and fewer than 2 of 3 seeds pass (εz-greedy seeds 0 and 1: 0.0 at 10k-30k).
# The bar is met at an evaluation, not necessarily the last: RND's bonus
# (scale 10 against a goal reward of 1) keeps pulling its greedy policy away from the solved path now and
# then (seed 2: 1.0 at 50k, 0.0 at 60k), which is the method, not a failure to learn. A
# policy that never learned stays at 0 (the goal is 11 steps along the cliff, 30 episodes at ε = 0.01).
# A run stops at its first evaluation at the bar (`stop_at_the_bar`), so two seeds run side by side take as long as
# the later of the two to get there: the seeds that got there first on the development machine go first (the
# verdict is the same in any order).
BASELINE_BUDGETS = {"bootstrapped_dqn": 100_000, "ez_greedy": 100_000, "rnd": 60_000, "lesson": 60_000}
BASELINE_ORDER = {"bootstrapped_dqn": (2, 0, 1), "ez_greedy": (0, 2, 1), "rnd": (1, 0, 2), "lesson": (1, 2, 0)}


@pytest.mark.parametrize("algo", list(BASELINE_BUDGETS))
def test_every_baseline_learns_cliffwalk_within_its_budget(tmp_path, algo):
    assert sorted(BASELINE_ORDER[algo]) == list(SEEDS)
    results = {seed: curve for seed, (_, curve) in seeds_until_decided(
        tmp_path, algo, BASELINE_ORDER[algo], BASELINE_BUDGETS[algo], lambda result: max(result[1]) >= BAR,
        stop_at_bar=True).items()}
    assert sum(max(c) >= BAR for c in results.values()) >= NEEDED, f"{algo}: success every 10k steps: {results}"
