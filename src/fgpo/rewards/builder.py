"""A reward-table build as the stages run it: the params and files it reads, a resumed
journal, and the build's MLflow run (experiment `fgpo-reward-tables`, tags reasoner, benchmark,
shard: the reasoner's spec as params, the benchmark and tool outputs as dataset inputs, and
table/cells, table/reasoner_calls (asked by this process; a resumed build asks fewer),
table/seconds, table/cells_per_s and table/unparseable_frac as metrics). Called by the stages
`reward_table` and `reward_shard`; the cells themselves are `fgpo.rewards.build.build_table`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.question import load_questions
from fgpo.rewards.build import RewardTableConfig, build_table, journal_cells
from fgpo.rewards.data import benchmark_path, table_path
from fgpo.seqio import read_parquet_metadata
from fgpo.tools.outputs import load_tool_outputs
from fgpo.tools.toolset import ToolsConfig

log = logging.getLogger(__name__)


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
          data: Path = Path("data"), shard: str | None = None, base_url: str | None = None,
          tracking: bool = True, out: Path | None = None, tool_outputs: Path | None = None
          ) -> Path:
    """Build one table into `out` (default its place under data/reward_tables) from the tool
    outputs `tool_outputs` (default data/tool_outputs/<benchmark>.parquet), or with
    shard='I/N' the questions with index % N == I (one server's share: the reward_shard stage
    gives its `out`); `base_url` overrides the spec's endpoint for that server."""
    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(RewardTableConfig, "reward_table", params)
    spec = cfg.spec(reasoner)
    if base_url:
        spec = replace(spec, base_url=base_url)
    questions = load_questions(benchmark_path(benchmark, data))
    if shard:
        if out is None:
            raise ValueError("a shard is built into its own file: give `out`")
        i, n = parse_shard(shard)
        questions = questions[i::n]
    out = out or table_path(reasoner, benchmark, data / "reward_tables")
    tool_outputs = tool_outputs or data / "tool_outputs" / f"{benchmark}.parquet"
    outputs = load_tool_outputs(tool_outputs, tools_cfg, questions)
    lacking = [q.id for q in questions if q.id not in outputs]
    if lacking:
        raise InputError(f"{len(lacking)} question(s) have no tool outputs; rerun the tools stage",
                         file=str(tool_outputs), record=lacking[0])
    resumed, start = journal_cells(out), time.perf_counter()
    if resumed:
        log.info("%s: resuming an interrupted build, %d cells answered already", out, resumed)
    path = build_table(questions, outputs, tools_cfg, reasoner, spec, cfg, out, benchmark,
                       shard=shard)
    if tracking:
        log_build(path, time.perf_counter() - start, resumed, spec.public(), cfg.tool_cost,
                  [benchmark_path(benchmark, data), tool_outputs])
    return path


def log_build(table: Path, seconds: float, resumed: int, spec: dict, tool_cost: float,
              inputs: list[Path]) -> str:
    """The build as an MLflow run; returns its id."""
    from fgpo.tracking import Tracker
    from fgpo.tracking.datasets import dvc_dataset
    from fgpo.tracking.provenance import TABLES_EXPERIMENT

    meta = read_parquet_metadata(table)
    cells = int(meta["n_questions"]) * 2 ** int(meta["K"])
    asked = int(meta["reasoner_calls"]) - resumed
    tracker = Tracker(TABLES_EXPERIMENT, f"{meta['reasoner']}-{meta['benchmark']}",
                      tags={"kind": "reward_table", "reasoner": meta["reasoner"],
                            "benchmark": meta["benchmark"], "shard": str(meta.get("shard")),
                            "setting": f"{meta['reasoner']}/{meta['benchmark']}"},
                      params={"reasoner": spec, "tool_cost": tool_cost, "tools": meta["tools"]})
    try:
        tracker.log_inputs([dvc_dataset(p, p.stem if p.parent.name == "benchmarks"
                                        else f"tool outputs {p.stem}", "build")
                            for p in inputs])
        tracker.log_metrics({"table/cells": cells, "table/reasoner_calls": asked,
                             "table/resumed_cells": resumed, "table/seconds": seconds,
                             "table/cells_per_s": asked / max(seconds, 1e-9),
                             "table/unparseable_frac": int(meta["unparseable"]) / cells}, 0)
    except BaseException:
        tracker.end("FAILED")
        raise
    tracker.end()
    return tracker.run_id
