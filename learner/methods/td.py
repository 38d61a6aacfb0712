"""Pieces every DQN-family loss shares."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def td_loss(prediction: torch.Tensor, target: torch.Tensor, kind: str) -> torch.Tensor:
    """Huber (smooth L1, the MinAtar/DQN convention) or MSE on Q(s,a) − y."""
    if kind == "huber":
        return F.smooth_l1_loss(prediction, target)
    return F.mse_loss(prediction, target)


def bootstrap(reward: torch.Tensor, terminated: torch.Tensor, next_value: torch.Tensor,
              gamma: float) -> torch.Tensor:
    """r + γ (1 − terminated) · V(s′). Truncation is not termination: it bootstraps."""
    return reward + gamma * (1.0 - terminated.float()) * next_value
