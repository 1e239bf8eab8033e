"""Dr. GRPO (Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective"):
GRPO without the division by the group's std.

Per question q, G subsets S_1..S_G ~ pi_old at the sampling temperature, r_i = r(q, S_i):

    A_i  = r_i - mean(r)                                       no 1/std(r): no question is
                                                               up-weighted for a small spread
    loss = mean_i [ -min(rho_i A_i, clip(rho_i, 1-e, 1+e) A_i) + beta k3_i ]   (as GRPO)

Dr. GRPO also drops GRPO's 1/|o_i| length normalisation; a subset is one action here, so there
is none to drop. With GRPO's sampling, clip, mu and temperature unchanged, the difference to
`grpo` is the normalisation alone: on a group whose correctness ties, a 0.01-per-tool cost stays
a 0.01-size advantage instead of a unit one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from fgpo.train.base import register
from fgpo.train.grpo import GRPO, GRPOConfig, clipped_surrogate, zero_signal_frac


@dataclass
class DrGRPOConfig(GRPOConfig):
    """`train.dr_grpo:` section of params.yaml (GRPO's fields: group_size, clip_eps,
    inner_epochs, temperature)."""

    section: ClassVar[str] = "dr_grpo"


def dr_grpo_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
                 rewards: torch.Tensor, clip_eps: float, beta: float
                 ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """All inputs [B, G] (as grpo_loss). Returns (loss, stats)."""
    adv = rewards - rewards.mean(-1, keepdim=True)               # mean baseline, no std
    loss, stats = clipped_surrogate(logp_new, logp_old, ref_logp, adv, clip_eps, beta)
    return loss, {**stats, "zero_signal_frac": zero_signal_frac(rewards)}


@register
class DrGRPO(GRPO):
    """GRPO's sampling and clip; the unnormalised group advantage."""

    name = "dr_grpo"
    Config = DrGRPOConfig
    tuned_from = "grpo"

    def objective(self, logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        return dr_grpo_loss(logp_new, logp_old, ref_logp, rewards, self.own.clip_eps,
                            self.cfg.beta)
