"""Paired statistics on hand-made data with known answers: the two-way bootstrap's replicate
distribution worked out by hand, its interval against the normal approximation, McNemar's exact
p-value computed from the binomial by hand, and the win / tie / loss rule."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from fgpo.report.paired import Interval, bootstrap_means, mcnemar, paired_bootstrap, verdict


def test_a_constant_difference_has_a_zero_width_interval():
    iv = paired_bootstrap(np.full((3, 50), 0.25), n_boot=2000)
    assert (iv.mean, iv.lo, iv.hi) == pytest.approx((0.25, 0.25, 0.25))


def test_two_seeds_one_question_resample_as_worked_out_by_hand():
    # diff = [[0], [1]]: a replicate draws two seeds with replacement, so its mean is
    # 0 (p = 1/4), 1/2 (p = 1/2) or 1 (p = 1/4); the 95% percentile interval is [0, 1].
    diff = np.array([[0.0], [1.0]])
    means = bootstrap_means(diff, 40_000, np.random.default_rng(1))
    values, counts = np.unique(means, return_counts=True)
    assert values.tolist() == [0.0, 0.5, 1.0]
    assert counts / counts.sum() == pytest.approx([0.25, 0.5, 0.25], abs=0.01)
    iv = paired_bootstrap(diff, n_boot=40_000)
    assert (iv.mean, iv.lo, iv.hi) == (0.5, 0.0, 1.0)


def test_one_seed_matches_the_normal_approximation_of_the_mean():
    # Q i.i.d. differences in {-1, 0, 1}: the percentile interval ~ mean +- 1.96 sd / sqrt(Q).
    rng = np.random.default_rng(7)
    diff = rng.choice([-1.0, 0.0, 1.0], p=[0.2, 0.5, 0.3], size=(1, 4000))
    iv = paired_bootstrap(diff, n_boot=20_000)
    half = 1.959964 * diff.std() / np.sqrt(diff.size)
    assert iv.mean == pytest.approx(diff.mean())
    assert iv.lo == pytest.approx(diff.mean() - half, abs=0.1 * half)
    assert iv.hi == pytest.approx(diff.mean() + half, abs=0.1 * half)


def test_seed_to_seed_variation_widens_the_interval():
    # The same question-level noise, plus a seed effect of +-0.1: resampling seeds must show it.
    rng = np.random.default_rng(3)
    noise = rng.choice([-1.0, 0.0, 1.0], size=(3, 240)) * 0.5
    flat = paired_bootstrap(noise)
    shifted = paired_bootstrap(noise + np.array([[-0.1], [0.0], [0.1]]))
    assert shifted.hi - shifted.lo > 1.2 * (flat.hi - flat.lo)


def test_the_bootstrap_is_seeded():
    diff = np.random.default_rng(0).normal(size=(3, 30))
    assert paired_bootstrap(diff, seed=5) == paired_bootstrap(diff, seed=5)


def test_mcnemar_exact_p_value_from_the_binomial_by_hand():
    # 10 cells only A right, 2 only B right, 30 both right, 8 both wrong.
    a = np.array([1] * 10 + [0] * 2 + [1] * 30 + [0] * 8)
    b = np.array([0] * 10 + [1] * 2 + [1] * 30 + [0] * 8)
    # two-sided: 2 * P(X <= 2), X ~ Binomial(12, 1/2)
    by_hand = 2 * sum(comb(12, k) for k in range(3)) / 2 ** 12
    assert mcnemar(a, b) == (10, 2, pytest.approx(by_hand))
    assert mcnemar(b, a)[2] == pytest.approx(by_hand)        # symmetric
    assert mcnemar(a, a) == (0, 0, 1.0)                       # no discordant pair: no evidence
    assert mcnemar(a.reshape(5, 10), b.reshape(5, 10))[:2] == (10, 2)  # any paired shape


def test_mcnemar_refuses_unpaired_arrays():
    with pytest.raises(ValueError, match="differ in shape"):
        mcnemar(np.ones((3, 4)), np.ones((3, 5)))


def test_verdict_needs_an_interval_that_excludes_zero():
    assert verdict(Interval(0.02, 0.001, 0.04, 0.95)) == "win"
    assert verdict(Interval(-0.02, -0.04, -0.001, 0.95)) == "loss"
    assert verdict(Interval(0.02, -0.001, 0.04, 0.95)) == "tie"
    assert verdict(Interval(0.0, 0.0, 0.0, 0.95)) == "tie"     # identical answers
