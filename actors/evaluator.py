"""Evaluation (spec §4): episodes with ε = 0.01 on the evaluation policy, never counted as training.

Each method says how it is evaluated (`Acting.evaluate`): β-DQN by pure exploitation [eq:q mask greedy],
Bootstrapped DQN by the heads' majority vote, every other method greedily on (task) Q. A method may name
more evaluation policies than its main one (`Acting.eval_policies`: β-DQN's basic policies argmin β and
argmax Q with `--eval-basic`), recorded beside it as `<policy>_<score>`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from actors.envs import make_env
from learner.methods import acting
from learner.methods.contracts import MethodSettings
from learner.methods.numpy_net import NumpyNet, unflatten


@dataclass(frozen=True)
class EvaluatorSettings:
    """What the evaluator reads of the run's configuration (`beta_dqn.configuration.settings.settings`)."""

    eval_episodes: int
    eval_epsilon: float
    method: MethodSettings  # what the method's acting reads


# an evaluation episode's most steps, where the environment itself sets no limit: Atari's customary 108,000 frames
# at a frame skip of 4 (every environment this project ships ends or truncates its episodes long before)
EVAL_MAX_STEPS = 27_000


class EpisodeCut(UserWarning):
    """An evaluation episode reached EVAL_MAX_STEPS without ending (said once per environment and process)."""


_cut: set[str] = set()


def play(acting, nets: dict[str, NumpyNet], env, rng: np.random.Generator, episodes: int, epsilon: float,
         n_actions: int, policy: str = "main", max_steps: int = EVAL_MAX_STEPS) -> tuple[list[float], list[bool]]:
    """`episodes` episodes of `acting`'s evaluation `policy` on `env`, with probability `epsilon` of a uniform
    action: each episode's return and whether it ended in success. An episode still going after `max_steps`
    steps is cut there, as a truncation (an environment registered without `max_episode_steps` may never end);
    the first cut says so in a warning. (The run's evaluator and a loaded agent's `evaluate`, `beta_dqn.launcher.api`,
    both play this way.)"""
    returns, successes = [], []
    for _ in range(episodes):
        obs, _ = env.reset()
        ret, done, info, steps = 0.0, False, {}, 0
        while not done:
            if steps == max_steps:
                _say_cut(env, max_steps)
                break
            steps += 1
            if rng.random() < epsilon:
                a = int(rng.integers(n_actions))
            else:
                values = acting.outputs(nets, obs[None])
                a = acting.evaluate(policy, {k: v[0] for k, v in values.items()}, rng)
            obs, r, terminated, truncated, info = env.step(a)
            ret += float(r)
            done = terminated or truncated
        returns.append(ret)
        successes.append(bool(info.get("success", False)) if done else False)
    return returns, successes


def _say_cut(env, max_steps: int) -> None:
    name = str(getattr(getattr(env, "spec", None), "id", None) or type(env.unwrapped).__name__)
    if name not in _cut:
        _cut.add(name)
        warnings.warn(f"an evaluation episode of {name} reached {max_steps:,} steps without ending and was cut there "
                      "(its return so far counts; no success): the environment sets no step limit (register it "
                      "with gymnasium.register(..., max_episode_steps=N) to choose one)", EpisodeCut, stacklevel=3)


class Evaluator:
    def __init__(self, cfg: EvaluatorSettings, spec, seed: int):
        self.cfg, self.spec = cfg, spec
        self.acting = acting(cfg.method)
        # an environment and an rng per evaluated policy: the main evaluation's episodes are the same
        # whether other policies are evaluated too or not (a seed sequence's i-th child does not depend
        # on how many are spawned)
        self.envs, self.rngs = {}, {}
        policies = self.acting.eval_policies
        for policy, stream in zip(policies, np.random.SeedSequence(seed).spawn(len(policies)), strict=True):
            env_stream, rng_stream = stream.spawn(2)
            self.envs[policy] = make_env(spec.name, seed=int(env_stream.generate_state(1)[0]),
                                           kwargs=spec.env_kwargs, wrappers=spec.wrappers)
            self.rngs[policy] = np.random.default_rng(rng_stream)

    def _episodes(self, nets: dict[str, NumpyNet], policy: str) -> tuple[list[float], list[bool]]:
        return play(self.acting, nets, self.envs[policy], self.rngs[policy], self.cfg.eval_episodes,
                    self.cfg.eval_epsilon, self.spec.n_actions, policy)

    def evaluate(self, weights: dict, env_steps: int) -> dict:
        nets = {name: NumpyNet(p, self.spec.reading) for name, p in unflatten(weights).items()}
        returns, successes = self._episodes(nets, "main")
        result = {"env_steps": env_steps, **self._scores(returns, successes), "episodes": len(returns)}
        for policy in self.acting.eval_policies[1:]:
            scores = self._scores(*self._episodes(nets, policy))
            result.update({f"{policy}_{k}": v for k, v in scores.items()})
        return result

    def _scores(self, returns: list[float], successes: list[bool]) -> dict:
        success_rate = float(np.mean(successes)) if self.spec.has_success else float("nan")
        return {"return_mean": float(np.mean(returns)), "return_std": float(np.std(returns)),
                "success_rate": success_rate}
