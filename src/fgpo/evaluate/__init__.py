"""Evaluation of a tool-selection policy against a reward table (exact, no sampling)."""

from fgpo.evaluate.metrics import policy_metrics, predict, zero_signal_prob  # noqa: F401
