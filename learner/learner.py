"""The learner's computation: one update on a batch, the target copy, weights, state.

The process that hosts it (`learner.run`) decides when to update; this class only computes.
"""

from __future__ import annotations

import copy

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
        # one optimizer step for every trained network: their parameters are disjoint, so this is
        # the same as one Adam per network
        self.optimizer = torch.optim.Adam(self.nets.parameters(), lr=cfg.lr, foreach=True)
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
        loss, metrics = self.algo.loss(self.nets, self.target_q, self._to_tensors(batch),
                                       self.cfg.gamma, self.cfg)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        metrics["loss"] = loss.detach()
        return metrics

    def sync_target(self) -> None:
        self.target_q.load_state_dict(self.nets["q"].state_dict())

    def weights(self) -> dict[str, dict[str, np.ndarray]]:
        """Acting parameters as numpy arrays, stamped with a new version by the caller."""
        return {name: to_numpy(net) for name, net in self.nets.items()}

    def state_dict(self) -> dict:
        return {"nets": self.nets.state_dict(), "target_q": self.target_q.state_dict(),
                "optimizer": self.optimizer.state_dict(), "updates": self.updates, "version": self.version}
