"""DVC stages `reward_table` (build one table) and `table_stats` (its metrics file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.benchmarks.base import from_frame
from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.rewards.stats import table_stats
from fgpo.rewards.table import RewardTableConfig, build_table, load_reward_table
from fgpo.seqio import atomic_write_text
from fgpo.tools import ToolsConfig
from fgpo.tools.outputs import load_tool_outputs


def table_path(reasoner: str, benchmark: str, root: Path = Path("data/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.parquet"


def stats_path(reasoner: str, benchmark: str, root: Path = Path("metrics/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.json"


def build(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
          data: Path = Path("data")) -> Path:
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(RewardTableConfig, "reward_table", params)
    spec = cfg.spec(reasoner)
    src = data / "benchmarks" / f"{benchmark}.parquet"
    if not src.exists():
        raise InputError("benchmark not found (run `dvc repro prepare`)", file=str(src))
    questions = from_frame(pd.read_parquet(src), source=str(src))
    outputs = load_tool_outputs(data / "tool_outputs" / f"{benchmark}.parquet", tools_cfg)
    lacking = [q.id for q in questions if q.id not in outputs]
    if lacking:
        raise InputError(f"{len(lacking)} question(s) have no tool outputs; rerun the tools stage",
                         file=str(data / "tool_outputs" / f"{benchmark}.parquet"),
                         record=lacking[0])
    return build_table(questions, outputs, tools_cfg, reasoner, spec, cfg,
                       table_path(reasoner, benchmark, data / "reward_tables"), benchmark)


def stats(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
          data: Path = Path("data"), metrics: Path = Path("metrics/reward_tables")
          ) -> dict[str, Any]:
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(RewardTableConfig, "reward_table", params)
    table = load_reward_table(table_path(reasoner, benchmark, data / "reward_tables"), tools_cfg)
    result = table_stats(table, cfg.group_size)
    atomic_write_text(json.dumps(result, indent=1) + "\n", stats_path(reasoner, benchmark, metrics))
    return result
