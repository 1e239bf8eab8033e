"""Frontier stage `frontier_tools`: the tool outputs of one benchmark at a tool count K of
frontier.ks (tools.names = the first K of frontier.tool_order) ->
data/frontier/K<k>/tool_outputs/<benchmark>.parquet: the tools stage's code, or at the main
pipeline's K a copy of its tool outputs (checked to be for the same tools)."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.rewards.data import benchmark_path
from fgpo.rewards.frontier import FrontierTables, derived_params, reuse_main, tool_outputs_path
from fgpo.rewards.table import tool_names
from fgpo.tools.outputs import write_tool_outputs
from fgpo.tools.toolset import ToolsConfig, tool_fingerprint


def main(k: int, benchmark: str, params: Path = DEFAULT_PARAMS, data: Path = Path("data")
         ) -> Path:
    cfg = FrontierTables.load(params)
    main_tools = tool_names(params)
    tools = cfg.tools_at(k, main_tools)
    out = tool_outputs_path(data, k, benchmark)
    with derived_params(params, tools) as derived:
        tools_cfg = load_section(ToolsConfig, "tools", derived)
    if k == len(main_tools):
        return reuse_main(data / "tool_outputs" / f"{benchmark}.parquet", out,
                          {"fingerprint": tool_fingerprint(tools_cfg)}, "`dvc repro tools`")
    return write_tool_outputs(benchmark_path(benchmark, data), tools_cfg, out)
