"""Paired comparisons of two methods tested on the same questions with the same seeds.

Both methods answer every test question once per training seed, so their scores pair up cell by
cell: diff[s, q] = score_A(seed s, question q) - score_B(seed s, question q) (correctness 1/0,
or reward). On one setting:

- `paired_bootstrap`: the mean difference with a percentile interval from a two-way bootstrap
  that resamples questions and seeds independently, with replacement (each replicate's statistic
  is the mean over its resampled cells), so both the question sample and the seed-to-seed
  variation of training widen the interval (Efron & Tibshirani 1993, ch. 13; the two-way scheme
  of McCullagh 2000, "Resampling and exchangeable arrays"). Its two-sided p-value is read off
  the same replicates (twice the smaller tail beyond zero), so p < 1 - level exactly when the
  interval excludes zero, up to the quantile's interpolation.
- `leave_one_seed_out`: the same interval with each seed left out in turn: a verdict that
  survives every one of them does not hang on one training run.
- `cmh_by_seed`: the Cochran-Mantel-Haenszel test of correctness by method, stratified by seed
  (one 2 x 2 table per seed: method x right/wrong over the test questions). Each seed keeps its
  own accuracy level, so seeds are not pooled as if they were more questions (pooled McNemar
  on seeds x questions cells treats a run's answers as independent draws and overstates the
  evidence); it still treats the questions within a seed as independent.

Over several comparisons:

- `holm`: Holm's step-down adjustment of p-values, which controls the family-wise error rate
  over the comparisons of one table (e.g. the settings of the headline).
- `across_settings`: settings as the unit: a two-sided sign test on how many settings favour A,
  and the mean per-setting difference with a Student t interval over settings.

`verdict` turns an interval into win / tie / loss for A: a win or a loss only when the interval
excludes zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import binomtest, chi2, t as student_t


@dataclass(frozen=True)
class Interval:
    """A mean difference, its (lo, hi) interval at `level`, and the bootstrap's two-sided p."""

    mean: float
    lo: float
    hi: float
    level: float
    p: float = 1.0


def bootstrap_means(diff: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """`n_boot` replicates of the mean of `diff` [S, Q], seeds and questions resampled.

    A replicate draws S seeds and Q questions with replacement; its mean over the S x Q
    resampled cells is w_s . diff . w_q / (S Q), with w the multiplicity of each seed and
    question (multinomial counts), which avoids building the resampled arrays.
    """
    n_seeds, n_questions = diff.shape
    w_s, w_q = draw_counts(n_seeds, n_boot, rng), draw_counts(n_questions, n_boot, rng)
    # w_s . diff . w_q per replicate as one BLAS product (einsum's loop was the report's slowest)
    return ((w_s @ diff) * w_q).sum(1) / (n_seeds * n_questions)


def draw_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """[n_boot, n] multiplicities of n items drawn n times with replacement: the draws
    counted per replicate (one bincount over offset indices; numpy's multinomial with
    size=n_boot draws replicate by replicate, about four times slower here)."""
    draws = rng.integers(0, n, size=(n_boot, n)) + n * np.arange(n_boot)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * n).reshape(n_boot, n)


def paired_bootstrap(diff: np.ndarray, n_boot: int = 10_000, level: float = 0.95,
                     seed: int = 0) -> Interval:
    """Mean of `diff` [S seeds, Q questions] with a two-way percentile bootstrap interval and
    the two-sided p-value of "mean 0" from the same replicates."""
    diff = np.asarray(diff, dtype=float)
    if diff.ndim != 2 or diff.size == 0:
        raise ValueError(f"diff must be a non-empty [seeds, questions] array, got shape "
                         f"{diff.shape}")
    means = bootstrap_means(diff, n_boot, np.random.default_rng(seed))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    p = min(1.0, 2 * min(float((means <= 0).mean()), float((means >= 0).mean())))
    return Interval(float(diff.mean()), float(lo), float(hi), level, p)


