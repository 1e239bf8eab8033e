"""Frontier stage `frontier_table`: the reward table of one (reasoner, benchmark) at a tool
count K of frontier.ks -> data/frontier/K<k>/reward_tables/<reasoner>/<benchmark>.parquet: the
reward_table stage's build on that K's tool outputs (logged as an MLflow run), or at the main
pipeline's K a copy of its table (checked to be for the same tools)."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.rewards.builder import build
from fgpo.rewards.data import table_path
from fgpo.rewards.frontier import (FrontierTables, derived_params, reuse_main, tables_root,
                                   tool_outputs_path)
from fgpo.rewards.table import tool_names


def main(k: int, reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), tracking: bool = True) -> Path:
    cfg = FrontierTables.load(params)
    main_tools = tool_names(params)
    tools = cfg.tools_at(k, main_tools)
    out = table_path(reasoner, benchmark, tables_root(data, k))
    if k == len(main_tools):
        return reuse_main(table_path(reasoner, benchmark), out, {"tools": tools},
                          "`dvc repro reward_table`")
    with derived_params(params, tools) as derived:
        return build(reasoner, benchmark, derived, data, tracking=tracking, out=out,
                     tool_outputs=tool_outputs_path(data, k, benchmark))
