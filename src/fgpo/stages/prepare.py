"""DVC stage `prepare`: one declared benchmark -> data/benchmarks/<name>.parquet.

A generated benchmark is built from its seed; an imported collection from its source files
(params.yaml `prepare.<name>`, kind: imported), which DVC tracks as this stage's dependency.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from fgpo.benchmarks import build
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
