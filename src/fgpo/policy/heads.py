"""Subset-scoring heads: pooled embedding [B, d] -> logits over all 2^K subsets [B, 2^K]."""

from __future__ import annotations

import itertools

import torch
from torch import nn

from fgpo.tools.subsets import subset_bits


class SubsetHead(nn.Module):
    """One logit per subset: a linear map to 2^K outputs (zero-initialised: uniform at start)."""

    def __init__(self, dim: int, n_tools: int) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, 2 ** n_tools)
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.linear(h)


class FactorizedHead(nn.Module):
    """score(S) = sum_{i in S} a_i(h) + sum_{i<j in S} b_ij(h): K + K(K-1)/2 outputs, so the
    head grows quadratically, not exponentially, in K (zero-initialised: uniform at start)."""

    def __init__(self, dim: int, n_tools: int) -> None:
        super().__init__()
        bits = torch.from_numpy(subset_bits(n_tools)).float()
        pairs = list(itertools.combinations(range(n_tools), 2))
        pair_bits = (torch.stack([bits[:, i] * bits[:, j] for i, j in pairs], dim=1)
                     if pairs else torch.zeros(2 ** n_tools, 0))
        self.register_buffer("design", torch.cat([bits, pair_bits], dim=1))  # [2^K, F]
        self.linear = nn.Linear(dim, self.design.shape[1])
        nn.init.zeros_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.linear(h) @ self.design.T
