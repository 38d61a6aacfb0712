"""The learner's computation: one update on a batch, the target copy, weights, state.

The process that hosts it (`learner.run`) decides when to update; this class only computes.
"""

from __future__ import annotations

import copy
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

from learner.algorithms import ALGORITHMS
from learner.networks import make_network, to_numpy
from replay_service.buffer import make_packer


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: no CUDA device is available here; use --device auto or cpu")
    return torch.device(name)


class Learner:
    def __init__(self, cfg, spec, device: torch.device | None = None):
        self.cfg, self.spec = cfg, spec
        self.algo = ALGORITHMS[cfg.algo]
        self.device = device or torch.device("cpu")
        torch.manual_seed(cfg.seed)
        self.nets = nn.ModuleDict(
            {name: make_network(spec.obs_shape, spec.n_actions) for name in self.algo.NETWORKS}
        ).to(self.device)
        self.target_q = copy.deepcopy(self.nets["q"]).requires_grad_(False)
        # one Adam per network (fused: one kernel for all its parameters); stepping them all after one
        # backward of the summed loss is the same as one Adam over every parameter
        self.optimizers = {name: torch.optim.Adam(net.parameters(), lr=cfg.lr, fused=True)
                           for name, net in self.nets.items()}
        # β-DQN: β's forward, backward and Adam step on a second thread while Q does its own
        # (torch releases the GIL inside its kernels; the math is the same as the one-thread update)
        self.beta_thread = None
        if cfg.algo == "beta_dqn" and cfg.beta_thread:
            self.beta_thread = ThreadPoolExecutor(1, thread_name_prefix="beta")
        self.packer = make_packer(spec.obs_shape, spec.obs_dtype, spec.name)
        self.updates = 0
        self.version = 0

    def _to_tensors(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        out = {}
        # torch.tensor copies: arrays that come through Ray's object store are read-only
        for k in ("obs", "next_obs"):
            out[k] = torch.tensor(self.packer.unpack(batch[k])).to(self.device, non_blocking=True)
        out["action"] = torch.tensor(batch["action"], dtype=torch.int64).to(self.device)
        out["reward"] = torch.tensor(batch["reward"], dtype=torch.float32).to(self.device)
        out["terminated"] = torch.tensor(batch["terminated"]).to(self.device)
        return out

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """One gradient step on Q (and β); returns detached metric tensors (no device sync)."""
        tensors = self._to_tensors(batch)
        if self.beta_thread is not None:
            metrics = self._update_overlapped(tensors)
        else:
            loss, metrics = self.algo.loss(self.nets, self.target_q, tensors, self.cfg.gamma, self.cfg)
            self._step(loss, self.optimizers.values())
            metrics["loss"] = loss.detach()
        self.updates += 1
        return metrics

    @staticmethod
    def _step(loss: torch.Tensor, optimizers) -> None:
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in optimizers:
            opt.step()

    def _update_overlapped(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """β-DQN's update with β on its own thread: β(·|s′) is handed to Q's target as soon as β's
        forward pass has it, then β's backward and step run beside Q's."""
        algo, beta_next = self.algo, Future()

        def beta_step() -> dict:
            try:
                loss_beta, probs_next, metrics = algo.behaviour_part(
                    self.nets["beta"], batch["obs"], batch["next_obs"], batch["action"])
            except BaseException as e:
                beta_next.set_exception(e)
                raise
            beta_next.set_result(probs_next)
            self._step(loss_beta, [self.optimizers["beta"]])
            return metrics

        job = self.beta_thread.submit(beta_step)
        q_sa, q_next_target = algo.value_forward(self.nets, self.target_q, batch)
        loss_q, metrics = algo.value_loss(q_sa, q_next_target, beta_next.result(), batch, self.cfg.gamma, self.cfg)
        self._step(loss_q, [self.optimizers["q"]])
        metrics.update(job.result())  # β is stepped before anything reads its parameters again
        metrics["loss"] = metrics["loss_q"] + metrics["loss_beta"]
        return metrics

    def close(self) -> None:
        if self.beta_thread is not None:
            self.beta_thread.shutdown()

    def sync_target(self) -> None:
        self.target_q.load_state_dict(self.nets["q"].state_dict())

    def weights(self) -> dict[str, dict[str, np.ndarray]]:
        """Acting parameters as numpy arrays, stamped with a new version by the caller."""
        return {name: to_numpy(net) for name, net in self.nets.items()}

    def state_dict(self) -> dict:
        return {"nets": self.nets.state_dict(), "target_q": self.target_q.state_dict(),
                "optimizers": {name: opt.state_dict() for name, opt in self.optimizers.items()},
                "updates": self.updates, "version": self.version}
