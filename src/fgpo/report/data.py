"""What the report reads about one (reasoner, benchmark) setting, and the few pure helpers
the numbers and the figures share (seed-averaged curves, the method columns of a frame).
Nothing here reads a file: the report stage loads the DVC outputs into `SettingData`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fgpo.errors import InputError
from fgpo.tools.subsets import subset_tools

CURVE_COLUMNS = ["val_accuracy", "val_expected_reward", "train_reward_evals",
                 "train_reward_evals_unique", "train_questions_seen", "train_epoch",
                 "train_zero_signal_frac", "train_entropy"]


@dataclass
class SplitTable:
    """The test split of one reward table, and the subset chosen on train by the table stage."""

    question_ids: list[str]  # [n], as in the test selections
    families: np.ndarray   # [n]
    correct: np.ndarray    # [n, 2^K]
    reward: np.ndarray     # [n, 2^K]
    n_tools: np.ndarray    # [2^K]
    best_fixed_mask: int


@dataclass
class SettingData:
    """Everything the report reads about one (reasoner, benchmark) setting."""

    reasoner: str
    benchmark: str
    metrics: dict[str, dict[str, Any]]        # method -> metrics/train/<r>/<b>/<m>.json
    # (every dict is keyed by train.methods, in that order; EXACT and SAMPLED among them)
    curves: dict[str, pd.DataFrame]           # method -> plots/train/<r>/<b>/<m>.csv
    selections: dict[str, pd.DataFrame]       # method -> data/selections/<r>/<b>/<m>.parquet
    table_stats: dict[str, Any]               # metrics/reward_tables/<r>/<b>.json
    test: SplitTable = field(repr=False)
    n_questions: int = 0                      # questions in the table, all splits
    table_meta: dict[str, Any] = field(default_factory=dict, repr=False)  # the table's record

    @property
    def name(self) -> str:
        return f"{self.reasoner}/{self.benchmark}"

    @property
    def methods(self) -> list[str]:
        return list(self.metrics)


def mean_curve(curve: pd.DataFrame) -> pd.DataFrame:
    """The per-step curve averaged over seeds (rows with a validation point only keep theirs)."""
    missing = [c for c in ["step", *CURVE_COLUMNS] if c not in curve.columns]
    if missing:
        raise InputError(f"curve lacks column(s) {missing}; retrain with this version",
                         field="plots/train")
    return curve.groupby("step", sort=True)[CURVE_COLUMNS].mean().reset_index()


BASELINES = ["no_tools", "all_tools", "best_fixed", "family_best", "oracle"]
"""The per-family columns read from the table (after the methods' own)."""


def family_methods(fam: pd.DataFrame) -> list[str]:
    """The method columns of a `family_accuracy` frame, in order."""
    cols = list(fam.columns)
    return cols[cols.index("family") + 1:cols.index(BASELINES[0])]


def subset_label(mask: int, tool_names: list[str]) -> str:
    """A short name of a subset: `none`, or abbreviated tool names joined by `+`."""
    picked = [n.split("_")[0][:5] for n in subset_tools(mask, tool_names)]
    return "+".join(picked) or "none"
