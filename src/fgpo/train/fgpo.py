"""FGPO (Full-Group Policy Optimization): the exact expectation over all 2^K subsets.

Per question q, with pi = pi_theta(. | q) over every subset S and r(q, S) read from the table:

    J(q)   = sum_S pi(S) r(q, S)                         exact expected reward
    A(q,S) = r(q, S) - J(q)          [/ std_pi(r)]        exact full-group advantage
    loss   = -sum_S pi(S) A(q, S) + beta KL(pi || pi_ref) - entropy_coef H(pi)

A is held constant (detached), so the policy term's gradient is exactly -grad J(q): subtracting
the baseline changes nothing in expectation (sum_S grad pi(S) = 0), and here there is no
expectation to estimate. KL and entropy are exact finite sums.
"""

from __future__ import annotations

import torch


def fgpo_loss(logp: torch.Tensor, ref_logp: torch.Tensor, rewards: torch.Tensor, beta: float,
              entropy_coef: float = 0.0, normalize_std: bool = False, eps: float = 1e-6
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """logp, ref_logp, rewards: [B, 2^K] (log pi, log pi_ref, r). Returns (loss, stats)."""
    p = logp.exp()
    expected = (p * rewards).sum(-1, keepdim=True)               # J(q) = E_pi[r]
    adv = rewards - expected                                     # exact advantage
    if normalize_std:
        std = (p * adv.pow(2)).sum(-1, keepdim=True).sqrt()      # exact std of r under pi
        adv = adv / (std + eps)
    adv = adv.detach()
    policy_term = -(p * adv).sum(-1)                             # -sum_S pi(S) A(q, S)
    kl = (p * (logp - ref_logp)).sum(-1)                         # exact KL(pi || pi_ref)
    entropy = -(p * logp).sum(-1)                                # exact H(pi)
    loss = (policy_term + beta * kl - entropy_coef * entropy).mean()
    constant_row = rewards.amax(-1) == rewards.amin(-1)          # the only zero-signal case
    stats = {"expected_reward": expected.squeeze(-1).mean(), "kl": kl.mean(),
             "entropy": entropy.mean(), "zero_signal_frac": constant_row.float().mean()}
    return loss, {k: v.detach() for k, v in stats.items()}
