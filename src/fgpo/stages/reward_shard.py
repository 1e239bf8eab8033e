"""DVC stage `reward_shard`: shard i of N of a table in `reward_table.sharded`, built against
shard i's endpoint (`sharded.base_urls[i]`) into data/reward_tables/<reasoner>/<benchmark>.shards/
<i>.parquet; it resumes like any build and is logged as a build run (tag shard "i/N")."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.errors import InputError
from fgpo.rewards.builder import build
from fgpo.rewards.data import stage_shard_path
from fgpo.rewards.shards import ShardedConfig


def main(reasoner: str, benchmark: str, index: int, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), tracking: bool = True) -> Path:
    cfg = ShardedConfig.load(params, reasoner)
    if index not in cfg.shards:
        raise InputError(f"shard {index} is not in reward_table.sharded.shards {cfg.shards}",
                         file=str(params), field="reward_table.sharded.shards")
    out = stage_shard_path(reasoner, benchmark, index, data / "reward_tables")
    return build(reasoner, benchmark, params, data, f"{index}/{cfg.n}", cfg.base_url(index),
                 tracking, out=out)
