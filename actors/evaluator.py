"""Evaluation (spec §4): episodes with ε = 0.01 on the evaluation policy, never counted as training.

β-DQN is evaluated by pure exploitation [eq:q mask greedy], DQN greedily on Q.
"""

from __future__ import annotations

import numpy as np

from actors.actor import acting_values
from actors.envs import make_env
from actors.numpy_net import NumpyNet, unflatten
from actors.policies import argmax_random_tie, pure_exploitation


class Evaluator:
    def __init__(self, cfg, spec, seed: int):
        self.cfg, self.spec = cfg, spec
        env_stream, rng_stream = np.random.SeedSequence(seed).spawn(2)
        self.env = make_env(spec.name, seed=int(env_stream.generate_state(1)[0]))
        self.rng = np.random.default_rng(rng_stream)

    def _greedy(self, q: np.ndarray, beta: np.ndarray | None) -> int:
        if beta is None:
            return argmax_random_tie(q, self.rng)
        return pure_exploitation(q, beta, self.cfg.beta_eps, self.rng)

    def evaluate(self, weights: dict, env_steps: int) -> dict:
        nets = {name: NumpyNet(p) for name, p in unflatten(weights).items()}
        returns, successes = [], []
        for _ in range(self.cfg.eval_episodes):
            obs, _ = self.env.reset()
            ret, done, info = 0.0, False, {}
            while not done:
                if self.rng.random() < self.cfg.eval_epsilon:
                    a = int(self.rng.integers(self.spec.n_actions))
                else:
                    q, beta = acting_values(nets, obs[None])
                    a = self._greedy(q[0], None if beta is None else beta[0])
                obs, r, terminated, truncated, info = self.env.step(a)
                ret += float(r)
                done = terminated or truncated
            returns.append(ret)
            successes.append(bool(info.get("success", False)))
        success_rate = float(np.mean(successes)) if self.spec.has_success else float("nan")
        return {"env_steps": env_steps, "return_mean": float(np.mean(returns)),
                "return_std": float(np.std(returns)), "success_rate": success_rate,
                "episodes": len(returns)}
