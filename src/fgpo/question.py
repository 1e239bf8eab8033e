"""The question every layer passes around: its schema, content digest and parquet layout.

Below tools, benchmarks and reasoners alike, so each of them can read questions without
importing another.
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.errors import InputError
from fgpo.seqio import read_parquet

LETTERS = string.ascii_uppercase
SPLITS = ("train", "val", "test")
COLUMNS = ["id", "benchmark", "family", "question", "seq_labels", "sequences", "options",
           "answer", "answer_index", "split", "meta"]


@dataclass
class Question:
    """One multiple-choice question with a verifiable answer.

    `sequences` maps a label ('seq', or 'ref'/'alt', 'seq1'/'seq2') to upper-case DNA; `answer`
    indexes `options`; `meta` records how the question was built (planted positions etc.).
    """

    id: str
    benchmark: str
    family: str
    question: str
    sequences: dict[str, str]
    options: list[str]
    answer: int
    split: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def answer_letter(self) -> str:
        return LETTERS[self.answer]


def question_digest(q: Question) -> str:
    """Stable hash of what tools, reasoner and tables see of a question (16 hex chars).

    Covers id, benchmark, family, question text, the labelled sequences in order, options,
    answer and split; `meta` (how the question was built) is left out. Tool outputs and reward
    tables record it per row, so a re-imported benchmark that reuses ids is not paired with
    outputs computed for other content.
    """
    content = [q.id, q.benchmark, q.family, q.question, [[k, v] for k, v in q.sequences.items()],
               list(q.options), int(q.answer), q.split]
    blob = json.dumps(content, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def require_digests(df: pd.DataFrame, questions: list[Question], file: str, rebuild: str
                    ) -> None:
    """Refuse rows (`question_id`, `question_digest`) computed for other question content.

    Rows of ids not in `questions` are not judged here (callers check coverage). A file
    without the column predates digests and is refused too; `rebuild` says how to remake it.
    """
    if "question_digest" not in df.columns:
        raise InputError(f"no question_digest column (written before question digests were "
                         f"recorded); rebuild it: {rebuild}", file=file, field="question_digest")
    digests = {q.id: question_digest(q) for q in questions}
    expected = df["question_id"].map(digests)
    bad = expected.notna() & (df["question_digest"] != expected)
    if bad.any():
        ids = df.loc[bad, "question_id"]
        raise InputError(f"{ids.nunique()} question(s) differ from the content this file was "
                         f"built for (same id, other question digest: the benchmark changed, "
                         f"e.g. re-imported); rebuild it: {rebuild}", file=file,
                         record=ids.iloc[0], field="question_digest")


def to_frame(questions: list[Question]) -> pd.DataFrame:
    """The benchmark parquet layout (COLUMNS), one row per question."""
    rows = [{"id": q.id, "benchmark": q.benchmark, "family": q.family, "question": q.question,
             "seq_labels": list(q.sequences), "sequences": list(q.sequences.values()),
             "options": list(q.options), "answer": q.answer_letter, "answer_index": q.answer,
             "split": q.split, "meta": json.dumps(q.meta, sort_keys=True)}
            for q in questions]
    return pd.DataFrame(rows, columns=COLUMNS)


def from_frame(df: pd.DataFrame, source: str = "benchmark") -> list[Question]:
    """Questions from a benchmark parquet; a missing column or bad answer names the record."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"missing column(s) {missing}", file=source, field=missing[0])
    out = []
    for i, r in enumerate(df.itertuples(index=False)):
        options = list(r.options)
        if not 0 <= int(r.answer_index) < len(options):
            raise InputError(f"answer_index {r.answer_index} outside {len(options)} options",
                             file=source, record=r.id, field="answer_index")
        out.append(Question(id=r.id, benchmark=r.benchmark, family=r.family,
                            question=r.question, sequences=dict(zip(r.seq_labels, r.sequences)),
                            options=options, answer=int(r.answer_index), split=r.split,
                            meta=json.loads(r.meta)))
    return out


def load_questions(path: Path) -> list[Question]:
    """The questions of a benchmark parquet written by the prepare stage (or `fgpo import`)."""
    if not path.exists():
        raise InputError("benchmark not found (run `dvc repro prepare`)", file=str(path))
    return from_frame(read_parquet(path, rebuild="`dvc repro prepare`"), source=str(path))
