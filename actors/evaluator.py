"""Evaluation (spec §4): episodes with ε = 0.01 on the evaluation policy, never counted as training.

β-DQN is evaluated by pure exploitation [eq:q mask greedy], Bootstrapped DQN by the heads' majority vote,
every other method greedily on (task) Q. With `--eval-basic`, β-DQN's evaluation also runs the paper's two
other basic policies, argmin β and argmax Q (the optimistic Q under `--two-q`), recorded beside it.
"""

from __future__ import annotations

import numpy as np

from actors.actor import acting_values
from actors.envs import make_env
from actors.numpy_net import NumpyNet, unflatten
from actors.policies import argmax_random_tie, argmin_beta, majority_vote, pure_exploitation

BASIC = ("argmin_beta", "argmax_q")  # the main evaluation is the third basic policy, pure exploitation


class Evaluator:
    def __init__(self, cfg, spec, seed: int):
        self.cfg, self.spec = cfg, spec
        # an environment and an rng per evaluated policy: the main evaluation's episodes are the same
        # whether the basic policies are evaluated too or not
        self.envs, self.rngs = {}, {}
        for policy, stream in zip(("main", *BASIC), np.random.SeedSequence(seed).spawn(1 + len(BASIC)), strict=True):
            env_stream, rng_stream = stream.spawn(2)
            self.envs[policy] = make_env(spec.name, seed=int(env_stream.generate_state(1)[0]))
            self.rngs[policy] = np.random.default_rng(rng_stream)

    def _policy(self, name: str, v: dict[str, np.ndarray]) -> int:
        """The action of evaluation policy `name` from the networks' outputs at one state."""
        rng = self.rngs[name]
        if name == "argmin_beta":
            return argmin_beta(v["beta"], rng)
        if name == "argmax_q":
            return argmax_random_tie(v.get("q_full", v["q"]), rng)
        if self.cfg.algo == "beta_dqn":
            return pure_exploitation(v["q"], v["beta"], self.cfg.beta_eps, rng)
        if self.cfg.algo == "bootstrapped_dqn":
            return majority_vote(v["q"], rng)
        return argmax_random_tie(v["q"], rng)

    def _episodes(self, nets: dict[str, NumpyNet], policy: str) -> tuple[list[float], list[bool]]:
        env, rng = self.envs[policy], self.rngs[policy]
        returns, successes = [], []
        for _ in range(self.cfg.eval_episodes):
            obs, _ = env.reset()
            ret, done, info = 0.0, False, {}
            while not done:
                if rng.random() < self.cfg.eval_epsilon:
                    a = int(rng.integers(self.spec.n_actions))
                else:
                    values = acting_values(nets, obs[None])
                    a = self._policy(policy, {k: v[0] for k, v in values.items()})
                obs, r, terminated, truncated, info = env.step(a)
                ret += float(r)
                done = terminated or truncated
            returns.append(ret)
            successes.append(bool(info.get("success", False)))
        return returns, successes

    def evaluate(self, weights: dict, env_steps: int) -> dict:
        nets = {name: NumpyNet(p) for name, p in unflatten(weights).items()}
        returns, successes = self._episodes(nets, "main")
        result = {"env_steps": env_steps, **self._scores(returns, successes), "episodes": len(returns)}
        if self.cfg.algo == "beta_dqn" and self.cfg.eval_basic:
            for policy in BASIC:
                scores = self._scores(*self._episodes(nets, policy))
                result.update({f"{policy}_{k}": v for k, v in scores.items()})
        return result

    def _scores(self, returns: list[float], successes: list[bool]) -> dict:
        success_rate = float(np.mean(successes)) if self.spec.has_success else float("nan")
        return {"return_mean": float(np.mean(returns)), "return_std": float(np.std(returns)),
                "success_rate": success_rate}
