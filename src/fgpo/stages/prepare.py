"""DVC stage `prepare`: one declared benchmark -> data/benchmarks/<name>.parquet.

A generated benchmark is built from its seed; an imported collection from its source files
(params.yaml `prepare.<name>`, kind: imported), which DVC tracks as this stage's dependency.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from fgpo.benchmarks import build, importer
from fgpo.benchmarks.config import ImportConfig, load_prepare
from fgpo.config import DEFAULT_PARAMS
from fgpo.errors import InputError
from fgpo.question import to_frame
from fgpo.seqio import atomic_write_parquet


def main(name: str, params: Path = DEFAULT_PARAMS, out_dir: Path = Path("data/benchmarks")) -> Path:
    declared = load_prepare(params)
    if name not in declared.names:
        raise InputError(f"no benchmark {name!r} is declared; declared: {declared.names}",
                         file=str(params), field="prepare")
    cfg = declared[name]
    if isinstance(cfg, ImportConfig):
        cfg.check_files(f"prepare.{name}", str(params))
        with warnings.catch_warnings():  # the importer's clean-up counts, shown once per run
            warnings.simplefilter("always", UserWarning)
            df = to_frame(build(name, cfg))
        meta = {"benchmark": name, "imported": True, "source": cfg.source,
                "family": cfg.family, "n_questions": len(df)}
    else:
        df = to_frame(build(name, cfg))
        meta = {"benchmark": name, "seed": cfg.seed, "n_questions": len(df)}
    return atomic_write_parquet(df, out_dir / f"{name}.parquet", metadata=meta)


def import_collection(name: str, family: str, out: Path, positives: Path | None = None,
                      negatives: Path | None = None, csv: Path | None = None,
                      seq_col: str = "seq", label_col: str = "label", organism: str = "genomic",
                      question: str | None = None, max_per_class: int | None = None,
                      seed: int = 0) -> tuple[Path, int, int]:
    """`fgpo import`: a labelled collection (a FASTA pair or a CSV) as yes/no questions, written
    to `out` outside the pipeline. Returns (path, questions, positives); the importer's clean-up
    (duplicates dropped, ids renamed) is reported as warnings."""
    kw = dict(name=name, family=family, organism=organism, seed=seed, question=question,
              max_per_class=max_per_class)
    with warnings.catch_warnings():  # every clean-up line shown, not only the first of a kind
        warnings.simplefilter("always", UserWarning)
        if csv is not None and positives is None and negatives is None:
            df = importer.import_csv(csv, seq_col, label_col, **kw)
        elif csv is None and positives is not None and negatives is not None:
            df = importer.import_fasta_pair(positives, negatives, **kw)
        else:
            raise InputError("give either --csv, or both --positives and --negatives")
    atomic_write_parquet(df, out, metadata={"benchmark": name, "imported": True})
    return out, len(df), int((df.answer == "A").sum())
