"""The forward pass of `learner.methods.networks` in numpy, from published parameters.

Actors act with this so that they never import torch (startup time and memory per process);
`tests/test_networks.py` checks it equals torch's forward.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from learner.methods.reading import TORSOS, Reading, torso

SMALL_BATCH = 3  # up to this many rows, a row-by-row matrix–vector product beats OpenBLAS's small-M gemm 2x


def unflatten(weights: dict) -> dict[str, dict[str, np.ndarray]]:
    """`learner.methods.networks.flat_weights`' buffer as {network: {parameter: array}} (views, no copy).
    A dict that is already per network passes through."""
    if "flat" not in weights:
        return weights
    out: dict[str, dict[str, np.ndarray]] = {}
    offset = 0
    for name, key, shape in weights["layout"]:
        size = int(np.prod(shape))
        out.setdefault(name, {})[key] = weights["flat"][offset:offset + size].reshape(shape)
        offset += size
    return out


class NumpyNet:
    """One network's forward pass from its parameters: its torso as they have it (`reading.torso`), the layout and
    pixels of its input as `reading` says (`learner.methods.reading`; by default HWC, unscaled)."""

    def __init__(self, params: dict[str, np.ndarray], reading: Reading | None = None):
        # the torso its parameters have (a method may give an MLP to any observation); the layout and the pixels'
        # scale as `reading` says
        network = torso(params)
        given = reading or Reading("small", "HWC")
        self.reading = reading = Reading() if network == "mlp" else Reading(network, given.layout or "HWC",
                                                                            given.pixels, given.why)
        self.conv = reading.network != "mlp"
        # each convolution: its weight as a (C·k·k, out) matrix, bias, kernel, stride; the first's weight carries
        # the pixels' 1/255 (one multiply fewer a step)
        self.layers = []
        for i, (name, _, kernel, stride) in enumerate(TORSOS[reading.network] if self.conv else ()):
            w = params[f"{name}.weight"]  # (out, C, k, k): windows come out as (C, kh, kw), its flattening
            matrix = w.reshape(w.shape[0], -1).T
            self.layers.append(((matrix * np.float32(reading.scale)) if i == 0 and reading.pixels else matrix,
                                params[f"{name}.bias"], kernel, stride))
        # per convolution: flat input index of every (position, C·k·k) entry, built on first use
        self.windows: list[np.ndarray] | None = None
        self.b1 = params["fc1.bias"]
        self.heads = "out_weight" in params  # Bootstrapped DQN's K heads: output (N, K, n_out)
        # with heads: per-head weights for one-head-per-row calls, built on first use
        self.blocks: list[tuple[np.ndarray, ...]] | None = None
        if self.heads:
            self.w_out, self.b_out = params["out_weight"], params["out_bias"]  # (K, n_out, 128), (K, n_out)
        else:
            self.w_out, self.b_out = params["out.weight"].T, params["out.bias"]
        fc1 = params["fc1.weight"]
        if self.conv:
            # torch flattens (out, H', W'); our last conv's output is (H', W', out): permute fc1's columns once
            n_ch = self.layers[-1][0].shape[1]
            hw = fc1.shape[1] // n_ch
            self.w1 = fc1.reshape(-1, n_ch, hw).transpose(0, 2, 1).reshape(fc1.shape[0], -1).T
        else:
            self.w1 = fc1.T

    def _windows(self, shape: tuple[int, ...]) -> list[np.ndarray]:
        """For each convolution, the flat input index of every (position, C·k·k) entry (its input: the observation
        in its layout, then the previous convolution's (H', W', out) output)."""
        if self.windows is None:
            grid = np.arange(int(np.prod(shape))).reshape(shape)
            if self.reading.layout == "CHW":
                grid = grid.transpose(1, 2, 0)
            self.windows = []
            for matrix, _, kernel, stride in self.layers:
                # windows of the index grid come out as (H', W', C, k, k), matching the weight's flattening
                view = sliding_window_view(grid, (kernel, kernel), axis=(0, 1))[::stride, ::stride]
                self.windows.append(view.reshape(-1, matrix.shape[0]))
                grid = np.arange(view.shape[0] * view.shape[1] * matrix.shape[1]).reshape(
                    view.shape[0], view.shape[1], matrix.shape[1])
        return self.windows

    def patches(self, obs: np.ndarray) -> np.ndarray:
        """The first convolution's input windows, (N·H'·W', C·k·k) float32: one gather. Nets that read the same
        observations alike can share them (`acting_values` computes them once for Q and β)."""
        windows = self._windows(obs.shape[1:])[0]
        x = obs.reshape(obs.shape[0], -1)[:, windows]
        return x.reshape(-1, windows.shape[1]).astype(np.float32, copy=False)

    def features(self, obs: np.ndarray, patches: np.ndarray | None = None) -> np.ndarray:
        """The convolutions' output, (N, H'·W'·out), from the observations (or the first one's `patches`)."""
        n = obs.shape[0]
        x = self.patches(obs) if patches is None else patches
        windows = self._windows(obs.shape[1:])
        for i, (matrix, bias, _, _) in enumerate(self.layers):
            if i:
                x = x.reshape(n, -1)[:, windows[i]].reshape(-1, windows[i].shape[1])
            x = np.maximum(x @ matrix + bias, 0.0)
        return x.reshape(n, -1)

    def _head_blocks(self) -> list[tuple[np.ndarray, ...]]:
        """Per head: its slice of the first layer (contiguous) and its output layer."""
        if self.blocks is None:
            k, _, hidden = self.w_out.shape
            self.blocks = [(np.ascontiguousarray(self.w1[:, h * hidden:(h + 1) * hidden]),
                            self.b1[h * hidden:(h + 1) * hidden], np.ascontiguousarray(self.w_out[h].T),
                            self.b_out[h]) for h in range(k)]
        return self.blocks

    def __call__(self, obs: np.ndarray, patches: np.ndarray | None = None,
                 heads: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """The output for each row of `obs`; with K heads, (N, K, n_out), or with `heads` (a head per row)
        only that head's (N, n_out): an actor needs one head per episode, a tenth of the arithmetic."""
        n = obs.shape[0]
        if self.conv:
            x = self.features(obs, patches)
        else:
            x = obs.reshape(n, -1).astype(np.float32, copy=False)
        if self.heads and heads is not None:
            blocks = self._head_blocks()
            out = []
            for row, h in zip(x, heads, strict=True):
                w1, b1, w_out, b_out = blocks[h]
                out.append(np.maximum(row @ w1 + b1, 0.0) @ w_out + b_out)
            return np.stack(out)
        if n <= SMALL_BATCH:
            x = np.stack([row @ self.w1 for row in x])
        else:
            x = x @ self.w1
        x = np.maximum(x + self.b1, 0.0)
        if self.heads:
            k, _, hidden = self.w_out.shape
            return np.einsum("nkh,kah->nka", x.reshape(n, k, hidden), self.w_out) + self.b_out
        return x @ self.w_out + self.b_out


def acting_values(nets: dict[str, NumpyNet], obs: np.ndarray, heads: list[int] | None = None) -> dict[str, np.ndarray]:
    """Every acting network's raw output for a batch of observations, by the network's name: "q" (N, A), or
    with K heads (N, K, A), or with `heads` (one per row) that head's (N, A). The method's acting reads them
    as it needs (`learner.methods.contracts.Acting.outputs`)."""
    q_net = nets["q"]
    patches = q_net.patches(obs) if q_net.conv else None  # one gather for all the conv nets that read alike
    out = {name: net(obs, patches if net.reading == q_net.reading else None) for name, net in nets.items()
           if name != "q"}
    out["q"] = q_net(obs, patches, heads)
    return out
