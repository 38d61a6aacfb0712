"""The MinAtar baseline network and its MLP twin (spec §5), one set of parameters per function."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

HIDDEN = 128
CONV_CHANNELS = 16


class ConvNet(nn.Module):
    """Conv2d(C,16,3,stride 1) → ReLU → Linear(16·(H−2)·(W−2),128) → ReLU → Linear(128,n_out).

    Takes (N, H, W, C) observations of any numeric dtype, as environments give them.
    """

    def __init__(self, obs_shape: tuple[int, int, int], n_out: int):
        super().__init__()
        h, w, c = obs_shape
        self.conv = nn.Conv2d(c, CONV_CHANNELS, kernel_size=3, stride=1)
        self.fc1 = nn.Linear(CONV_CHANNELS * (h - 2) * (w - 2), HIDDEN)
        self.out = nn.Linear(HIDDEN, n_out)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # contiguous NCHW: a channels-last view makes the conv and its backward ~2x slower on CPU
        x = obs.float().permute(0, 3, 1, 2).contiguous()
        x = torch.relu(self.conv(x)).flatten(1)
        return self.out(torch.relu(self.fc1(x)))


class MLP(nn.Module):
    """Linear(obs_dim,128) → ReLU → Linear(128,n_out) on flat observations (CliffWalk's one-hot)."""

    def __init__(self, obs_shape: tuple[int, ...], n_out: int):
        super().__init__()
        self.fc1 = nn.Linear(int(np.prod(obs_shape)), HIDDEN)
        self.out = nn.Linear(HIDDEN, n_out)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.fc1(obs.float().flatten(1))))


def make_network(obs_shape: tuple[int, ...], n_out: int) -> nn.Module:
    """Image-like (H, W, C) observations get the conv net, anything else the MLP."""
    return ConvNet(obs_shape, n_out) if len(obs_shape) == 3 else MLP(obs_shape, n_out)


def to_numpy(net: nn.Module) -> dict[str, np.ndarray]:
    """Parameters as plain float32 arrays (they never import torch on the actor side)."""
    return {k: v.detach().to("cpu", torch.float32).numpy().copy() for k, v in net.state_dict().items()}


def flat_weights(nets: dict[str, nn.Module]) -> dict:
    """Every network's parameters in one float32 buffer (one device-to-host copy, one object to share:
    half the cost of sharing a dict of arrays) with its layout; `actors.numpy_net.unflatten` reads it."""
    layout, tensors = [], []
    for name, net in nets.items():
        for key, value in net.state_dict().items():
            layout.append((name, key, tuple(value.shape)))
            tensors.append(value.detach().reshape(-1).float())
    return {"layout": layout, "flat": torch.cat(tensors).cpu().numpy()}
