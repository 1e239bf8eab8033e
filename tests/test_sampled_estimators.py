"""Tier 1-2 for the ablation's estimators (dr_grpo, rloo, dapo_ds, fgpo_std): their losses by
hand, and their expected gradients against independent truths: brute-force enumeration of every
possible group (small G, exact) and many-sample estimates (large G)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from fgpo.train.config import TrainConfig
from fgpo.train.dapo_ds import DAPODS, DAPODSConfig
from fgpo.train.dr_grpo import dr_grpo_loss
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.fgpo import fgpo_loss
from fgpo.train.grpo import GRPO, GRPOConfig, grpo_loss, sample_groups
from fgpo.train.rloo import rloo_loss


@pytest.fixture(autouse=True)
def float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _uniform(b: int, s: int) -> torch.Tensor:
    return torch.full((b, s), -math.log(s))


# the GRPO by-hand case of test_losses: rewards [1, 0, 0, 1], ratios [1.5, .5, 1, 1], clip 0.2
F64 = {"dtype": torch.float64}
REWARDS = torch.tensor([[1.0, 0.0, 0.0, 1.0]], **F64)
OLD = torch.log(torch.tensor([[0.2, 0.2, 0.2, 0.2]], **F64))
NEW = torch.log(torch.tensor([[0.3, 0.1, 0.2, 0.2]], **F64))


def _hand(a: float) -> float:
    """Per sample -min(rho A, clip(rho) A) with advantages [+a, -a, -a, +a]:
    [-1.2a, +0.8a, +a, -a], mean -0.1a."""
    return -0.1 * a


@pytest.mark.parametrize("loss_fn, a", [
    (dr_grpo_loss, 0.5),          # r - mean: +-0.5, no std
    (rloo_loss, 2 / 3),           # r_0 - (0 + 0 + 1)/3 = 2/3; r_1 - (1 + 0 + 1)/3 = -2/3
])
def test_sampled_losses_by_hand(loss_fn, a):
    loss, stats = loss_fn(NEW, OLD, OLD, REWARDS, clip_eps=0.2, beta=0.0)
    assert loss.item() == pytest.approx(_hand(a), abs=1e-12)
    assert stats["clip_frac"].item() == 0.5 and stats["zero_signal_frac"].item() == 0.0


def test_a_tool_cost_tie_is_a_unit_advantage_for_grpo_and_a_cost_size_one_for_dr_grpo():
    """The mechanism the ablation measures: a group whose correctness ties (all right) but whose
    tool counts differ. GRPO's std turns the 0.01 cost into +-0.87; Dr. GRPO keeps it +-0.005."""
    r = torch.tensor([[1.0, 0.99, 1.0, 0.99]])             # correct, 0 or 1 tool at cost 0.01
    lp = torch.log(torch.full((1, 4), 0.25)).requires_grad_(True)
    grads = {}
    for name, fn in (("grpo", grpo_loss), ("dr_grpo", dr_grpo_loss)):
        kw = {"eps": 0.0} if fn is grpo_loss else {}
        loss, _ = fn(lp, lp.detach(), lp.detach(), r, 0.2, 0.0, **kw)
        (grads[name],) = torch.autograd.grad(loss, lp)
    # d loss / d logp_i = -A_i / G at rho = 1
    a_grpo = 0.005 / math.sqrt(4 * 0.005 ** 2 / 3)
    torch.testing.assert_close(grads["grpo"], -torch.tensor([[a_grpo, -a_grpo] * 2]) / 4)
    torch.testing.assert_close(grads["dr_grpo"], -torch.tensor([[0.005, -0.005] * 2]) / 4)


# ---- expected gradients by enumerating every group ---------------------------------------------
def _enumerated_gradient(loss_fn, theta: torch.Tensor, r: torch.Tensor, G: int,
                         weight=None) -> torch.Tensor:
    """sum over every ordered group (S_1..S_G) of P(group) x the on-policy loss's gradient,
    for one question: theta, r [1, 2^K]. `weight(groups, p)` replaces P(group) if given."""
    theta = theta.detach().requires_grad_(True)
    logp = torch.log_softmax(theta, -1)
    n = r.shape[1]
    groups = torch.tensor(list(itertools.product(range(n), repeat=G)))      # [n^G, G]
    p = logp.detach().exp()[0]
    w = p[groups].prod(-1) if weight is None else weight(groups, p)
    total = 0.0
    for g, wi in zip(groups, w):
        lp = logp.gather(1, g[None])
        loss, _ = loss_fn(lp, lp.detach(), lp.detach(), r.gather(1, g[None]), 0.2, 0.0)
        total = total + wi * loss
    (grad,) = torch.autograd.grad(total, theta)
    return grad


