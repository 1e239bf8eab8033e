"""Tier 1-2: FGPO and GRPO losses by hand, and the exact/sampled equivalences."""

from __future__ import annotations

import math

import numpy as np

import pytest
import torch

from fgpo.train.fgpo import fgpo_loss
from fgpo.train.grpo import grpo_loss, sample_groups


@pytest.fixture(autouse=True)
def float64():
    """Exact comparisons in double precision; restored so other test modules are unaffected."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _table(b: int = 3, s: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, s, generator=g), torch.rand(b, s, generator=g)


def _uniform(b: int, s: int) -> torch.Tensor:
    return torch.full((b, s), -math.log(s))


# ---- FGPO ------------------------------------------------------------------------------------
def test_exact_sums_are_one_definition_for_torch_and_numpy():
    """The loss, the training log and the evaluation metrics share these sums."""
    from fgpo.train.exact import entropy, expectation, kl_divergence
    theta, r = _table()
    logp = torch.log_softmax(theta, -1)
    p, ref = logp.exp(), _uniform(3, 8)
    torch.testing.assert_close(expectation(p, r), (p * r).sum(-1))
    torch.testing.assert_close(kl_divergence(p, logp, ref), (p * (logp - ref)).sum(-1))
    torch.testing.assert_close(entropy(p, logp), -(p * logp).sum(-1))
    p_np, logp_np, r_np = p.numpy(), logp.numpy(), r.numpy()  # what the eval metrics pass
    torch.testing.assert_close(torch.from_numpy(expectation(p_np, r_np)), expectation(p, r))
    torch.testing.assert_close(torch.from_numpy(entropy(p_np, logp_np)), entropy(p, logp))
    _, stats = fgpo_loss(logp, ref, r, beta=0.0)
    assert stats["kl"] == kl_divergence(p, logp, ref).mean()
    assert stats["entropy"] == entropy(p, logp).mean()


def test_fgpo_gradient_is_the_exact_expected_reward_gradient():
    theta, r = _table()
    theta.requires_grad_(True)
    loss, _ = fgpo_loss(torch.log_softmax(theta, -1), _uniform(3, 8), r, beta=0.0)
    (g_fgpo,) = torch.autograd.grad(loss, theta)
    j = (torch.softmax(theta, -1) * r).sum(-1).mean()  # J = mean_q sum_S pi(S|q) r(q,S)
    (g_exact,) = torch.autograd.grad(-j, theta)
    torch.testing.assert_close(g_fgpo, g_exact)
    # and a central finite difference of J agrees with both
    eps, fd = 1e-6, torch.zeros_like(theta)
    with torch.no_grad():
        for i in range(theta.shape[0]):
            for k in range(theta.shape[1]):
                d = torch.zeros_like(theta)
                d[i, k] = eps
                jp = (torch.softmax(theta + d, -1) * r).sum(-1).mean()
                jm = (torch.softmax(theta - d, -1) * r).sum(-1).mean()
                fd[i, k] = -(jp - jm) / (2 * eps)
    torch.testing.assert_close(g_fgpo, fd, atol=1e-8, rtol=1e-6)


def test_fgpo_kl_and_entropy_are_exact_sums_with_their_gradients():
    theta, r = _table(2, 4, seed=1)
    ref = torch.log_softmax(torch.tensor([[0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 0.0, 0.0]]), -1)
    theta.requires_grad_(True)
    logp = torch.log_softmax(theta, -1)
    loss, stats = fgpo_loss(logp, ref, r, beta=0.3, entropy_coef=0.2)
    p = logp.exp()
    kl = sum(p[i, s] * (logp[i, s] - ref[i, s]) for i in range(2) for s in range(4)) / 2
    ent = -sum(p[i, s] * logp[i, s] for i in range(2) for s in range(4)) / 2
    j = (p * r).sum(-1).mean()
    torch.testing.assert_close(stats["kl"], kl.detach())
    torch.testing.assert_close(stats["entropy"], ent.detach())
    (g,) = torch.autograd.grad(loss, theta, retain_graph=True)
    (g_ref,) = torch.autograd.grad(-j + 0.3 * kl - 0.2 * ent, theta)
    torch.testing.assert_close(g, g_ref)


def test_fgpo_std_normalised_advantage_by_hand():
    # uniform over 4 subsets, r = [1, 0, 0, 0]: J = 0.25, A = [0.75, -0.25, -0.25, -0.25],
    # exact std = sqrt(0.25*0.5625 + 0.75*0.0625) = sqrt(0.1875) = 0.4330127
    logp = torch.full((1, 4), -math.log(4), requires_grad=True)
    r = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    loss, stats = fgpo_loss(logp, logp.detach(), r, beta=0.0, normalize_std=True, eps=0.0)
    # loss = -sum pi A/std = -(0.25 * (0.75 - 3 * 0.25)) / std = 0 at the uniform point
    assert abs(loss.item()) < 1e-12 and abs(stats["expected_reward"].item() - 0.25) < 1e-12
    (g,) = torch.autograd.grad(loss, logp)
    # d/dlogp_S of -pi_S A_S / std = -pi_S A_S / std  (pi = exp(logp), A held constant)
    expected = -0.25 * torch.tensor([[0.75, -0.25, -0.25, -0.25]]) / math.sqrt(0.1875)
    torch.testing.assert_close(g, expected)


def test_fgpo_zero_signal_only_for_constant_rows():
    r = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5]])
    _, stats = fgpo_loss(torch.log_softmax(torch.zeros(3, 4), -1), _uniform(3, 4), r, beta=0.0)
    assert stats["zero_signal_frac"].item() == pytest.approx(2 / 3)


# ---- GRPO ------------------------------------------------------------------------------------
def test_grpo_advantage_clipping_and_k3_by_hand():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    # mean 0.5, unbiased std = sqrt(4 * 0.25 / 3) = 0.5773503; A = +-0.8660254
    a = 0.5 / math.sqrt(1 / 3)
    old = torch.log(torch.tensor([[0.2, 0.2, 0.2, 0.2]]))
    new = torch.log(torch.tensor([[0.3, 0.1, 0.2, 0.2]])).requires_grad_(True)  # ratios 1.5, .5, 1, 1
    ref = old.clone()
    loss, stats = grpo_loss(new, old, ref, rewards, clip_eps=0.2, beta=0.0, eps=0.0)
    # per sample: -min(rho A, clip(rho) A): [-1.2a, +0.8a, +a, -a] -> mean = -0.1a
    assert abs(loss.item() - (-0.1 * a)) < 1e-9
    assert stats["clip_frac"].item() == 0.5 and stats["zero_signal_frac"].item() == 0.0
    (g,) = torch.autograd.grad(loss, new)
    # clipped samples carry no gradient; unclipped: d(-rho A)/dlogp = -rho A / 4
    # sample 2 (r=0, A=-a) and sample 3 (r=1, A=+a), rho = 1
    torch.testing.assert_close(g, torch.tensor([[0.0, 0.0, a / 4, -a / 4]]))
    # k3 = e^d - d - 1 with d = log pi_ref - log pi_theta
    _, stats = grpo_loss(new.detach(), old, ref, rewards, clip_eps=0.2, beta=1.0, eps=0.0)
    d = ref - new.detach()
    torch.testing.assert_close(stats["k3"], (d.exp() - d - 1).mean())


def test_grpo_equal_rewards_give_zero_advantage_and_zero_signal():
    new = torch.log(torch.tensor([[0.3, 0.1, 0.2], [0.2, 0.5, 0.3]])).requires_grad_(True)
    rewards = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    loss, stats = grpo_loss(new, new.detach(), new.detach(), rewards, 0.2, 0.0)
    assert stats["zero_signal_frac"].item() == 0.5
    (g,) = torch.autograd.grad(loss, new)
    assert torch.all(g[0] == 0) and torch.any(g[1] != 0)


def test_many_sample_grpo_gradient_converges_to_the_exact_one():
    """As G grows, the group mean and std become E_pi[r] and std_pi(r): the on-policy GRPO
    gradient converges to FGPO's exact gradient with std normalisation."""
    theta, r = _table(2, 8, seed=3)
    theta.requires_grad_(True)
    loss, _ = fgpo_loss(torch.log_softmax(theta, -1), _uniform(2, 8), r, beta=0.0,
                        normalize_std=True, eps=0.0)
    (exact,) = torch.autograd.grad(loss, theta)
    gen = torch.Generator().manual_seed(0)
    estimate = torch.zeros_like(theta)
    n_groups, G = 50, 2000
    for _ in range(n_groups):
        logp = torch.log_softmax(theta, -1)
        masks, _ = sample_groups(logp, G, 1.0, gen)
        lp = logp.gather(1, masks)
        gl, _ = grpo_loss(lp, lp.detach(), lp.detach(), r.gather(1, masks), 0.2, 0.0, 0.0)
        estimate += torch.autograd.grad(gl, theta)[0] / n_groups
    err = (estimate - exact).norm() / exact.norm()
    assert err < 0.05, err
    cos = torch.nn.functional.cosine_similarity(estimate.flatten(), exact.flatten(), dim=0)
    assert cos > 0.998


