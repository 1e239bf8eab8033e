"""Policy metrics read exactly from the reward table: greedy and expected accuracy and reward,
greedy and expected tools per question, entropy, and the zero-signal probability of a G-sample group. Training validates with
them (fgpo.train.loop); the test evaluation (fgpo.evaluate) applies the same to the test split."""

from __future__ import annotations

import numpy as np
import torch

from fgpo.policy.base import Policy
from fgpo.rewards.stats import zero_signal_prob
from fgpo.train.exact import entropy, expectation


@torch.no_grad()
def predict(policy: Policy, idx: np.ndarray, batch_size: int = 128) -> torch.Tensor:
    """log pi(S | q) for the questions `idx`, [n, 2^K], in eval mode, on the CPU."""
    was_training = policy.training
    policy.eval()
    out = [policy.log_probs(torch.as_tensor(idx[i:i + batch_size]))
           for i in range(0, len(idx), batch_size)]
    policy.train(was_training)
    return torch.cat(out).cpu() if out else torch.empty(0, policy.n_subsets)


def policy_metrics(logp: torch.Tensor, correct: np.ndarray, reward: np.ndarray,
                   n_tools: np.ndarray, group_size: int) -> dict[str, float]:
    """Metrics of pi on a split (rows aligned with `correct` / `reward` [n, 2^K])."""
    lp = logp.double().numpy()
    p = np.exp(lp)
    greedy = lp.argmax(1)
    rows = np.arange(len(lp))
    return {
        "accuracy": float(correct[rows, greedy].mean()),
        "reward": float(reward[rows, greedy].mean()),
        "expected_accuracy": float(expectation(p, correct).mean()),
        "expected_reward": float(expectation(p, reward).mean()),
        "tools_per_question": float(n_tools[greedy].mean()),
        "expected_tools_per_question": float(expectation(p, n_tools[None, :]).mean()),
        "entropy": float(entropy(p, lp).mean()),
        "zero_signal_frac": float(zero_signal_prob(p, reward, group_size).mean()),
    }
