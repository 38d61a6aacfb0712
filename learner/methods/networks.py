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


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; the gradient times `scale` backward. (Forward and context apart, so that
    `torch.func.vmap` can batch it: packed seeds, `learner.packed`.)"""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, scale: float):
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class HeadsNet(nn.Module):
    """Bootstrapped DQN's network (spec §7): the conv layer shared by K heads, each
    Linear(…,128) → ReLU → Linear(128,n_out); output (N, K, n_out).

    The torso's gradient is scaled by 1/K (Osband et al. 2016): the heads' losses are summed, and the
    shared layer receives their mean gradient rather than their sum (with Adam, which normalises each
    parameter's step, the scale matters mostly through Adam's ε; we keep it as the paper does). The K first
    layers are one Linear(D, K·128) (the same initialisation as K separate ones: fan-in D), the K output
    layers one (K, n_out, 128) weight. With flat observations there is no shared layer: each head is the
    whole MLP.
    """

    def __init__(self, obs_shape: tuple[int, ...], n_out: int, heads: int):
        super().__init__()
        self.heads = heads
        if len(obs_shape) == 3:
            h, w, c = obs_shape
            self.conv: nn.Conv2d | None = nn.Conv2d(c, CONV_CHANNELS, kernel_size=3, stride=1)
            features = CONV_CHANNELS * (h - 2) * (w - 2)
        else:
            self.conv = None
            features = int(np.prod(obs_shape))
        self.fc1 = nn.Linear(features, heads * HIDDEN)
        bound = 1.0 / HIDDEN ** 0.5  # nn.Linear's default initialisation, per head
        self.out_weight = nn.Parameter(torch.empty(heads, n_out, HIDDEN).uniform_(-bound, bound))
        self.out_bias = nn.Parameter(torch.empty(heads, n_out).uniform_(-bound, bound))

    def torso(self, obs: torch.Tensor) -> torch.Tensor:
        if self.conv is None:
            return obs.float().flatten(1)
        x = torch.relu(self.conv(obs.float().permute(0, 3, 1, 2).contiguous())).flatten(1)
        return _ScaleGrad.apply(x, 1.0 / self.heads)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(self.torso(obs))).view(obs.shape[0], self.heads, HIDDEN)
        return torch.einsum("nkh,kah->nka", x, self.out_weight) + self.out_bias


def make_network(obs_shape: tuple[int, ...], n_out: int, heads: int = 0) -> nn.Module:
    """Image-like (H, W, C) observations get the conv net, anything else the MLP; `heads` > 0 gives
    Bootstrapped DQN's K-head network."""
    if heads:
        return HeadsNet(obs_shape, n_out, heads)
    return ConvNet(obs_shape, n_out) if len(obs_shape) == 3 else MLP(obs_shape, n_out)


class RunningMeanStd(nn.Module):
    """Running mean and variance of a stream of batches (Chan et al.'s parallel update), as buffers:
    saved with the learner's state and updated in place (a CUDA graph can hold the update)."""

    mean: torch.Tensor  # (buffers, registered in __init__)
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: tuple[int, ...] = ()):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        x = x.double()
        n = x.shape[0]
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def std(self) -> torch.Tensor:
        return (self.var + 1e-8).sqrt()


def to_numpy(net: nn.Module) -> dict[str, np.ndarray]:
    """Parameters as plain float32 arrays (they never import torch on the actor side)."""
    return {k: v.detach().to("cpu", torch.float32).numpy().copy() for k, v in net.state_dict().items()}


def flat_weights(nets: dict[str, nn.Module]) -> dict:
    """Every network's parameters in one float32 buffer (one device-to-host copy, one object to share:
    half the cost of sharing a dict of arrays) with its layout; `learner.methods.numpy_net.unflatten` reads it."""
    layout, tensors = [], []
    for name, net in nets.items():
        for key, value in net.state_dict().items():
            layout.append((name, key, tuple(value.shape)))
            tensors.append(value.detach().reshape(-1).float())
    return {"layout": layout, "flat": torch.cat(tensors).cpu().numpy()}
