"""Import a real labelled sequence collection as binary questions of a named family.

FASTA pairs (positives, negatives) or a CSV with sequence and 0/1 label columns; e.g. the
E. coli / B. subtilis sigma-70 promoter sets (Umarov & Solovyev 2017) or Genomic Benchmarks'
human non-TATA promoters (Gresova et al. 2023).
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from fgpo.benchmarks.base import assign_splits
from fgpo.benchmarks.config import QUESTION_TEMPLATES, ImportConfig, check_template
from fgpo.errors import InputError
from fgpo.question import Question, to_frame
from fgpo.seqio import read_fasta, read_labelled_csv

def clean_records(records: list[tuple[str, str, int]], source: str = "input"
                  ) -> list[tuple[str, str, int]]:
    """Drop duplicate and contradictory records, make source ids unique; warn with counts.

    - the same sequence twice in one class: the first is kept;
    - a sequence in both classes (labelled yes and no): every copy is dropped, and the import is
      refused when such conflicts exceed half of the smaller class (e.g. one file given twice);
    - the same id for different sequences: kept, the later ones renamed `id#2`, `id#3`, ...
    File order is kept.
    """
    seen: set[tuple[str, int]] = set()
    unique = []
    for rid, seq, label in records:
        if (seq, label) not in seen:
            seen.add((seq, label))
            unique.append((rid, seq, label))
    n_dup = len(records) - len(unique)
    if n_dup:
        warnings.warn(f"{source}: dropped {n_dup} duplicate sequence(s) repeated within a class "
                      "(kept the first of each)", stacklevel=3)
    by_label = {label: {s for s, lab in seen if lab == label} for label in (0, 1)}
    both = by_label[0] & by_label[1]
    if both:
        smaller = min(len(by_label[0]), len(by_label[1]))
        if len(both) > smaller / 2:
            raise InputError(f"{len(both)} sequence(s) are labelled both positive and negative, "
                             f"more than half of the smaller class ({smaller}): are the same "
                             f"records given as both classes?", file=source)
        unique = [r for r in unique if r[1] not in both]
        warnings.warn(f"{source}: dropped {len(both)} sequence(s) labelled both positive and "
                      f"negative ({2 * len(both)} records)", stacklevel=3)
    used = Counter(rid for rid, _, _ in unique)
    count: Counter = Counter()
    out, n_renamed = [], 0
    for rid, seq, label in unique:
        count[rid] += 1
        if count[rid] > 1:
            k = count[rid]
            while f"{rid}#{k}" in used:
                k += 1
            count[rid] = k
            used[f"{rid}#{k}"] += 1
            rid, n_renamed = f"{rid}#{k}", n_renamed + 1
        out.append((rid, seq, label))
    if n_renamed:
        warnings.warn(f"{source}: {n_renamed} record(s) reuse an earlier record's id with a "
                      "different sequence; kept, renamed id#2, id#3, ...", stacklevel=3)
    return out


def labelled_to_questions(records: list[tuple[str, str, int]], *, name: str, family: str,
                          organism: str = "genomic", seed: int = 0,
                          split: tuple[float, float, float] = (0.6, 0.2, 0.2),
                          max_per_class: int | None = None,
                          question: str | None = None, source: str = "input") -> list[Question]:
    """(record id, sequence, label) -> yes/no questions; balanced subsample if max_per_class.

    Records are cleaned first (`clean_records`: duplicates and contradictions dropped, ids made
    unique, with warnings).
    """
    template = question or QUESTION_TEMPLATES.get(family)
    if template is None:
        raise InputError(f"no question template for family {family!r}; pass --question "
                         f"(known: {sorted(QUESTION_TEMPLATES)})", field="family")
    if question:
        check_template(question)
    if max_per_class is not None and max_per_class < 1:
        raise InputError(f"must be at least 1, got {max_per_class} (omit it to keep every record)",
                         field="--max-per-class")
    records = clean_records(records, source)
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


def fasta_pair_records(positives: str | Path, negatives: str | Path
                       ) -> list[tuple[str, str, int]]:
    """(id, sequence, label) of a FASTA pair: positives labelled 1, negatives 0."""
    return ([(rid, s, 1) for rid, s in read_fasta(positives)]
            + [(rid, s, 0) for rid, s in read_fasta(negatives)])


def import_fasta_pair(positives: str | Path, negatives: str | Path, **kw) -> pd.DataFrame:
    kw.setdefault("source", f"{positives} + {negatives}")
    return to_frame(labelled_to_questions(fasta_pair_records(positives, negatives), **kw))


def import_csv(path: str | Path, seq_col: str = "seq", label_col: str = "label", **kw
               ) -> pd.DataFrame:
    kw.setdefault("source", str(path))
    return to_frame(labelled_to_questions(read_labelled_csv(path, seq_col, label_col), **kw))


def import_declared(name: str, cfg: ImportConfig) -> list[Question]:
    """The questions of a collection declared under params.yaml's `prepare:` (kind: imported)."""
    if cfg.is_fasta_pair:
        pos, neg = cfg.files()
        records, source = fasta_pair_records(pos, neg), f"{pos} + {neg}"
    else:
        records, source = read_labelled_csv(cfg.source, cfg.seq_col, cfg.label_col), cfg.source
    return labelled_to_questions(records, name=name, family=cfg.family, organism=cfg.organism,
                                 seed=cfg.seed, split=tuple(cfg.split),
                                 max_per_class=cfg.max_per_class, question=cfg.question or None,
                                 source=source)
