"""FGPO (Full-Group Policy Optimization): the exact expectation over all 2^K subsets.

Per question q, with pi = pi_theta(. | q) over every subset S and r(q, S) read from the table:

    J(q)   = sum_S pi(S) r(q, S)                         exact expected reward
    A(q,S) = r(q, S) - J(q)          [/ std_pi(r)]        exact full-group advantage
    loss   = -sum_S pi(S) A(q, S) + beta KL(pi || pi_ref) - entropy_coef H(pi)

A is held constant (detached), so the policy term's gradient is exactly -grad J(q): subtracting
the baseline changes nothing in expectation (sum_S grad pi(S) = 0), and here there is no
expectation to estimate. KL and entropy are exact finite sums.

As an estimator (fgpo.train.base), FGPO needs no sampling: each step reads all 2^K cells of
its batch's questions. With a cache (a table built as it is read), a question's cells are paid
for when it is first read: its distinct cells are 2^K x the questions seen so far, the whole
train table (or the run's sub-table, `train.train_fraction`) once an epoch has passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from fgpo.train.base import Batch, NextBatch, RefLogp, register
from fgpo.train.exact import entropy, expectation, kl_divergence

if TYPE_CHECKING:
    from fgpo.policy.base import Policy
    from fgpo.train.settings import TrainSettings


@dataclass
class FGPOConfig:
    """`train.fgpo:` section of params.yaml."""

    normalize_std: bool = False
    """Divide the exact advantage by the exact std of r under pi. Default off: the exact
    advantage already has the right scale, and std normalisation re-weights questions by
    1/spread, up-weighting near-constant rows (the bias Dr. GRPO, Liu et al. 2025, removes)."""


def fgpo_loss(logp: torch.Tensor, ref_logp: torch.Tensor, rewards: torch.Tensor, beta: float,
              entropy_coef: float = 0.0, normalize_std: bool = False, eps: float = 1e-6
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """logp, ref_logp, rewards: [B, 2^K] (log pi, log pi_ref, r). Returns (loss, stats)."""
    p = logp.exp()
    expected = expectation(p, rewards)[:, None]                  # J(q) = E_pi[r]
    adv = rewards - expected                                     # exact advantage
    if normalize_std:
        std = expectation(p, adv.pow(2))[:, None].sqrt()         # exact std of r under pi
        adv = adv / (std + eps)
    adv = adv.detach()
    policy_term = -expectation(p, adv)                           # -sum_S pi(S) A(q, S)
    kl = kl_divergence(p, logp, ref_logp)                        # exact KL(pi || pi_ref)
    h = entropy(p, logp)                                         # exact H(pi)
    loss = (policy_term + beta * kl - entropy_coef * h).mean()
    constant_row = rewards.amax(-1) == rewards.amin(-1)          # the only zero-signal case
    stats = {"expected_reward": expected.squeeze(-1).mean(), "kl": kl.mean(),
             "entropy": h.mean(), "zero_signal_frac": constant_row.float().mean()}
    return loss, {k: v.detach() for k, v in stats.items()}


@register
class FGPO:
    """One batch of questions per step, the loss over all their 2^K subsets."""

    name = "fgpo"
    Config = FGPOConfig
    steps_per_batch = 1
    tuned_from: str | None = None  # an untuned estimator starts from this one's tuned values

    def __init__(self, cfg: TrainSettings, own: FGPOConfig, rewards: torch.Tensor, n_train: int,
                 generator: torch.Generator) -> None:
        self.cfg, self.own, self.rewards = cfg, own, rewards
        self.evals = 0                 # cells read, repeats counted (no cache)
        self.rows: set[int] = set()    # questions read: each one's 2^K cells paid once (cache)

    def collect(self, step: int, policy: Policy, next_batch: NextBatch) -> Batch:
        idx = next_batch()
        self.evals += idx.numel() * self.rewards.shape[1]
        self.rows.update(idx.tolist())
        return Batch(idx)

    def loss(self, policy: Policy, batch: Batch, ref_logp: RefLogp
             ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        cfg, idx = self.cfg, batch.idx
        logp = policy.log_probs(idx)
        loss, stats = fgpo_loss(logp, ref_logp(idx), self.rewards[idx], cfg.beta,
                                cfg.entropy_coef, self.own.normalize_std, cfg.eps)
        return loss, logp, stats

    @property
    def reward_evals(self) -> int:
        return self.evals

    @property
    def reward_evals_unique(self) -> int:
        return len(self.rows) * self.rewards.shape[1]

    def state_dict(self) -> dict[str, Any]:
        return {"evals": self.evals, "rows": self.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.evals, self.rows = state["evals"], state["rows"]
