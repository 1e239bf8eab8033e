"""The exact sums over all 2^K subsets that the losses and the metrics use.

p = pi(. | q), logp = log pi, each [..., 2^K]; every function reduces the last axis and takes
torch tensors or numpy arrays alike. Written once here: the FGPO loss, the training log and the
policy metrics all call these."""

from __future__ import annotations


def expectation(p, values):
    """E_pi[v] = sum_S pi(S) v(S), exact."""
    return (p * values).sum(-1)


def kl_divergence(p, logp, ref_logp):
    """KL(pi || pi_ref) = sum_S pi(S) (log pi(S) - log pi_ref(S)), exact."""
    return (p * (logp - ref_logp)).sum(-1)


def entropy(p, logp):
    """H(pi) = -sum_S pi(S) log pi(S), exact."""
    return -(p * logp).sum(-1)