def _exact_gradient(theta: torch.Tensor, r: torch.Tensor, normalize_std: bool = False
                    ) -> torch.Tensor:
    theta = theta.detach().requires_grad_(True)
    loss, _ = fgpo_loss(torch.log_softmax(theta, -1), _uniform(*r.shape), r, beta=0.0,
                        normalize_std=normalize_std, eps=0.0)
    return torch.autograd.grad(loss, theta)[0]


THETA = torch.tensor([[0.3, -0.5, 1.1, 0.0]], **F64)
R = torch.tensor([[0.9, 0.2, 0.6, 0.0]], **F64)


@pytest.mark.parametrize("G", [2, 3])
def test_rloo_is_unbiased_for_every_G_and_dr_grpo_shrinks_by_G_minus_1_over_G(G):
    """Enumerating all 4^G groups: RLOO's expected gradient is the exact policy gradient
    (FGPO's) at any G; Dr. GRPO's in-group mean includes r_i, so it is (G-1)/G of it."""
    exact = _exact_gradient(THETA, R)
    torch.testing.assert_close(_enumerated_gradient(rloo_loss, THETA, R, G), exact)
    torch.testing.assert_close(_enumerated_gradient(dr_grpo_loss, THETA, R, G),
                               exact * (G - 1) / G)


@pytest.mark.parametrize("loss_fn", [dr_grpo_loss, rloo_loss])
def test_many_sample_estimates_converge_to_the_exact_unnormalised_gradient(loss_fn):
    gen = torch.Generator().manual_seed(0)
    theta, r = torch.randn(2, 8, generator=gen), torch.rand(2, 8, generator=gen)
    exact = _exact_gradient(theta, r)
    theta.requires_grad_(True)
    estimate = torch.zeros_like(theta)
    n_groups, G = 30, 2000
    for _ in range(n_groups):
        logp = torch.log_softmax(theta, -1)
        masks, _ = sample_groups(logp, G, 1.0, gen)
        lp = logp.gather(1, masks)
        loss, _ = loss_fn(lp, lp.detach(), lp.detach(), r.gather(1, masks), 0.2, 0.0)
        estimate += torch.autograd.grad(loss, theta)[0] / n_groups
    assert (estimate - exact).norm() / exact.norm() < 0.05


# ---- DAPO's dynamic sampling ---------------------------------------------------------------------
def _dapo(rewards: torch.Tensor, cap: int, G: int, seed: int = 0) -> DAPODS:
    cfg = TrainConfig(beta=0.0)
    own = DAPODSConfig(group_size=G, max_resamples=cap, temperature=1.0)
    return DAPODS(cfg, own, rewards, len(rewards), torch.Generator().manual_seed(seed))


def test_dynamic_sampling_redraws_constant_groups_and_pays_for_every_draw():
    """Row 0: every subset rewarded alike (always constant: redrawn `cap` times, then kept);
    row 1: only subset 3 rewarded. Every draw costs G evaluations; cap 0 is GRPO's draw."""
    rewards = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    logp = torch.log(torch.tensor([[0.25] * 4, [0.3, 0.3, 0.3, 0.1]])).repeat(50, 1)
    idx = torch.tensor([0, 1]).repeat(50)
    G, cap = 3, 4
    est = _dapo(rewards, cap, G)
    masks, _ = est.draw(idx, logp)
    r = rewards[idx].gather(1, masks)
    constant = r.amax(-1) == r.amin(-1)
    assert constant[idx == 0].all()            # no draw can help: cap redraws, then kept
    # row 1 stays constant only if all 1 + cap draws missed subset 3: (0.9^3)^5 = 0.21
    assert 0 < constant[idx == 1].float().mean() < 0.45
    assert est.evals == G * (len(idx) + est.redrawn)
    assert est.redrawn >= 50 * cap             # row 0's groups alone
    plain = GRPO(TrainConfig(beta=0.0), GRPOConfig(group_size=G), rewards, 2,
                 torch.Generator().manual_seed(0))
    none = _dapo(rewards, 0, G)
    torch.testing.assert_close(none.draw(idx, logp)[0], plain.draw(idx, logp)[0])
    assert none.evals == plain.evals == G * len(idx) and none.redrawn == 0


