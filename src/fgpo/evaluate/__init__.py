"""Evaluation of a trained tool-selection policy on the held-out test split (exact, no
sampling): training never reads the test rows; this layer alone does, after training."""

from fgpo.evaluate.test import evaluate_test, evaluate_validation_points  # noqa: F401
