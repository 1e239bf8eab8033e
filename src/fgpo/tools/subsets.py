"""Tool subsets as bit masks: bit i of mask m set = tool i is in subset m (2^K masks)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_TOOLS = ["composition", "motif_scan", "orf_finder", "splice_sites", "restriction_sites",
                 "organism_signature"]
"""The default six tools in bit order (`tools.names` when params.yaml gives none)."""


def subset_tools(mask: int, names: Sequence[str]) -> list[str]:
    """The names of the tools in subset `mask`, in bit order."""
    return [n for i, n in enumerate(names) if mask >> i & 1]


def subset_bits(n_tools: int) -> np.ndarray:
    """[2^K, K] 0/1 matrix: row m holds the bits of mask m (column i = tool i)."""
    masks = np.arange(2 ** n_tools)
    return (masks[:, None] >> np.arange(n_tools)) & 1


def tools_per_mask(n_tools: int) -> np.ndarray:
    """[2^K] number of tools in each subset."""
    return subset_bits(n_tools).sum(1)
