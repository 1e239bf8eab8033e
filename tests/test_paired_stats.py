"""Paired statistics on hand-made data with known answers: the two-way bootstrap's replicate
distribution worked out by hand, its interval against the normal approximation and its p-value
against its interval, the seed-stratified CMH test against a hypergeometric reference and
Pearson's chi-square, Holm's adjustment and the sign test and t interval by hand,
leave-one-seed-out verdicts on a fragile and a robust result set, and the win / tie / loss
rule."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from scipy.stats import chi2, chi2_contingency, hypergeom

from fgpo.report.paired import (Interval, across_settings, bootstrap_means, cmh_by_seed, holm,
                                holm_verdicts, leave_one_seed_out, paired_bootstrap, verdict)


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


def test_bootstrap_p_is_read_off_the_replicates_and_matches_the_interval():
    assert paired_bootstrap(np.full((3, 50), 0.25), n_boot=2000).p == 0.0   # every replicate > 0
    assert paired_bootstrap(np.zeros((3, 50)), n_boot=2000).p == 1.0        # every replicate = 0
    # diff = [[0], [1]]: replicate means 0 / 0.5 / 1 with p 1/4, 1/2, 1/4: P(mean <= 0) = 1/4
    assert paired_bootstrap(np.array([[0.0], [1.0]]), n_boot=40_000).p == \
        pytest.approx(0.5, abs=0.02)
    # the p-value and the interval read the same replicates: p < 1 - level iff 0 is outside
    rng = np.random.default_rng(11)
    for shift in np.linspace(0.0, 0.3, 13):
        diff = rng.choice([-1.0, 0.0, 1.0], size=(5, 60)) + shift
        iv = paired_bootstrap(diff, n_boot=4000)
        if abs(iv.p - 0.05) > 0.005:               # away from the quantile's interpolation
            assert (iv.p < 0.05) == (verdict(iv) != "tie")


def cmh_by_hand(a: np.ndarray, b: np.ndarray) -> float:
    """Reference: per seed, A's right count is hypergeometric given the table's margins
    (population 2Q, A's Q draws, right answers of both methods the successes)."""
    dev = var = 0.0
    for ra, rb in zip(a, b):
        q = len(ra)
        h = hypergeom(2 * q, int(ra.sum() + rb.sum()), q)
        dev += ra.sum() - h.mean()
        var += h.var()
    return float(chi2.sf(dev ** 2 / var, 1))


def test_cmh_by_seed_equals_the_hypergeometric_reference_and_pearson_on_one_seed():
    rng = np.random.default_rng(5)
    a = rng.random((4, 30)) < np.array([[0.9], [0.6], [0.7], [0.8]])   # seeds differ in level
    b = rng.random((4, 30)) < np.array([[0.8], [0.5], [0.7], [0.6]])
    got = cmh_by_seed(a, b)
    assert got.p == pytest.approx(cmh_by_hand(a, b), rel=1e-9)
    assert cmh_by_seed(b, a).p == pytest.approx(got.p)                 # two-sided
    # one stratum: the CMH statistic is Pearson's chi-square times (n - 1) / n
    table = [[a[0].sum(), 30 - a[0].sum()], [b[0].sum(), 30 - b[0].sum()]]
    pearson = chi2_contingency(table, correction=False)[0]
    assert cmh_by_seed(a[:1], b[:1]).statistic == pytest.approx(pearson * 59 / 60)
    # Mantel-Haenszel odds ratio by hand on two strata of 4 questions:
    # seed 0: A right 3, B right 1 -> a d / n = 3 * 3 / 8, b c / n = 1 * 1 / 8
    # seed 1: A right 2, B right 2 -> 2 * 2 / 8 and 2 * 2 / 8
    x = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    y = np.array([[1, 0, 0, 0], [0, 0, 1, 1]], bool)
    assert cmh_by_seed(x, y).odds_ratio == pytest.approx((9 + 4) / (1 + 4))


def test_cmh_sees_no_evidence_where_each_seed_ties():
    # Within each seed A and B are right equally often (8 of 10 on seed 0, 2 of 10 on seed 1),
    # on different questions: whatever the seeds' levels, no evidence.
    a = np.array([[1] * 8 + [0] * 2, [1] * 2 + [0] * 8], bool)
    b = np.array([[0] * 2 + [1] * 8, [0] * 8 + [1] * 2], bool)
    assert cmh_by_seed(a, b).p == pytest.approx(1.0)
    everyone = np.ones((3, 5), bool)
    assert cmh_by_seed(everyone, everyone).p == 1.0                   # no variance: no evidence
    with pytest.raises(ValueError, match="one shape"):
        cmh_by_seed(np.ones((3, 4)), np.ones((3, 5)))


def test_holm_step_down_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 -> x4, x3, x2, x1 = 0.04, 0.09, 0.08, 0.2 -> monotone
    assert holm([0.01, 0.04, 0.03, 0.2]).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]                   # capped at 1
    # a verdict survives only where its adjusted p is below 1 - level
    assert holm_verdicts(["win", "loss", "win", "tie"], [0.01, 0.04, 0.03, 0.2], 0.95) == \
        ["win", "tie", "tie", "tie"]


