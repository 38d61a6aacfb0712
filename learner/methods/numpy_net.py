"""The forward pass of `learner.methods.networks` in numpy, from published parameters.

Actors act with this so that they never import torch (startup time and memory per process);
`tests/test_networks.py` checks it equals torch's forward.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

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
    def __init__(self, params: dict[str, np.ndarray]):
        self.conv = "conv.weight" in params
        # conv: flat input index of every (position, C·k·k) entry, built on first use
        self.windows: np.ndarray | None = None
        self.b1 = params["fc1.bias"]
        self.heads = "out_weight" in params  # Bootstrapped DQN's K heads: output (N, K, n_out)
        # with heads: per-head weights for one-head-per-row calls, built on first use
        self.blocks: list[tuple[np.ndarray, ...]] | None = None
        if self.heads:
            self.w_out, self.b_out = params["out_weight"], params["out_bias"]  # (K, n_out, 128), (K, n_out)
        else:
            self.w_out, self.b_out = params["out.weight"].T, params["out.bias"]
        if self.conv:
            w = params["conv.weight"]  # (16, C, 3, 3)
            self.k = w.shape[-1]
            # windows come out as (C, kh, kw) per position, matching the weight's flattening
            self.w_conv = w.reshape(w.shape[0], -1).T
            self.b_conv = params["conv.bias"]
            # torch flattens (16, H', W'); our conv output is (H', W', 16): permute fc1's columns once
            fc1 = params["fc1.weight"]
            n_ch = w.shape[0]
            hw = fc1.shape[1] // n_ch
            self.w1 = fc1.reshape(-1, n_ch, hw).transpose(0, 2, 1).reshape(fc1.shape[0], -1).T
        else:
            self.w1 = params["fc1.weight"].T

    def patches(self, obs: np.ndarray) -> np.ndarray:
        """The conv layer's input windows, (N·H'·W', C·k·k) float32: one gather. Nets with the same
        observation shape and kernel can share them (`acting_values` computes them once for Q and β)."""
        if self.windows is None:
            # windows of the index grid come out as (H', W', C, k, k), matching the weight's flattening
            grid = np.arange(int(np.prod(obs.shape[1:]))).reshape(obs.shape[1:])
            self.windows = sliding_window_view(grid, (self.k, self.k), axis=(0, 1)).reshape(-1, self.w_conv.shape[0])
        x = obs.reshape(obs.shape[0], -1)[:, self.windows]
        return x.reshape(-1, self.windows.shape[1]).astype(np.float32, copy=False)

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
            p = self.patches(obs) if patches is None else patches
            x = np.maximum(p @ self.w_conv + self.b_conv, 0.0).reshape(n, -1)
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
    patches = q_net.patches(obs) if q_net.conv else None  # one gather for all the conv nets
    out = {name: net(obs, patches) for name, net in nets.items() if name != "q"}
    out["q"] = q_net(obs, patches, heads)
    return out
