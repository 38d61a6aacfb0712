"""The forward pass of `learner.networks` in numpy, from published parameters.

Actors act with this so that they never import torch (startup time and memory per process);
`tests/test_networks.py` checks it equals torch's forward.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


class NumpyNet:
    def __init__(self, params: dict[str, np.ndarray]):
        self.conv = "conv.weight" in params
        self.b1, self.w_out, self.b_out = params["fc1.bias"], params["out.weight"].T, params["out.bias"]
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

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = obs.astype(np.float32, copy=False)
        n = x.shape[0]
        if self.conv:
            # (N, H, W, C) -> windows (N, H', W', C, k, k)
            win = sliding_window_view(x, (self.k, self.k), axis=(1, 2))
            h = np.maximum(win.reshape(n * win.shape[1] * win.shape[2], -1) @ self.w_conv + self.b_conv, 0.0)
            x = h.reshape(n, -1)
        else:
            x = x.reshape(n, -1)
        x = np.maximum(x @ self.w1 + self.b1, 0.0)
        return x @ self.w_out + self.b_out