def test_across_settings_sign_test_and_t_interval_by_hand():
    d = [0.1, 0.2, -0.05, 0.0, 0.3]
    got = across_settings(d, 0.95)
    # 3 positive, 1 negative, the zero dropped: 2 * P(X >= 3 | 4, 1/2) = 2 * 5 / 16
    assert (got.positive, got.negative, got.sign_p) == (3, 1, pytest.approx(0.625))
    mean, sd = statistics.mean(d), statistics.stdev(d)
    half = 2.7764451 * sd / 5 ** 0.5                                 # t(0.975, 4 df), a table
    assert (got.mean, got.lo, got.hi) == pytest.approx((mean, mean - half, mean + half))
    assert np.isnan(across_settings([0.1]).lo)                       # one setting: no interval


def fragile_and_robust() -> tuple[np.ndarray, np.ndarray]:
    """Five seeds x 200 questions of paired correctness differences (-1, 0, 1). Robust: every
    seed +20 points. Fragile: four seeds +20 points, seed 4 at -60: the full verdict is a tie
    that only seed 4 holds down, so leaving seed 4 out (and only it) gives a win."""
    rng = np.random.default_rng(2)
    robust = np.stack([rng.permutation([1] * 60 + [-1] * 20 + [0] * 120) for _ in range(5)])
    fragile = robust.copy()
    fragile[4] = rng.permutation([-1] * 130 + [1] * 10 + [0] * 60)
    return robust.astype(float), fragile.astype(float)


def test_leave_one_seed_out_finds_the_fragile_verdict_and_keeps_the_robust_one():
    robust, fragile = fragile_and_robust()
    assert verdict(paired_bootstrap(robust)) == "win"
    assert [verdict(iv) for iv in leave_one_seed_out(robust)] == ["win"] * 5
    assert verdict(paired_bootstrap(fragile)) == "tie"
    assert [verdict(iv) for iv in leave_one_seed_out(fragile)] == ["tie"] * 4 + ["win"]
    # each left-out interval is the bootstrap of the other four seeds
    assert leave_one_seed_out(fragile)[4] == paired_bootstrap(fragile[:4])
    assert leave_one_seed_out(fragile[:1]) == []                      # one seed: nothing to drop


def test_verdict_needs_an_interval_that_excludes_zero():
    assert verdict(Interval(0.02, 0.001, 0.04, 0.95)) == "win"
    assert verdict(Interval(-0.02, -0.04, -0.001, 0.95)) == "loss"
    assert verdict(Interval(0.02, -0.001, 0.04, 0.95)) == "tie"
    assert verdict(Interval(0.0, 0.0, 0.0, 0.95)) == "tie"     # identical answers


def test_drawn_counts_are_multinomial_multiplicities():
    """Each replicate's counts sum to n, and every item is drawn with probability 1/n per draw:
    mean count 1, variance (n - 1) / n, as Multinomial(n, 1/n) has."""
    from fgpo.report.paired import draw_counts

    counts = draw_counts(5, 200_000, np.random.default_rng(2))
    assert counts.shape == (200_000, 5) and (counts.sum(1) == 5).all()
    assert counts.mean(0) == pytest.approx(np.ones(5), abs=0.01)
    assert counts.var(0) == pytest.approx(np.full(5, 4 / 5), abs=0.01)
    assert (counts[:, 0] == 5).mean() == pytest.approx(5 ** -5, abs=2e-4)  # all five on item 0
