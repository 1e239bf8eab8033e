"""Paired comparisons of two methods tested on the same questions with the same seeds.

Both methods answer every test question once per training seed, so their scores pair up cell by
cell: diff[s, q] = score_A(seed s, question q) - score_B(seed s, question q) (correctness 1/0,
or reward). Two tests of "is A better than B here":

- `paired_bootstrap`: the mean difference with a percentile interval from a two-way bootstrap
  that resamples questions and seeds independently, with replacement (each replicate's statistic
  is the mean over its resampled cells), so both the question sample and the seed-to-seed
  variation of training widen the interval (Efron & Tibshirani 1993, ch. 13; the two-way scheme
  of McCullagh 2000, "Resampling and exchangeable arrays").
- `mcnemar`: McNemar's exact test on paired correctness: among the cells where exactly one
  method is right, A is right in b and B in c; under "no difference" b ~ Binomial(b + c, 1/2).

`verdict` turns an interval into win / tie / loss for A: a win or a loss only when the interval
excludes zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest


@dataclass(frozen=True)
class Interval:
    """A mean difference and its (lo, hi) interval at `level`."""

    mean: float
    lo: float
    hi: float
    level: float


def bootstrap_means(diff: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """`n_boot` replicates of the mean of `diff` [S, Q], seeds and questions resampled.

    A replicate draws S seeds and Q questions with replacement; its mean over the S x Q
    resampled cells is w_s . diff . w_q / (S Q), with w the multiplicity of each seed and
    question (multinomial counts), which avoids building the resampled arrays.
    """
    n_seeds, n_questions = diff.shape
    w_s = rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), size=n_boot)
    w_q = rng.multinomial(n_questions, np.full(n_questions, 1 / n_questions), size=n_boot)
    return np.einsum("bs,sq,bq->b", w_s, diff, w_q) / (n_seeds * n_questions)


def paired_bootstrap(diff: np.ndarray, n_boot: int = 10_000, level: float = 0.95,
                     seed: int = 0) -> Interval:
    """Mean of `diff` [S seeds, Q questions] with a two-way percentile bootstrap interval."""
    diff = np.asarray(diff, dtype=float)
    if diff.ndim != 2 or diff.size == 0:
        raise ValueError(f"diff must be a non-empty [seeds, questions] array, got shape "
                         f"{diff.shape}")
    means = bootstrap_means(diff, n_boot, np.random.default_rng(seed))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(diff.mean()), float(lo), float(hi), level)


def mcnemar(correct_a: np.ndarray, correct_b: np.ndarray) -> tuple[int, int, float]:
    """(b, c, two-sided exact p) for paired correctness arrays of one shape (any, e.g. [S, Q]):
    b = cells only A got right, c = cells only B got right."""
    a, b_ = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if a.shape != b_.shape:
        raise ValueError(f"paired arrays differ in shape: {a.shape} vs {b_.shape}")
    b, c = int((a & ~b_).sum()), int((~a & b_).sum())
    p = 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5).pvalue)
    return b, c, p


def verdict(interval: Interval) -> str:
    """win | tie | loss for method A: decided only when the interval excludes zero."""
    if interval.lo > 0:
        return "win"
    if interval.hi < 0:
        return "loss"
    return "tie"
