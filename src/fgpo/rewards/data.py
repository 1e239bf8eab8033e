"""Where the reward tables and their stats live, and the row-aligned loaders of every stage
that reads a table (table-stats, train, sweep, report)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fgpo.question import Question, load_questions
from fgpo.rewards.table import RewardTable, RunData, load_reward_table


def benchmark_path(benchmark: str, data: Path = Path("data")) -> Path:
    return data / "benchmarks" / f"{benchmark}.parquet"


def table_path(reasoner: str, benchmark: str, root: Path = Path("data/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.parquet"


def stats_path(reasoner: str, benchmark: str, root: Path = Path("metrics/reward_tables")) -> Path:
    return root / reasoner / f"{benchmark}.json"


def stage_shard_path(reasoner: str, benchmark: str, i: int, root: Path) -> Path:
    """Shard i's table as the reward_shard stage writes it (its folder is the merge's dep)."""
    return root / reasoner / f"{benchmark}.shards" / f"{i}.parquet"


def load_questions_and_table(reasoner: str, benchmark: str, tool_names: Sequence[str],
                             data: Path = Path("data"), tables: Path | None = None
                             ) -> tuple[list[Question], RewardTable]:
    """The benchmark's questions and their reward table, row-aligned (question i = table row i).

    The one loader of train and table-stats: refuses a table built for other tools (names in
    bit order), with a question or cell missing, a foreign question, or a question whose
    content changed since (table-stats also checks the tools' fingerprint).
    """
    questions = load_questions(benchmark_path(benchmark, data))
    table = load_reward_table(table_path(reasoner, benchmark, tables or data / "reward_tables"),
                              tool_names, questions)
    by_id = {q.id: q for q in questions}
    return [by_id[i] for i in table.question_ids], table


def load_run_data(reasoner: str, benchmark: str, tool_names: Sequence[str],
                  data: Path = Path("data"), tables: Path | None = None) -> RunData:
    """Questions and their reward table (from `tables`, default data/reward_tables),
    row-aligned; refuses a missing, incomplete or stale table with the same check as
    `table-stats`."""
    questions, table = load_questions_and_table(reasoner, benchmark, tool_names, data, tables)
    return RunData(questions, table, list(tool_names))
