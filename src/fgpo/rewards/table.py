"""Reading exhaustive reward tables (every question x every one of the 2^K tool subsets).

Loading checks completeness, the tools' bit order and, given the benchmark's questions, that
the table covers exactly them as they are now. Whether the tools' settings and code are still
the ones a table was built with is the tool set's fingerprint
(`fgpo.tools.toolset.require_fingerprint`), checked by the readers that hold the tool set
(table-stats, the report, the table build itself); training reads a table by its tool names
alone, so it does not depend on any tool module (DVC reruns a table's build when a tool changes). Building a table (asking a reasoner) is
`fgpo.rewards.build`; nothing here imports a reasoner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fgpo.config import DEFAULT_PARAMS, check_number, load_part, read_params
from fgpo.errors import InputError
from fgpo.question import Question, require_digests
from fgpo.rewards.cells import REBUILD, require_finite_cells
from fgpo.seqio import read_parquet, read_parquet_metadata
from fgpo.tools.subsets import DEFAULT_TOOLS, tools_per_mask

COLUMNS = ["question_id", "question_digest", "split", "family", "mask", "n_tools", "correct",
           "reward", "answer", "parsed"]


@dataclass
class TableSettings:
    """What a reader of the tables needs from the `reward_table:` section of params.yaml; the
    build's own settings (reasoner specs, shards) are `fgpo.rewards.build.RewardTableConfig`,
    which extends this."""

    group_size: int = 8
    """G of the GRPO group whose expected zero-signal fraction table-stats reports."""
    build: list[str] = field(default_factory=list)
    """Reasoner names that `dvc repro` builds tables for (keys of `reasoners`)."""
    tool_cost: float = 0.01
    """Reward = correct - tool_cost * n_tools (the paper's optional per-tool cost; 0 = off):
    the cost of the main pipeline's tables (the ablation's other costs are derived from them)."""

    def __post_init__(self) -> None:
        check_number(self.group_size, "reward_table.group_size", "a group needs at least two "
                     "samples to have a spread, e.g. 8", ge=2, integer=True)
        check_number(self.tool_cost, "reward_table.tool_cost", "reward = correct - tool_cost x "
                     "n_tools; 0 turns the cost off", ge=0)
        if not isinstance(self.build, list) or not all(isinstance(n, str) for n in self.build):
            raise InputError(f"build must be a list of reasoner names, got {self.build!r}",
                             field="reward_table.build")

    @classmethod
    def load(cls, params: str | Path = DEFAULT_PARAMS) -> TableSettings:
        """This view of `reward_table:`; the section's other keys are the build's (validated by
        the reward_table stage), so they are passed over here."""
        return load_part(cls, "reward_table", params)


def tool_names(params: str | Path = DEFAULT_PARAMS) -> list[str]:
    """`tools.names` of params.yaml: the tools in bit order, as a table's masks use them, read
    without the tool set (`fgpo.tools.toolset.ToolsConfig` checks the names are registered)."""
    raw = read_params(params)
    if "tools" not in raw:
        raise InputError("missing section 'tools'", file=str(params))
    names = (raw["tools"] or {}).get("names", DEFAULT_TOOLS)
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise InputError(f"names must be a non-empty list of tool names, got {names!r}",
                         file=str(params), field="tools.names")
    return names


# ---- load ------------------------------------------------------------------------------------
def require_question_ids(ids, questions: list[Question], file: str) -> None:
    """The table's question ids are exactly the benchmark's: none missing, none foreign."""
    have, want = set(ids), [q.id for q in questions]
    lacking = [i for i in want if i not in have]
    wanted = set(want)
    foreign = sorted(i for i in have if i not in wanted)
    if lacking or foreign:
        raise InputError(f"table and benchmark disagree on the questions ({len(lacking)} of the "
                         f"benchmark's {len(want)} missing from the table, {len(foreign)} not "
                         f"in the benchmark); rebuild it: {REBUILD}", file=file,
                         record=(lacking or foreign)[0], field="question_id")


@dataclass
class RewardTable:
    """A loaded table as dense [N, 2^K] arrays (row i = question_ids[i], column = mask)."""

    question_ids: list[str]
    splits: np.ndarray
    families: np.ndarray
    reward: np.ndarray
    correct: np.ndarray
    n_tools: np.ndarray
    meta: dict[str, Any]

    def in_split(self, name: str) -> np.ndarray:
        """[N] bool: which rows belong to split `name` (train | val | test)."""
        return self.splits == name


@dataclass
class RunData:
    """Questions aligned row for row with the reward table."""

    questions: list[Question]
    table: RewardTable
    tool_names: list[str]

    def rows(self, name: str) -> np.ndarray:
        """The row indices of split `name` (train | val | test), in table order."""
        return np.flatnonzero(self.table.splits == name)


def require_tool_names(meta: dict[str, Any], names: Sequence[str], path: str) -> None:
    """The table's masks mean these tools in this bit order (its recorded `tools`)."""
    if meta.get("tools") != list(names):
        raise InputError(f"built for the tools {meta.get('tools')} (in bit order), not the "
                         f"configured {list(names)} (tools.names); rebuild it: {REBUILD}",
                         file=path, field="tools")


def load_reward_table(path: str | Path, names: Sequence[str],
                      questions: list[Question] | None = None) -> RewardTable:
    """Load and validate: built for these tools (`names`, in bit order), one row per
    (question, subset), complete, every reward finite and every correctness 0 or 1.

    Given the benchmark's `questions` (train and table-stats pass them), the table must also
    cover exactly those question ids, each with the content digest it has now.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("reward table not found (run `dvc repro reward_table`)", file=str(path))
    meta = read_parquet_metadata(path, rebuild="`dvc repro reward_table`")
    require_tool_names(meta, names, str(path))
    df = read_parquet(path, rebuild="`dvc repro reward_table`")
    n_sub = 2 ** len(names)
    dup = df.duplicated(["question_id", "mask"])
    if dup.any():
        r = df[dup].iloc[0]
        raise InputError(f"{int(dup.sum())} duplicate (question, subset) rows", file=str(path),
                         record=f"{r.question_id} subset {r['mask']}", field="mask")
    bad = df[(df["mask"] < 0) | (df["mask"] >= n_sub)]
    if len(bad):
        raise InputError(f"subset mask outside 0..{n_sub - 1}", file=str(path),
                         record=bad.iloc[0].question_id, field="mask")
    counts = df.groupby("question_id", sort=False).size()
    short = counts[counts != n_sub]
    if len(short):
        raise InputError(f"{len(short)} question(s) lack cells: {short.index[0]} has "
                         f"{short.iloc[0]} of {n_sub} subsets", file=str(path),
                         record=short.index[0], field="mask")
    require_finite_cells(df, str(path))
    require_digests(df, questions or [], str(path), REBUILD)
    if questions is not None:
        require_question_ids(counts.index, questions, str(path))
    df = df.sort_values(["question_id", "mask"], kind="stable")
    ids = df.question_id.iloc[::n_sub].tolist()
    first = df.iloc[::n_sub]
    return RewardTable(question_ids=ids, splits=first.split.to_numpy(),
                       families=first.family.to_numpy(),
                       reward=df.reward.to_numpy(np.float64).reshape(-1, n_sub),
                       correct=df.correct.to_numpy(np.float64).reshape(-1, n_sub),
                       n_tools=tools_per_mask(len(names)), meta=meta)
