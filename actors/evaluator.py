"""Evaluation (spec §4): episodes with ε = 0.01 on the evaluation policy, never counted as training.

Each method says how it is evaluated (`Acting.evaluate`): β-DQN by pure exploitation [eq:q mask greedy],
Bootstrapped DQN by the heads' majority vote, every other method greedily on (task) Q. A method may name
more evaluation policies than its main one (`Acting.eval_policies`: β-DQN's basic policies argmin β and
argmax Q with `--eval-basic`), recorded beside it as `<policy>_<score>`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from actors.envs import make_env
from methods import acting
from methods.contracts import MethodSettings
from methods.numpy_net import NumpyNet, unflatten


@dataclass(frozen=True)
class EvaluatorSettings:
    """What the evaluator reads of the run's configuration (`configuration.settings.settings`)."""

    eval_episodes: int
    eval_epsilon: float
    method: MethodSettings  # what the method's acting reads


def play(acting, nets: dict[str, NumpyNet], env, rng: np.random.Generator, episodes: int, epsilon: float,
         n_actions: int, policy: str = "main") -> tuple[list[float], list[bool]]:
    """`episodes` episodes of `acting`'s evaluation `policy` on `env`, with probability `epsilon` of a uniform
    action: each episode's return and whether it ended in success. (The run's evaluator and a loaded agent's
    `evaluate`, `launcher.api`, both play this way.)"""
    returns, successes = [], []
    for _ in range(episodes):
        obs, _ = env.reset()
        ret, done, info = 0.0, False, {}
        while not done:
            if rng.random() < epsilon:
                a = int(rng.integers(n_actions))
            else:
                values = acting.outputs(nets, obs[None])
                a = acting.evaluate(policy, {k: v[0] for k, v in values.items()}, rng)
            obs, r, terminated, truncated, info = env.step(a)
            ret += float(r)
            done = terminated or truncated
        returns.append(ret)
        successes.append(bool(info.get("success", False)))
    return returns, successes


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
                                           kwargs=spec.env_kwargs)
            self.rngs[policy] = np.random.default_rng(rng_stream)

    def _episodes(self, nets: dict[str, NumpyNet], policy: str) -> tuple[list[float], list[bool]]:
        return play(self.acting, nets, self.envs[policy], self.rngs[policy], self.cfg.eval_episodes,
                    self.cfg.eval_epsilon, self.spec.n_actions, policy)

    def evaluate(self, weights: dict, env_steps: int) -> dict:
        nets = {name: NumpyNet(p) for name, p in unflatten(weights).items()}
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
