"""A reward table at another per-tool cost, from an existing table, without a reasoner call.

reward(q, S) = correct(q, S) - tool_cost x n_tools(S): the reasoner's answer to (q, S), and so
`correct`, does not depend on the cost, which only enters the reward column. A table at cost c'
is therefore a column transform of a table at any cost c, equal cell for cell to a rebuild at
c' (the same arithmetic as `fgpo.rewards.build.assemble`, the same float32 column). The
ablation's tool-cost frontier uses it: no cell is asked twice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fgpo.config import DEFAULT_PARAMS, check_number, load_part
from fgpo.errors import InputError
from fgpo.rewards.cells import REBUILD, require_finite_cells
from fgpo.rewards.table import TableSettings
from fgpo.seqio import atomic_write_parquet, read_parquet, read_parquet_metadata


@dataclass
class ToolCosts:
    """The tool costs of the ablation's tables: `ablation.tool_costs`, the view the
    `cost_table` stage reads (the section's training keys are `fgpo.train.ablation`, which
    extends this)."""

    tool_costs: list[float] = field(default_factory=lambda: [0.0, 0.01, 0.05])
    """Per-tool costs of the accuracy-vs-tools frontier; must include reward_table.tool_cost."""

    def __post_init__(self) -> None:
        costs = self.tool_costs
        if not isinstance(costs, list) or not costs or len(set(costs)) != len(costs) or \
                not all(isinstance(c, (int, float)) and not isinstance(c, bool) and c >= 0
                        for c in costs):
            raise InputError(f"tool_costs must be distinct numbers >= 0, e.g. [0.0, 0.01, 0.05];"
                             f" got {costs!r}", field="ablation.tool_costs")
        for c in costs:
            check_number(c, "ablation.tool_costs", "e.g. [0.0, 0.01, 0.05]", ge=0)
        self.tool_costs = [float(c) for c in costs]

    @classmethod
    def load(cls, params: str | Path = DEFAULT_PARAMS) -> ToolCosts:
        return load_part(cls, "ablation", params)

    def check(self, cost: float, main_cost: float, params: Any = None) -> None:
        """Refuse a cost the section (of the file `params`) does not declare, and a main cost
        (reward_table.tool_cost) outside it."""
        where = {"file": None if params is None else str(params), "field": "ablation.tool_costs"}
        if float(cost) not in self.tool_costs:
            raise InputError(f"tool cost {cost} is not in {self.tool_costs}", **where)
        if float(main_cost) not in self.tool_costs:
            raise InputError(f"the main tool cost {main_cost} (reward_table.tool_cost) must be "
                             f"one of tool_costs {self.tool_costs}: the estimator table and the "
                             f"decomposition are read there", **where)


def main_tool_cost(params: str | Path) -> float:
    """reward_table.tool_cost: the cost of the main pipeline's tables."""
    return TableSettings.load(params).tool_cost


def cost_dir(cost: float) -> str:
    """The folder of one tool cost's outputs: cost0.0, cost0.01 (as DVC writes ${item.cost})."""
    return f"cost{float(cost)}"


def ablation_tables(cost: float, data: Path = Path("data")) -> Path:
    """The tables of one tool cost: data/ablation/reward_tables/cost<c>."""
    return data / "ablation" / "reward_tables" / cost_dir(cost)


def with_tool_cost(src: Path, out: Path, tool_cost: float) -> Path:
    """Write the table `src` with reward = correct - tool_cost x n_tools to `out`; its metadata
    is the source's with the new cost, no reasoner call of its own, and where it came from.
    At the source's own cost, `out` is a byte copy (so runs on it match runs on the source)."""
    try:
        check_number(tool_cost, "tool_cost", "reward = correct - tool_cost x n_tools; 0 turns "
                     "the cost off", ge=0)
    except InputError as exc:
        raise InputError(exc.message, file=str(out), field=exc.field) from None
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
