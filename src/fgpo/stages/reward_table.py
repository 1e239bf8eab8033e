"""DVC stage `reward_table`: build (or resume, shard, merge) one reasoner x benchmark table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.question import load_questions
from fgpo.rewards.data import benchmark_path, shard_path, table_path
from fgpo.rewards.build import RewardTableConfig, build_table, merge_shards
from fgpo.tools import ToolsConfig
from fgpo.tools.outputs import load_tool_outputs


def parse_shard(shard: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N."""
    try:
        i, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise InputError(f"shard must look like 0/4, got {shard!r}", field="--shard") from None
    if not 0 <= i < n:
        raise InputError(f"shard index must be in 0..{n - 1}", field="--shard")
    return i, n


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
    questions = load_questions(benchmark_path(benchmark, data))
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
    return merge_shards(shards, table_path(reasoner, benchmark, root),
                        load_questions(benchmark_path(benchmark, data)))


def main(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         shard: str | None = None, base_url: str | None = None, merge_shards: int | None = None
         ) -> Path:
    """`fgpo reward-table`: merge N finished shards, or build (a shard of) the table."""
    if merge_shards:
        return merge(reasoner, benchmark, merge_shards, data)
    return build(reasoner, benchmark, params, data, shard, base_url)
