"""DVC stage `table_stats`: baselines and zero-signal statistics of one reward table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.rewards.data import load_questions_and_table, stats_path, table_path
from fgpo.rewards.stats import option_counts, table_stats
from fgpo.rewards.table import TableSettings
from fgpo.seqio import atomic_write_text
from fgpo.tools.toolset import ToolsConfig, require_fingerprint


def main(reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), metrics: Path = Path("metrics/reward_tables")
         ) -> dict[str, Any]:
    """Write metrics/reward_tables/<reasoner>/<benchmark>.json and return its numbers."""
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = TableSettings.load(params)
    questions, table = load_questions_and_table(reasoner, benchmark, tools_cfg.names, data)
    require_fingerprint(table.meta, tools_cfg, str(table_path(reasoner, benchmark,
                                                              data / "reward_tables")),
                        "the reward_table stage")  # the tools' settings and code versions
    result = table_stats(table, cfg.group_size, option_counts(questions))
    atomic_write_text(json.dumps(result, indent=1) + "\n", stats_path(reasoner, benchmark, metrics))
    return result


def outcome(result: dict[str, Any]) -> list[str]:
    """What `fgpo table-stats` prints: every number but the per-family ones and the warnings."""
    return [f"{key:40s} {value:.4f}" if isinstance(value, float) else f"{key:40s} {value}"
            for key, value in result.items()
            if not key.startswith("family/") and key != "table/warnings"]
