"""DVC stage `train`: one (reasoner, benchmark) setting, every method and seed in one process
(`fgpo.runs.setting.train_setting`).

Writes, per method <m>: metrics/train/<reasoner>/<benchmark>/<m>.json (final metrics, mean and
spread over seeds), plots/train/<reasoner>/<benchmark>/<m>.csv (the per-step curves) and
data/selections/<reasoner>/<benchmark>/<m>.parquet (every seed's greedy test-set choice per
question, which the report breaks down by family and subset), beside it <m>.points.parquet and
<m>.point_choices.parquet (each validation point's weights tested after training: the budget
frontier's input); each run under runs/<m>/<reasoner>/<benchmark>/seed<s>/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgpo.config import DEFAULT_PARAMS
from fgpo.runs.setting import outcome, train_setting

__all__ = ["main", "outcome"]  # outcome: what `fgpo train` prints


def main(reasoner: str, benchmark: str, methods: list[str] | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"), tracking: bool = True,
         force: bool = False) -> dict[str, dict[str, Any]]:
    """Train every seed of every method in `methods` (default: train.methods) on one setting;
    `force` trains even on a degenerate table (allow_degenerate_table). Returns method ->
    summary."""
    return train_setting(reasoner, benchmark, methods, params, data,
                         metrics_root=Path("metrics/train"), plots_root=Path("plots/train"),
                         runs_root=Path("runs"), selections_root=data / "selections",
                         tracking=tracking, force=force)
