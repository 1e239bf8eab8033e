"""The cell values every reward table must hold, checked where a table is built, derived and
read (kept free of other fgpo imports, so a stage that only transforms a table stays light)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fgpo.errors import InputError

REBUILD = "`fgpo reward-table` (or `dvc repro reward_table`)"


def require_finite_cells(df: pd.DataFrame, file: str) -> None:
    """Every reward is a finite number and every `correct` is 0 or 1: one bad cell would turn
    every loss that reads it into NaN (and a NaN silently out of every mean)."""
    reward = df["reward"].to_numpy(np.float64)
    bad = ~np.isfinite(reward)
    if bad.any():
        r = df[bad].iloc[0]
        raise InputError(f"{int(bad.sum())} non-finite reward(s), e.g. {r.reward!r}; rebuild "
                         f"the table: {REBUILD}", file=file,
                         record=f"{r.question_id} subset {r['mask']}", field="reward")
    bad = ~df["correct"].isin([0, 1]).to_numpy()
    if bad.any():
        r = df[bad].iloc[0]
        raise InputError(f"{int(bad.sum())} correctness value(s) other than 0 or 1, e.g. "
                         f"{r.correct!r}; rebuild the table: {REBUILD}", file=file,
                         record=f"{r.question_id} subset {r['mask']}", field="correct")
