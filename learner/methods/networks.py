"""The MinAtar baseline network and its MLP twin (spec §5), one set of parameters per function."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from learner.methods.reading import HIDDEN, TORSOS, Reading, conv_output, default


def _add_torso(net: nn.Module, obs_shape: tuple[int, ...], reading: Reading) -> int:
    """`reading`'s convolutions as `net`'s attributes, named as `TORSOS` names them (the paper's one is `conv`, as
    checkpoints have always called it); returns the features they give a frame of `obs_shape`."""
    h, w, c = reading.frame(obs_shape)
    for name, out, kernel, stride in TORSOS[reading.network]:
        setattr(net, name, nn.Conv2d(c, out, kernel_size=kernel, stride=stride))
        c = out
    return c * conv_output(h, reading.network) * conv_output(w, reading.network)


def _linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """`layer(x)` without the module call's own work (its hooks' bookkeeping); the arithmetic is the same call."""
    return F.linear(x, layer.weight, layer.bias)


def _torso(net: ConvNet | HeadsNet, reading: Reading, obs: torch.Tensor) -> torch.Tensor:
    """The convolutions' features of a batch of observations, flat: pixels scaled to [0, 1], HWC put as NCHW."""
    x = obs.float()
    if reading.pixels:
        x = x / 255.0
    if reading.layout == "HWC":
        # contiguous NCHW: a channels-last view makes the conv and its backward ~2x slower on CPU
        x = x.permute(0, 3, 1, 2)
    x = x.contiguous()
    for name in net.convs:
        conv = getattr(net, name)
        # the ReLU in place: a convolution's backward reads its input and weight, not its output
        x = F.conv2d(x, conv.weight, conv.bias, conv.stride).relu_()
    return x.flatten(1)


class ConvNet(nn.Module):
    """A conv torso (`learner.methods.reading`: the paper's Conv2d(C,16,3,stride 1), or Nature-DQN's three) → ReLU →
    Linear(features,hidden) → ReLU → Linear(hidden,n_out); hidden 128 (512 for Nature-DQN's).

    Takes observations of any numeric dtype, as environments give them, in `reading`'s layout.
    """

    convs: tuple[str, ...]  # the torso's convolutions, in order (attributes of these names)

    def __init__(self, obs_shape: tuple[int, ...], n_out: int, reading: Reading | None = None):
        super().__init__()
        self.reading = reading or default(obs_shape)
        self.convs = tuple(name for name, *_ in TORSOS[self.reading.network])
        hidden = HIDDEN[self.reading.network]
        self.fc1 = nn.Linear(_add_torso(self, obs_shape, self.reading), hidden)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # ReLU in place: fc1's backward reads its input and weight, not its output
        return _linear(self.out, _linear(self.fc1, _torso(self, self.reading, obs)).relu_())


class MLP(nn.Module):
    """Linear(obs_dim,128) → ReLU → Linear(128,n_out) on flat observations (CliffWalk's one-hot)."""

    def __init__(self, obs_shape: tuple[int, ...], n_out: int):
        super().__init__()
        self.fc1 = nn.Linear(int(np.prod(obs_shape)), HIDDEN["mlp"])
        self.out = nn.Linear(HIDDEN["mlp"], n_out)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return _linear(self.out, _linear(self.fc1, obs.float().flatten(1)).relu_())


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

    convs: tuple[str, ...]  # the torso's convolutions, in order (none on flat observations)

    def __init__(self, obs_shape: tuple[int, ...], n_out: int, heads: int, reading: Reading | None = None):
        super().__init__()
        self.heads = heads
        self.reading = reading or default(obs_shape)
        self.hidden = hidden = HIDDEN[self.reading.network]
        self.convs = tuple(name for name, *_ in TORSOS.get(self.reading.network, ()))
        if not self.convs:
            features = int(np.prod(obs_shape))
        else:
            features = _add_torso(self, obs_shape, self.reading)
        self.fc1 = nn.Linear(features, heads * hidden)
        bound = 1.0 / hidden ** 0.5  # nn.Linear's default initialisation, per head
        self.out_weight = nn.Parameter(torch.empty(heads, n_out, hidden).uniform_(-bound, bound))
        self.out_bias = nn.Parameter(torch.empty(heads, n_out).uniform_(-bound, bound))

    def torso(self, obs: torch.Tensor) -> torch.Tensor:
        if not self.convs:
            return obs.float().flatten(1)
        return _ScaleGrad.apply(_torso(self, self.reading, obs), 1.0 / self.heads)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = _linear(self.fc1, self.torso(obs)).relu_().view(obs.shape[0], self.heads, self.hidden)
        return torch.einsum("nkh,kah->nka", x, self.out_weight) + self.out_bias


def make_network(obs_shape: tuple[int, ...], n_out: int, heads: int = 0, reading: Reading | None = None) -> nn.Module:
    """The network `reading` says (`learner.methods.reading`; by default, the conv net for rank-3 observations and
    the MLP for the rest); `heads` > 0 gives Bootstrapped DQN's K-head network."""
    reading = reading or default(obs_shape)
    if heads:
        return HeadsNet(obs_shape, n_out, heads, reading)
    return MLP(obs_shape, n_out) if reading.network == "mlp" else ConvNet(obs_shape, n_out, reading)


def network_for(spec, n_out: int, heads: int = 0, scaled: bool = True) -> nn.Module:
    """`make_network` for an environment's observations as its `EnvSpec` reads them (`spec.reading`); `scaled=False`:
    for inputs already scaled (RND's normalised observations)."""
    return make_network(spec.obs_shape, n_out, heads, spec.reading if scaled else spec.reading.unscaled())


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
