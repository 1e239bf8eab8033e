"""A reward table at another per-tool cost, from an existing table, without a reasoner call.

reward(q, S) = correct(q, S) - tool_cost x n_tools(S): the reasoner's answer to (q, S), and so
`correct`, does not depend on the cost, which only enters the reward column. A table at cost c'
is therefore a column transform of a table at any cost c, equal cell for cell to a rebuild at
c' (the same arithmetic as `fgpo.rewards.build.assemble`, the same float32 column). The
ablation's tool-cost frontier uses it: no cell is asked twice.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from pathlib import Path

from fgpo.errors import InputError
from fgpo.rewards.cells import require_finite_cells
from fgpo.seqio import atomic_write_parquet, read_parquet, read_parquet_metadata

REBUILD = "`fgpo reward-table` (or `dvc repro reward_table`)"


def with_tool_cost(src: Path, out: Path, tool_cost: float) -> Path:
    """Write the table `src` with reward = correct - tool_cost x n_tools to `out`; its metadata
    is the source's with the new cost, no reasoner call of its own, and where it came from.
    At the source's own cost, `out` is a byte copy (so runs on it match runs on the source)."""
    if not (tool_cost >= 0 and math.isfinite(tool_cost)):
        raise InputError(f"tool_cost must be >= 0, got {tool_cost!r}", file=str(out),
                         field="tool_cost")
    meta = read_parquet_metadata(src, rebuild=REBUILD)
    if meta.get("tool_cost") == tool_cost:  # the identity: the same bytes (and file digest)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, out)
        return out
    df = read_parquet(src, rebuild=REBUILD)
    for column in ("correct", "n_tools", "reward"):
        if column not in df.columns:
            raise InputError(f"not a reward table: no {column!r} column; rebuild it: {REBUILD}",
                             file=str(src), field=column)
    # the build's arithmetic: correct - cost * n_tools in double, stored as float32
    df["reward"] = (df["correct"].astype("float64")
                    - tool_cost * df["n_tools"].astype("float64")).astype("float32")
    with open(src, "rb") as fh:
        md5 = hashlib.file_digest(fh, "md5").hexdigest()
    derived = {**meta, "tool_cost": tool_cost, "reasoner_calls": 0,
               "derived_from": {"file": src.name, "md5": md5,
                                "tool_cost": meta.get("tool_cost"),
                                "reasoner_calls": meta.get("reasoner_calls")}}
    require_finite_cells(df, str(src))
    return atomic_write_parquet(df, out, metadata=derived)