def test_sampling_follows_the_tempered_policy():
    logp = torch.log_softmax(torch.tensor([[2.0, 0.0, -1.0, 0.5]]), -1)
    gen = torch.Generator().manual_seed(1)
    masks, tempered = sample_groups(logp, 40000, 2.0, gen)
    freq = torch.bincount(masks[0], minlength=4) / 40000
    torch.testing.assert_close(tempered.exp()[0], torch.softmax(torch.tensor([1.0, 0.0, -0.5, 0.25]), -1))
    assert (freq - tempered.exp()[0]).abs().max() < 0.01


def test_policy_metrics_by_hand():
    """Two questions, K = 1 (subsets: none, the tool), tool cost 0.1; every value by hand."""
    from fgpo.train.metrics import policy_metrics

    p = torch.tensor([[0.25, 0.75], [0.9, 0.1]], dtype=torch.float64)
    correct = np.array([[0.0, 1.0], [1.0, 0.0]])
    n_tools = np.array([0, 1])
    reward = correct - 0.1 * n_tools
    m = policy_metrics(p.log(), correct, reward, n_tools, group_size=2)
    h = lambda *q: -sum(x * np.log(x) for x in q)  # noqa: E731
    assert m == pytest.approx({
        "accuracy": (1 + 1) / 2,                            # greedy: the tool, then none
        "reward": (0.9 + 1.0) / 2,
        "expected_accuracy": (0.75 + 0.9) / 2,
        "expected_reward": (0.75 * 0.9 + 0.9 * 1.0 + 0.1 * -0.1) / 2,
        "tools_per_question": (1 + 0) / 2,
        "expected_tools_per_question": (0.75 + 0.1) / 2,
        "entropy": (h(0.25, 0.75) + h(0.9, 0.1)) / 2,
        "zero_signal_frac": ((0.25 ** 2 + 0.75 ** 2) + (0.9 ** 2 + 0.1 ** 2)) / 2,  # G = 2
    })
