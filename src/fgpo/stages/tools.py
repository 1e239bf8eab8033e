"""DVC stage `tools`: run all K tools once on every question -> data/tool_outputs/<name>.parquet."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.question import load_questions
from fgpo.seqio import atomic_write_parquet
from fgpo.tools.toolset import ToolsConfig, tool_fingerprint
from fgpo.tools.outputs import run_tools


def main(name: str, params: Path = DEFAULT_PARAMS, bench_dir: Path = Path("data/benchmarks"),
         out_dir: Path = Path("data/tool_outputs")) -> Path:
    cfg = load_section(ToolsConfig, "tools", params)
    questions = load_questions(bench_dir / f"{name}.parquet")
    df = run_tools(questions, cfg)
    meta = {"benchmark": name, "fingerprint": tool_fingerprint(cfg), "tools": cfg.names,
            "K": len(cfg.names), "config": asdict(cfg)}
    return atomic_write_parquet(df, out_dir / f"{name}.parquet", metadata=meta)
