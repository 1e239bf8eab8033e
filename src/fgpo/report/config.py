"""What the report compares and how: the `report:` section, and the methods it reads.

The report reads the train stage's outputs for each method in `train.methods` (names the
training config checked against the estimator registry), without importing any training code.
Its headline is one comparison: the exact method against the sampled one (`EXACT`, `SAMPLED`);
every other trained method appears beside them in the per-method tables and figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fgpo.config import read_params
from fgpo.errors import InputError

EXACT, SAMPLED = "fgpo", "grpo"
"""The headline pair: the paper's exact full-group method against sampled GRPO."""


@dataclass
class ReportConfig:
    """`report:` section of params.yaml."""

    tie_margin: float = 0.005
    """A setting is a tie when |FGPO - GRPO| test accuracy is at most this, or at most the
    seeds' combined spread sqrt(std_F^2 + std_G^2). 0.005 is about one question of a 240-question
    test split: a difference of one question is not called a win."""
    zero_signal_window: int = 10
    """GRPO's observed zero-signal fraction is reported as the mean over the first and the last
    this-many optimiser steps (the paper's "before vs after training")."""
    heatmap_reasoner: str = "careful_expert"
    """Reasoner whose greedy test-set subset choices the family x subset heat maps show."""
    heatmap_top_subsets: int = 12
    """Columns of a heat map: the subsets either method chose most often (>= 1)."""
    mlflow_ui: str = "http://127.0.0.1:5000"
    """Base URL of the MLflow UI (`make ui`) that `reports/mlflow_runs.md` links into."""

    def __post_init__(self) -> None:
        if self.tie_margin < 0:
            raise InputError("tie_margin must be >= 0",
                             field="report.tie_margin")
        if self.zero_signal_window < 1 or self.heatmap_top_subsets < 1:
            raise InputError("zero_signal_window and heatmap_top_subsets must be >= 1",
                             field="report")


def read_methods(params: str | Path) -> list[str]:
    """`train.methods` as the train stage ran them (the order the report's columns follow);
    the headline pair must be among them."""
    train = read_params(params).get("train") or {}
    methods = train.get("methods")
    if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
        raise InputError(f"the report reads train.methods, a list of method names; got "
                         f"{methods!r}", file=str(params), field="train.methods")
    if EXACT not in methods or SAMPLED not in methods:
        raise InputError(f"the report compares {EXACT} with {SAMPLED}: train.methods must list "
                         f"both (it lists {methods})", file=str(params), field="train.methods")
    return methods
