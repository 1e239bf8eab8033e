"""Ablation stage `cost_table`: a reward table at another per-tool cost, without a reasoner
call (reward = correct - cost x n_tools is a column transform: fgpo.rewards.cost).

data/reward_tables/<reasoner>/<benchmark>.parquet (the main pipeline's, at
reward_table.tool_cost) -> data/ablation/reward_tables/cost<c>/<reasoner>/<benchmark>.parquet;
at the main cost itself the file is a byte copy, so the ablation's runs there reuse the main
pipeline's runs of the same config.
"""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.rewards.cost import ToolCosts, ablation_tables, main_tool_cost, with_tool_cost
from fgpo.rewards.data import table_path


def main(reasoner: str, benchmark: str, cost: float, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data")) -> Path:
    ToolCosts.load(params).check(cost, main_tool_cost(params), params)  # a declared cost
    return with_tool_cost(table_path(reasoner, benchmark, data / "reward_tables"),
                          table_path(reasoner, benchmark, ablation_tables(cost, data)), cost)
