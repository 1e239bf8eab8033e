"""What the report compares and how: the `report:` section, and the methods it reads.

The report reads the train stage's outputs for each method in `train.methods` (names the
training config checked against the estimator registry), without importing any training code.
Its headline is one comparison, `report.compare`: an exact method against a sampled one (FGPO
against GRPO by default, `EXACT`, `SAMPLED`); every other trained method appears beside them in
the per-method tables and figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fgpo.config import read_params
from fgpo.errors import InputError

EXACT, SAMPLED = "fgpo", "grpo"
"""The default headline pair: the paper's exact full-group method against sampled GRPO (the
figures' fixed line styles)."""


@dataclass
class ReportConfig:
    """`report:` section of params.yaml."""

    compare: list[str] = field(default_factory=lambda: [EXACT, SAMPLED])
    """The headline pair [exact, sampled]: the paired difference, its stability and CMH test, the sampled
    schedule's budget against the exact method's table and the zero-signal columns compare
    these two, e.g. [fgpo, dr_grpo]. Both must be in train.methods; the exact one must read
    the whole table (its metrics carry budget/table_cells_train)."""
    level: float = 0.95
    """Confidence level of the paired intervals (FGPO - GRPO, each method - the per-family best
    fixed subset). A setting is a win or a loss only when its interval excludes zero."""
    n_boot: int = 10_000
    """Replicates of the two-way (questions x seeds) paired bootstrap (report.paired)."""
    bootstrap_seed: int = 0
    """Seed of the bootstrap's resampling, so a rerun of the report gives the same intervals."""
    zero_signal_window: int = 10
    """GRPO's observed zero-signal fraction is reported as the mean over the first and the last
    this-many optimiser steps (the paper's "before vs after training")."""
    heatmap_reasoner: str = "careful_expert"
    """Reasoner whose greedy test-set subset choices the family x subset heat maps show."""
    heatmap_top_subsets: int = 12
    """Columns of a heat map: the subsets either method chose most often (>= 1)."""
    mlflow_ui: str = "http://127.0.0.1:5000"
    """Base URL of the MLflow UI (`make ui`) that `reports/mlflow_runs.md` links into for the
    local store; runs on a tracking server (MLFLOW_TRACKING_URI=http(s)://...) are linked at the
    server's own URL, which serves the UI."""

    def __post_init__(self) -> None:
        if not isinstance(self.compare, list) or len(self.compare) != 2 or \
                len(set(self.compare)) != 2 or not all(isinstance(m, str) for m in self.compare):
            raise InputError(f"compare must be two distinct method names [exact, sampled], e.g. "
                             f"[fgpo, grpo]; got {self.compare!r}", field="report.compare")
        if not 0.5 < self.level < 1:
            raise InputError(f"level must be in (0.5, 1), e.g. 0.95; got {self.level}",
                             field="report.level")
        if self.n_boot < 1000:
            raise InputError(f"n_boot must be >= 1000 for a stable 95% interval; got "
                             f"{self.n_boot}", field="report.n_boot")
        if self.zero_signal_window < 1 or self.heatmap_top_subsets < 1:
            raise InputError("zero_signal_window and heatmap_top_subsets must be >= 1",
                             field="report")


def read_methods(params: str | Path, compare: list[str] | None = None) -> list[str]:
    """`train.methods` as the train stage ran them (the order the report's columns follow);
    the headline pair (`report.compare`) must be among them."""
    compare = compare or [EXACT, SAMPLED]
    train = read_params(params).get("train") or {}
    methods = train.get("methods")
    if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
        raise InputError(f"the report reads train.methods, a list of method names; got "
                         f"{methods!r}", file=str(params), field="train.methods")
    missing = [m for m in compare if m not in methods]
    if missing:
        raise InputError(f"the report compares {compare[0]} with {compare[1]} (report.compare): "
                         f"train.methods must list both (it lists {methods}, not {missing})",
                         file=str(params), field="report.compare")
    return methods
