"""DVC stage `prepare`: generate one benchmark -> data/benchmarks/<name>.parquet."""

from __future__ import annotations

from pathlib import Path

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig, PrepareConfig
from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.question import to_frame
from fgpo.seqio import atomic_write_parquet


def main(name: str, params: Path = DEFAULT_PARAMS, out_dir: Path = Path("data/benchmarks")) -> Path:
    prepare = load_section(PrepareConfig, "prepare", params)
    if not hasattr(prepare, name):
        raise InputError(f"unknown benchmark {name!r}", file=str(params), field="prepare")
    cfg: BenchmarkConfig = getattr(prepare, name)
    df = to_frame(generate(name, cfg))
    return atomic_write_parquet(df, out_dir / f"{name}.parquet",
                                metadata={"benchmark": name, "seed": cfg.seed,
                                          "n_questions": len(df)})
