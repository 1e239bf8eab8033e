"""DVC stage `reward_table`: build (or resume, shard, merge) one reasoner x benchmark table (a
table of `reward_table.sharded` is the stages reward_shard and reward_merge instead). The build
and its MLflow run are `fgpo.rewards.builder`.
"""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.rewards.builder import build, merge


def main(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         shard: str | None = None, base_url: str | None = None, merge_shards: int | None = None,
         tracking: bool = True) -> Path:
    """`fgpo reward-table`: merge N finished shards, or build (a shard of) the table (logged as
    an MLflow run unless `tracking` is off)."""
    if merge_shards:
        return merge(reasoner, benchmark, merge_shards, data)
    return build(reasoner, benchmark, params, data, shard, base_url, tracking)
