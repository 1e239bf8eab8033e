"""DVC stage `reward_merge`: the N reward_shard tables of one reasoner x benchmark joined into
the table the later stages read (checked: same build settings, every question once)."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.question import load_questions
from fgpo.rewards.data import benchmark_path, stage_shard_path, table_path
from fgpo.rewards.shards import ShardedConfig, merge_shards


def main(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data")) -> Path:
    cfg = ShardedConfig.load(params, reasoner)
    root = data / "reward_tables"
    return merge_shards([stage_shard_path(reasoner, benchmark, i, root) for i in cfg.shards],
                        table_path(reasoner, benchmark, root),
                        load_questions(benchmark_path(benchmark, data)))