def test_dynamic_sampling_expected_gradient_equals_enumeration_of_its_draw_law():
    """The law of the group DAPO trains on, by hand: a non-constant group t is the first
    non-constant draw, P(t) sum_{k<=cap} P(c)^k; a constant one survives every draw,
    P(t) P(c)^cap (P(c): a draw is constant). Its expected GRPO gradient, enumerated over all
    4^G groups, equals the mean gradient of many DAPO draws."""
    G, cap = 3, 2
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0]])                 # ties are frequent at G = 3
    theta = torch.tensor([[1.2, 0.1, -0.4, -0.9]])

    def law(groups, p):
        pt = p[groups].prod(-1)
        rg = r[0][groups]
        const = rg.amax(-1) == rg.amin(-1)
        pc = pt[const].sum()
        return torch.where(const, pt * pc ** cap, pt * sum(pc ** k for k in range(cap + 1)))

    def grpo(lp, old, ref, rw, clip, beta):
        return grpo_loss(lp, old, ref, rw, clip, beta, eps=1e-6)

    truth = _enumerated_gradient(grpo, theta, r, G, weight=law)
    n = 200_000
    est = _dapo(r, cap, G, seed=3)
    th = theta.clone().requires_grad_(True)
    logp = torch.log_softmax(th, -1).expand(n, -1)
    masks, _ = est.draw(torch.zeros(n, dtype=torch.long), logp)
    lp = logp.gather(1, masks)
    loss, _ = grpo(lp, lp.detach(), lp.detach(), r[0][masks], 0.2, 0.0)
    (mc,) = torch.autograd.grad(loss, th)
    assert (mc - truth).norm() / truth.norm() < 0.03
    # and the redraws matter: plain GRPO's expected gradient is another one
    plain = _enumerated_gradient(grpo, theta, r, G)
    assert (plain - truth).norm() / truth.norm() > 0.1


# ---- FGPO with the exact std ---------------------------------------------------------------------
def test_fgpo_std_is_fgpo_with_the_exact_std():
    """The named estimator computes fgpo_loss(normalize_std=True) on the policy's log-probs."""

    class Fixed(torch.nn.Module):
        def __init__(self, theta):
            super().__init__()
            self.theta = torch.nn.Parameter(theta)

        def log_probs(self, idx):
            return torch.log_softmax(self.theta[idx], -1)

    gen = torch.Generator().manual_seed(5)
    theta, r = torch.randn(3, 8, generator=gen), torch.rand(3, 8, generator=gen)
    cfg = TrainConfig(beta=0.0, eps=1e-6)
    est = ESTIMATORS["fgpo_std"](cfg, cfg.fgpo_std, r, 3, gen)
    policy = Fixed(theta.clone())
    idx = torch.arange(3)
    loss, _, _ = est.loss(policy, est.collect(0, policy, lambda: idx),
                          lambda i: _uniform(len(i), 8))
    (got,) = torch.autograd.grad(loss, policy.theta)
    torch.testing.assert_close(got, _exact_gradient(theta, r, normalize_std=True), atol=1e-9,
                               rtol=1e-5)  # eps 1e-6 vs 0
    assert (got - _exact_gradient(theta, r)).norm() > 0.1 * got.norm()  # the std matters
    assert est.reward_evals == est.reward_evals_unique == 3 * 8  # its 3 rows' cells, as FGPO


def test_every_estimator_names_its_tuned_relative():
    assert {n: e.tuned_from for n, e in ESTIMATORS.items()} == {
        "fgpo": None, "grpo": None, "dr_grpo": "grpo", "rloo": "grpo", "dapo_ds": "grpo",
        "fgpo_std": "fgpo"}
