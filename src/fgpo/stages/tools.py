"""DVC stage `tools`: run all K tools once on every question -> data/tool_outputs/<name>.parquet."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.tools.outputs import write_tool_outputs
from fgpo.tools.toolset import ToolsConfig


def main(name: str, params: Path = DEFAULT_PARAMS, bench_dir: Path = Path("data/benchmarks"),
         out_dir: Path = Path("data/tool_outputs")) -> Path:
    cfg = load_section(ToolsConfig, "tools", params)
    return write_tool_outputs(bench_dir / f"{name}.parquet", cfg, out_dir / f"{name}.parquet")
