"""FGPO with the exact std normalisation: the full-group limit of GRPO's advantage.

    J(q)   = sum_S pi(S) r(q, S)
    A(q,S) = (r(q, S) - J(q)) / (std_pi(r) + eps),   std_pi(r)^2 = sum_S pi(S) (r - J)^2
    loss   = -sum_S pi(S) A(q, S) + beta KL(pi || pi_ref)       (fgpo_loss, normalize_std)

GRPO's group mean and std converge to J(q) and std_pi(r) as G grows, so `fgpo_std` vs `grpo`
isolates exact-vs-sampled at GRPO's normalisation, and `fgpo_std` vs `fgpo` the normalisation
at exactness (the ablation's decomposition of the FGPO - GRPO gap). The same loss as
`train.fgpo.normalize_std: true`, named so that both run side by side in one stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from fgpo.train.base import register
from fgpo.train.fgpo import FGPO, FGPOConfig

if TYPE_CHECKING:
    from fgpo.train.settings import TrainSettings


@dataclass
class FGPOStdConfig:
    """`train.fgpo_std:` section of params.yaml: none of its own (the normalisation is the
    estimator); the shared train settings apply."""


@register
class FGPOStd(FGPO):
    """FGPO's exact loss with the advantage divided by the exact std of r under pi."""

    name = "fgpo_std"
    Config = FGPOStdConfig
    tuned_from = "fgpo"

    def __init__(self, cfg: TrainSettings, own: FGPOStdConfig, rewards: torch.Tensor, n_train: int,
                 generator: torch.Generator) -> None:
        super().__init__(cfg, FGPOConfig(normalize_std=True), rewards, n_train, generator)
