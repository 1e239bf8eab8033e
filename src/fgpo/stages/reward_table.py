"""DVC stage `reward_table`: build (or resume) one reasoner x benchmark table (a table of
`reward_table.sharded` is the stages reward_shard and reward_merge instead). The build and its
MLflow run are `fgpo.rewards.builder`.
"""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.rewards.builder import build


def main(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         tracking: bool = True) -> Path:
    """`fgpo reward-table`: build (or resume) the table, logged as an MLflow run unless
    `tracking` is off."""
    return build(reasoner, benchmark, params, data, tracking=tracking)