def leave_one_seed_out(diff: np.ndarray, n_boot: int = 10_000, level: float = 0.95,
                       seed: int = 0) -> list[Interval]:
    """`paired_bootstrap` of `diff` [S, Q] without seed row s, for each s; [] when S < 2."""
    diff = np.asarray(diff, dtype=float)
    if diff.shape[0] < 2:
        return []
    return [paired_bootstrap(np.delete(diff, s, axis=0), n_boot, level, seed)
            for s in range(diff.shape[0])]


@dataclass(frozen=True)
class CMH:
    """Cochran-Mantel-Haenszel test over seed strata (no continuity correction)."""

    statistic: float
    """(sum_s (a_s - E a_s))^2 / sum_s Var a_s, chi-square with 1 df under no difference."""
    p: float
    odds_ratio: float
    """Mantel-Haenszel common odds ratio of being right, A against B (inf: B never right
    where A is wrong in any stratum; nan: no information)."""


def cmh_by_seed(correct_a: np.ndarray, correct_b: np.ndarray) -> CMH:
    """The CMH test on [S seeds, Q questions] correctness arrays of two methods.

    Stratum s is the 2 x 2 table [[a, b], [c, d]]: A right a times and wrong b times over the
    Q questions, B right c times and wrong d times; n = 2Q. Under "no difference" a is
    hypergeometric with mean (a + b)(a + c)/n and variance
    (a + b)(c + d)(a + c)(b + d) / (n^2 (n - 1)).
    """
    ra, rb = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if ra.shape != rb.shape or ra.ndim != 2:
        raise ValueError(f"two [seeds, questions] arrays of one shape expected, got {ra.shape} "
                         f"and {rb.shape}")
    q = ra.shape[1]
    a, c = ra.sum(1).astype(float), rb.sum(1).astype(float)
    b, d, n = q - a, q - c, 2.0 * q
    expected = (a + b) * (a + c) / n
    var = (a + b) * (c + d) * (a + c) * (b + d) / (n * n * (n - 1))
    num, den = (a * d / n).sum(), (b * c / n).sum()
    odds = num / den if den > 0 else (float("inf") if num > 0 else float("nan"))
    if var.sum() <= 0:                       # every stratum all right or all wrong: no evidence
        return CMH(0.0, 1.0, odds)
    stat = float((a - expected).sum() ** 2 / var.sum())
    return CMH(stat, float(chi2.sf(stat, 1)), float(odds))


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values: the k-th smallest of m is multiplied by m - k + 1,
    then made non-decreasing in that order and capped at 1 (Holm 1979)."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


@dataclass(frozen=True)
class Across:
    """A per-setting difference over settings, each setting one observation."""

    settings: int
    positive: int
    negative: int
    sign_p: float
    """Two-sided exact sign test of positive vs negative (zeros dropped)."""
    mean: float
    lo: float
    hi: float
    """Student t interval of the mean over settings at `level` (nan with one setting)."""
    level: float


def across_settings(diffs: Sequence[float], level: float = 0.95) -> Across:
    """Sign test and t interval of per-setting mean differences `diffs`."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"one difference per setting expected, got shape {d.shape}")
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    sign_p = float(binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else 1.0
    mean = float(d.mean())
    if d.size < 2:
        return Across(int(d.size), pos, neg, sign_p, mean, float("nan"), float("nan"), level)
    half = float(student_t.ppf(0.5 + level / 2, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
    return Across(int(d.size), pos, neg, sign_p, mean, mean - half, mean + half, level)


def verdict(interval: Interval) -> str:
    """win | tie | loss for method A: decided only when the interval excludes zero."""
    if interval.lo > 0:
        return "win"
    if interval.hi < 0:
        return "loss"
    return "tie"


def holm_verdicts(outcomes: Sequence[str], p: Sequence[float], level: float) -> list[str]:
    """Each comparison's verdict after Holm's adjustment over all of them: a win or a loss
    survives only where its adjusted p is below 1 - level; never a verdict the interval did not
    give."""
    adjusted = holm(p)
    return [o if o != "tie" and q < 1 - level else "tie" for o, q in zip(outcomes, adjusted)]
