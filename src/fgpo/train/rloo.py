"""RLOO, REINFORCE Leave-One-Out (Kool et al. 2019, "Buy 4 REINFORCE samples, get a baseline
for free!"; Ahmadian et al. 2024, "Back to Basics"): each sample's baseline is the mean reward
of the other G - 1 samples of its group.

    A_i  = r_i - 1/(G-1) sum_{j != i} r_j  =  G/(G-1) (r_i - mean(r))
    loss = mean_i [ -min(rho_i A_i, clip(rho_i, 1-e, 1+e) A_i) + beta k3_i ]

The baseline of sample i does not depend on S_i, so the estimate is unbiased for any G >= 2
(GRPO's and Dr. GRPO's in-group mean includes r_i: a (G-1)/G shrinkage). Ahmadian et al.
train on-policy with the KL in the reward; here the sampling, mu, clip and k3 term are GRPO's,
so that only the baseline differs. The identity above makes RLOO Dr. GRPO with its advantages
scaled by G/(G-1) (1.07 at G = 16): expect the two to agree closely.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fgpo.train.base import register
from fgpo.train.grpo import GRPO, GRPOConfig, clipped_surrogate, zero_signal_frac


@dataclass
class RLOOConfig(GRPOConfig):
    """`train.rloo:` section of params.yaml (GRPO's fields: group_size, clip_eps,
    inner_epochs, temperature)."""

    section: ClassVar[str] = "rloo"


def rloo_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
              rewards: torch.Tensor, clip_eps: float, beta: float
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """All inputs [B, G] (as grpo_loss). Returns (loss, stats)."""
    G = rewards.shape[-1]
    others = (rewards.sum(-1, keepdim=True) - rewards) / (G - 1)  # leave-one-out mean
    adv = rewards - others
    loss, stats = clipped_surrogate(logp_new, logp_old, ref_logp, adv, clip_eps, beta)
    return loss, {**stats, "zero_signal_frac": zero_signal_frac(rewards)}


@register
class RLOO(GRPO):
    """GRPO's sampling and clip; the leave-one-out baseline."""

    name = "rloo"
    Config = RLOOConfig
    tuned_from = "grpo"

    def objective(self, logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return rloo_loss(logp_new, logp_old, ref_logp, rewards, self.own.clip_eps, self.cfg.beta)
