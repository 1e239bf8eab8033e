"""Question schema, split assignment and the parquet layout shared by every benchmark."""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fgpo.errors import InputError

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


def assign_splits(questions: list[Question], fractions: tuple[float, float, float], seed: int
                  ) -> None:
    """Seeded train/val/test split, stratified by family (each family split in proportion)."""
    rng = np.random.default_rng(seed)
    by_family: dict[str, list[Question]] = {}
    for q in questions:
        by_family.setdefault(q.family, []).append(q)
    for fam in sorted(by_family):
        qs = by_family[fam]
        order = rng.permutation(len(qs))
        n_train = int(round(fractions[0] * len(qs)))
        n_val = int(round(fractions[1] * len(qs)))
        for rank, idx in enumerate(order):
            qs[idx].split = ("train" if rank < n_train else "val" if rank < n_train + n_val
                             else "test")


def to_frame(questions: list[Question]) -> pd.DataFrame:
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
