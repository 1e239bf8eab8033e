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
from typing import TYPE_CHECKING, Any

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

    def __post_init__(self) -> None:
        check_number(self.group_size, "train.grpo.group_size", "GRPO needs at least two "
                     "samples per group (a group of one has no std), e.g. 8", ge=2, integer=True)
        check_number(self.clip_eps, "train.grpo.clip_eps", "set a positive PPO clip range, "
                     "e.g. 0.2", gt=0)
        check_number(self.inner_epochs, "train.grpo.inner_epochs", "set the optimiser steps "
                     "per sampled batch, e.g. 2", ge=1, integer=True)
        check_number(self.temperature, "train.grpo.temperature", "set a positive sampling "
                     "temperature, e.g. 1.0", gt=0)


def grpo_loss(logp_new: torch.Tensor, logp_old: torch.Tensor, ref_logp: torch.Tensor,
              rewards: torch.Tensor, clip_eps: float, beta: float, eps: float = 1e-6
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """All inputs [B, G]: log-probs of the sampled subsets under pi_theta, pi_old, pi_ref, and
    their rewards. Returns (loss, stats)."""
    mean = rewards.mean(-1, keepdim=True)
    std = rewards.std(-1, keepdim=True)                          # unbiased, as in TRL
    adv = (rewards - mean) / (std + eps)
    ratio = (logp_new - logp_old.detach()).exp()
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv
    policy_term = -torch.min(unclipped, clipped)
    log_ref_ratio = ref_logp - logp_new
    k3 = log_ref_ratio.exp() - log_ref_ratio - 1                 # >= 0, unbiased for KL
    loss = (policy_term + beta * k3).mean()
    zero_signal = rewards.amax(-1) == rewards.amin(-1)           # all G rewards equal
    stats = {"zero_signal_frac": zero_signal.float().mean(), "k3": k3.mean(),
             "clip_frac": ((ratio - 1).abs() > clip_eps).float().mean()}
    return loss, {k: v.detach() for k, v in stats.items()}


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
    """Sample groups every mu steps; each step, the clipped loss at the sampling temperature."""

    name = "grpo"
    Config = GRPOConfig

    def __init__(self, cfg: TrainSettings, own: GRPOConfig, rewards: torch.Tensor, n_train: int,
                 generator: torch.Generator) -> None:
        self.cfg, self.own, self.rewards, self.generator = cfg, own, rewards, generator
        self.steps_per_batch = own.inner_epochs  # mu steps on each rollout batch
        self.groups: Groups | None = None
        self.logp_at_sampling: torch.Tensor | None = None  # pi_theta's log-probs, with grad
        self.evals = 0                 # every lookup = one reasoner call
        self.cells: set[int] = set()   # row * 2^K + mask of each distinct lookup

    def collect(self, step: int, policy: Policy, next_batch: NextBatch) -> Groups:
        g = self.own
        if step % g.inner_epochs == 0 or self.groups is None:  # sample a new batch of groups
            idx = next_batch()
            # pi_old is pi_theta now: this forward also serves the step's loss (one pass, not two)
            self.logp_at_sampling = policy.log_probs(idx)
            masks, old = sample_groups(self.logp_at_sampling, g.group_size, g.temperature,
                                       self.generator)
            self.groups = Groups(idx, masks, old.gather(1, masks))
            self.evals += masks.numel()
            self.cells.update((idx[:, None].cpu() * self.rewards.shape[1]
                               + masks.cpu()).flatten().tolist())
        return self.groups

    def loss(self, policy: Policy, batch: Groups, ref_logp: RefLogp
             ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        cfg, g, idx, masks = self.cfg, self.own, batch.idx, batch.masks
        logp, self.logp_at_sampling = self.logp_at_sampling, None  # valid for one step only
        if logp is None:  # a later inner step: the weights have moved since the sampling
            logp = policy.log_probs(idx)
        tempered = torch.log_softmax(logp / g.temperature, dim=-1)  # pi_theta at T
        ref_tempered = torch.log_softmax(ref_logp(idx) / g.temperature, dim=-1)
        loss, stats = grpo_loss(tempered.gather(1, masks), batch.logp_old,
                                ref_tempered.gather(1, masks), self.rewards[idx].gather(1, masks),
                                g.clip_eps, cfg.beta, cfg.eps)
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
