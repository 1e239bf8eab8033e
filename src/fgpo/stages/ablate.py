"""Ablation stage `ablate`: every ablation estimator on one (reasoner, benchmark, tool cost).

The train stage's training (`fgpo.runs.setting`) under the same protocol (train.epochs, seeds, best-validation checkpoint,
the same question visits), on the cost's table (stage `cost_table`): all `ablation.estimators` at
the main tool cost, `ablation.cost_estimators` at the others. Each estimator trains with its own
tuned values, or its `tuned_from` relative's (tune/tuned.yaml; fgpo.train.overrides).
Outputs mirror the train stage's under metrics/ablation/cost<c>, plots/ablation/cost<c> and
data/ablation/selections/cost<c>. At the main cost the runs cache is the main pipeline's
(runs/), so fgpo and grpo are read back, not retrained, when their config, table and code match;
at other costs runs live under runs/ablation/cost<c>. Every MLflow run carries `estimator` and
`tool_cost` tags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.rewards.cost import ablation_tables, cost_dir, main_tool_cost
from fgpo.runs.setting import outcome, train_setting
from fgpo.train.ablation import AblationConfig

__all__ = ["main", "outcome"]  # outcome: what `fgpo ablate` prints


def main(reasoner: str, benchmark: str, cost: float, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), tracking: bool = True) -> dict[str, dict[str, Any]]:
    cfg = load_section(AblationConfig, "ablation", params)
    main_cost = main_tool_cost(params)
    methods = cfg.methods_at(cost, main_cost, params)
    at = cost_dir(cost)
    runs = Path("runs") if float(cost) == float(main_cost) else Path("runs/ablation") / at
    return train_setting(reasoner, benchmark, methods, params, data,
                         metrics_root=Path("metrics/ablation") / at,
                         plots_root=Path("plots/ablation") / at, runs_root=runs,
                         selections_root=data / "ablation" / "selections" / at,
                         tracking=tracking, tables_root=ablation_tables(cost, data),
                         any_method=True, register=False)  # the registry holds make run's best
