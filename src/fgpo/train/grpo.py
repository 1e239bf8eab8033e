"""GRPO (Shao et al. 2024, DeepSeekMath): G sampled subsets per question, group-normalised.

Per question q, G subsets S_1..S_G ~ pi_old (at the sampling temperature), r_i = r(q, S_i) from
the same table FGPO reads:

    A_i   = (r_i - mean(r)) / (std(r) + eps)                         group-normalised advantage
    rho_i = pi_theta(S_i) / pi_old(S_i)
    loss  = mean_i [ -min(rho_i A_i, clip(rho_i, 1-e, 1+e) A_i) + beta k3_i ]
    k3_i  = pi_ref(S_i)/pi_theta(S_i) - log(pi_ref(S_i)/pi_theta(S_i)) - 1   (Schulman's k3)

When all G rewards of a group are equal, std = 0 and every A_i = 0: the question gives no
learning signal (the paper's zero-signal fraction).

As an estimator (fgpo.train.base), GRPO samples a new batch of groups every mu optimiser steps
and pays one reward evaluation per sampled subset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from fgpo.config import check_number
from fgpo.train.base import Batch, NextBatch, RefLogp, register

if TYPE_CHECKING:
    from fgpo.policy.base import Policy
    from fgpo.train.settings import TrainSettings


@dataclass
class GRPOConfig:
    """`train.grpo:` section of params.yaml."""

    group_size: int = 8
    """G, subsets sampled per question (DeepSeekMath GRPO; the paper's G)."""
    clip_eps: float = 0.2
    """PPO clip range on the subset-level ratio (Schulman et al. 2017)."""
    inner_epochs: int = 2
    """mu: optimiser steps per sampled batch (the PPO/GRPO inner loop)."""
    temperature: float = 1.0
    """Sampling temperature; pi_theta and pi_old are compared at the same temperature."""
    section: ClassVar[str] = "grpo"  # its params.yaml section, for the error messages

    def __post_init__(self) -> None:
        at = f"train.{self.section}"
        check_number(self.group_size, f"{at}.group_size", "a sampled estimator needs at least "
                     "two samples per group (a group of one has no baseline), e.g. 8", ge=2,
                     integer=True)
        check_number(self.clip_eps, f"{at}.clip_eps", "set a positive PPO clip range, "
                     "e.g. 0.2", gt=0)
        check_number(self.inner_epochs, f"{at}.inner_epochs", "set the optimiser steps "
                     "per sampled batch, e.g. 2", ge=1, integer=True)
        check_number(self.temperature, f"{at}.temperature", "set a positive sampling "
                     "temperature, e.g. 1.0", gt=0)


def clipped_surrogate(logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
                      adv: torch.Tensor, clip_eps: float, beta: float
                      ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's clipped ratio objective with Schulman's k3 KL, shared by every sampled estimator
    (they differ only in the advantage). All inputs [B, G]: log-probs of the sampled subsets
    under pi_theta, pi_old, pi_ref, and their advantages. Returns (loss, stats)."""
    ratio = (logp_new - logp_old.detach()).exp()
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv
    policy_term = -torch.min(unclipped, clipped)
    log_ref_ratio = ref_logp - logp_new
    k3 = log_ref_ratio.exp() - log_ref_ratio - 1                 # >= 0, unbiased for KL
    loss = (policy_term + beta * k3).mean()
    stats = {"k3": k3.mean(), "clip_frac": ((ratio - 1).abs() > clip_eps).float().mean()}
    return loss, {k: v.detach() for k, v in stats.items()}


def zero_signal_frac(rewards: torch.Tensor) -> torch.Tensor:
    """Fraction of groups [B, G] whose G rewards are all equal (no signal for any baseline)."""
    return (rewards.amax(-1) == rewards.amin(-1)).float().mean()


def grpo_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
              rewards: torch.Tensor, clip_eps: float, beta: float, eps: float = 1e-6
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """All inputs [B, G]: log-probs of the sampled subsets under pi_theta, pi_old, pi_ref, and
    their rewards. Returns (loss, stats)."""
    mean = rewards.mean(-1, keepdim=True)
    std = rewards.std(-1, keepdim=True)                          # unbiased, as in TRL
    adv = (rewards - mean) / (std + eps)
    loss, stats = clipped_surrogate(logp_new, logp_old, ref_logp, adv, clip_eps, beta)
    return loss, {**stats, "zero_signal_frac": zero_signal_frac(rewards)}


def sample_groups(logp: torch.Tensor, group_size: int, temperature: float,
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw G subsets per question from softmax(logp / T); returns (masks [B, G], the
    tempered log-probs [B, 2^K] they were drawn from), on logp's device. The draw itself runs
    on the CPU generator, so a seed gives the same subsets on any device."""
    tempered = torch.log_softmax(logp.detach() / temperature, dim=-1)
    masks = torch.multinomial(tempered.exp().cpu(), group_size, replacement=True,
                              generator=generator)
    return masks.to(logp.device), tempered


@dataclass
class Groups(Batch):
    """B questions with G subsets each, drawn from pi_old at the sampling temperature."""

    masks: torch.Tensor     # [B, G] sampled subsets
    logp_old: torch.Tensor  # [B, G] their tempered log-probs under pi_old


@register
class GRPO:
    """Sample groups every mu steps; each step, the clipped loss at the sampling temperature.
    The sampled estimators of the ablation (Dr. GRPO, RLOO, DAPO's dynamic sampling) are
    subclasses that change `objective` (the advantage) or `draw` (which subsets are paid for)."""

    name = "grpo"
    Config = GRPOConfig
    tuned_from: str | None = None  # an untuned estimator starts from this one's tuned values

    def __init__(self, cfg: TrainSettings, own: GRPOConfig, rewards: torch.Tensor, n_train: int,
                 generator: torch.Generator) -> None:
        self.cfg, self.own, self.rewards, self.generator = cfg, own, rewards, generator
        self.steps_per_batch = own.inner_epochs  # mu steps on each rollout batch
        self.groups: Groups | None = None
        self.logp_at_sampling: torch.Tensor | None = None  # pi_theta's log-probs, with grad
        self.evals = 0                 # every lookup = one reasoner call
        self.cells: set[int] = set()   # row * 2^K + mask of each distinct lookup

    def collect(self, step: int, policy: Policy, next_batch: NextBatch) -> Groups:
        if step % self.own.inner_epochs == 0 or self.groups is None:  # a new batch of groups
            idx = next_batch()
            # pi_old is pi_theta now: this forward also serves the step's loss (one pass, not two)
            self.logp_at_sampling = policy.log_probs(idx)
            masks, old = self.draw(idx, self.logp_at_sampling)
            self.groups = Groups(idx, masks, old.gather(1, masks))
        return self.groups

    def draw(self, idx: torch.Tensor, logp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """G subsets per question from pi_old at the temperature, each paid for; returns
        (masks [B, G], the tempered log-probs [B, 2^K])."""
        masks, tempered = sample_groups(logp, self.own.group_size, self.own.temperature,
                                        self.generator)
        self.pay(idx, masks)
        return masks, tempered

    def pay(self, idx: torch.Tensor, masks: torch.Tensor) -> None:
        """Count the reward lookups of `masks` [B, G] on the rows `idx` [B]."""
        self.evals += masks.numel()
        self.cells.update((idx[:, None].cpu() * self.rewards.shape[1]
                           + masks.cpu()).flatten().tolist())

    def objective(self, logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
                  rewards: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss on the sampled subsets (all [B, G]); GRPO: the group-normalised one."""
        return grpo_loss(logp_new, logp_old, ref_logp, rewards, self.own.clip_eps,
                         self.cfg.beta, self.cfg.eps)

    def loss(self, policy: Policy, batch: Groups, ref_logp: RefLogp
             ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        g, idx, masks = self.own, batch.idx, batch.masks
        logp, self.logp_at_sampling = self.logp_at_sampling, None  # valid for one step only
        if logp is None:  # a later inner step: the weights have moved since the sampling
            logp = policy.log_probs(idx)
        tempered = torch.log_softmax(logp / g.temperature, dim=-1)  # pi_theta at T
        ref_tempered = torch.log_softmax(ref_logp(idx) / g.temperature, dim=-1)
        loss, stats = self.objective(tempered.gather(1, masks), batch.logp_old,
                                     ref_tempered.gather(1, masks),
                                     self.rewards[idx].gather(1, masks))
        return loss, logp, stats

    @property
    def reward_evals(self) -> int:
        return self.evals

    @property
    def reward_evals_unique(self) -> int:
        return len(self.cells)

    def state_dict(self) -> dict[str, Any]:
        return {"groups": self.groups, "evals": self.evals, "cells": self.cells}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.groups, self.evals, self.cells = state["groups"], state["evals"], state["cells"]
