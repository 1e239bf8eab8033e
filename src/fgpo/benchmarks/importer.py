"""Import a real labelled sequence collection as binary questions of a named family.

FASTA pairs (positives, negatives) or a CSV with sequence and 0/1 label columns; e.g. the
E. coli / B. subtilis sigma-70 promoter sets (Umarov & Solovyev 2017) or Genomic Benchmarks'
human non-TATA promoters (Gresova et al. 2023).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fgpo.benchmarks.base import Question, assign_splits, to_frame
from fgpo.errors import InputError
from fgpo.seqio import read_fasta, read_labelled_csv

QUESTION_TEMPLATES = {
    "promoter": "Is this {n} bp {organism} sequence a promoter?",
    "enhancer": "Is this {n} bp {organism} sequence an enhancer?",
    "splice": "Does this {n} bp {organism} sequence contain a splice site?",
    "tf_binding": "Does this {n} bp {organism} sequence contain a transcription-factor binding site?",
}


def labelled_to_questions(records: list[tuple[str, str, int]], *, name: str, family: str,
                          organism: str = "genomic", seed: int = 0,
                          split: tuple[float, float, float] = (0.6, 0.2, 0.2),
                          max_per_class: int | None = None,
                          question: str | None = None) -> list[Question]:
    """(record id, sequence, label) -> yes/no questions; balanced subsample if max_per_class."""
    template = question or QUESTION_TEMPLATES.get(family)
    if template is None:
        raise InputError(f"no question template for family {family!r}; pass --question "
                         f"(known: {sorted(QUESTION_TEMPLATES)})", field="family")
    rng = np.random.default_rng(seed)
    chosen = []
    for label in (1, 0):
        idx = [i for i, r in enumerate(records) if r[2] == label]
        if max_per_class is not None and len(idx) > max_per_class:
            idx = sorted(rng.choice(idx, size=max_per_class, replace=False).tolist())
        chosen.extend(idx)
    questions = []
    for k, i in enumerate(sorted(chosen)):
        rid, seq, label = records[i]
        questions.append(Question(
            id=f"{name}-{k:06d}", benchmark=name, family=family,
            question=template.format(n=len(seq), organism=organism), sequences={"seq": seq},
            options=["yes", "no"], answer=0 if label == 1 else 1,
            meta={"source_id": rid, "label": label}))
    assign_splits(questions, split, seed)
    return questions


def import_fasta_pair(positives: str | Path, negatives: str | Path, **kw) -> pd.DataFrame:
    records = [(rid, s, 1) for rid, s in read_fasta(positives)]
    records += [(rid, s, 0) for rid, s in read_fasta(negatives)]
    return to_frame(labelled_to_questions(records, **kw))


def import_csv(path: str | Path, seq_col: str = "seq", label_col: str = "label", **kw
               ) -> pd.DataFrame:
    return to_frame(labelled_to_questions(read_labelled_csv(path, seq_col, label_col), **kw))
