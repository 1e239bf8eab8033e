"""DVC stages `reward_table` (build one table) and `table_stats` (its metrics file)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from fgpo.benchmarks.base import Question, from_frame
from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.rewards.stats import table_stats
from fgpo.rewards.table import (RewardTable, RewardTableConfig, build_table, load_reward_table,
                                merge_shards)
from fgpo.seqio import atomic_write_text, read_parquet
from fgpo.tools import ToolsConfig
from fgpo.tools.outputs import load_tool_outputs


def table_path(reasoner: str, benchmark: str, root: Path = Path("data/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.parquet"


def stats_path(reasoner: str, benchmark: str, root: Path = Path("metrics/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.json"


def parse_shard(shard: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N."""
    try:
        i, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise InputError(f"shard must look like 0/4, got {shard!r}", field="--shard") from None
    if not 0 <= i < n:
        raise InputError(f"shard index must be in 0..{n - 1}", field="--shard")
    return i, n


def shard_path(reasoner: str, benchmark: str, i: int, n: int, root: Path) -> Path:
    return root / reasoner / f"{benchmark}.shard{i}of{n}.parquet"


def _questions(benchmark: str, data: Path):
    src = data / "benchmarks" / f"{benchmark}.parquet"
    if not src.exists():
        raise InputError("benchmark not found (run `dvc repro prepare`)", file=str(src))
    return from_frame(read_parquet(src, rebuild="`dvc repro prepare`"), source=str(src))


def build(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
          data: Path = Path("data"), shard: str | None = None, base_url: str | None = None
          ) -> Path:
    """Build one table, or with shard='I/N' the questions with index % N == I (one server's
    share); `base_url` overrides the spec's endpoint for that server."""
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(RewardTableConfig, "reward_table", params)
    spec = cfg.spec(reasoner)
    if base_url:
        spec = replace(spec, base_url=base_url)
    questions = _questions(benchmark, data)
    out = table_path(reasoner, benchmark, data / "reward_tables")
    if shard:
        i, n = parse_shard(shard)
        questions = questions[i::n]
        out = shard_path(reasoner, benchmark, i, n, data / "reward_tables")
    outputs = load_tool_outputs(data / "tool_outputs" / f"{benchmark}.parquet", tools_cfg,
                                questions)
    lacking = [q.id for q in questions if q.id not in outputs]
    if lacking:
        raise InputError(f"{len(lacking)} question(s) have no tool outputs; rerun the tools stage",
                         file=str(data / "tool_outputs" / f"{benchmark}.parquet"),
                         record=lacking[0])
    return build_table(questions, outputs, tools_cfg, reasoner, spec, cfg, out, benchmark,
                       shard=shard)


def merge(reasoner: str, benchmark: str, n: int, data: Path = Path("data")) -> Path:
    """Merge the N shard tables of one reasoner x benchmark into the stage's output."""
    root = data / "reward_tables"
    shards = [shard_path(reasoner, benchmark, i, n, root) for i in range(n)]
    return merge_shards(shards, table_path(reasoner, benchmark, root), _questions(benchmark, data))


def load_questions_and_table(reasoner: str, benchmark: str, tools_cfg: ToolsConfig,
                             data: Path = Path("data")) -> tuple[list[Question], RewardTable]:
    """The benchmark's questions and their reward table, row-aligned (question i = table row i).

    The one loader of train and table-stats: refuses a table built for another tool set, with a
    question or cell missing, a foreign question, or a question whose content changed since.
    """
    questions = _questions(benchmark, data)
    table = load_reward_table(table_path(reasoner, benchmark, data / "reward_tables"), tools_cfg,
                              questions)
    by_id = {q.id: q for q in questions}
    return [by_id[i] for i in table.question_ids], table


def stats(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
          data: Path = Path("data"), metrics: Path = Path("metrics/reward_tables")
          ) -> dict[str, Any]:
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(RewardTableConfig, "reward_table", params)
    _, table = load_questions_and_table(reasoner, benchmark, tools_cfg, data)
    result = table_stats(table, cfg.group_size)
    atomic_write_text(json.dumps(result, indent=1) + "\n", stats_path(reasoner, benchmark, metrics))
    return result
