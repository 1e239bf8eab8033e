"""`fgpo readme`: regenerate the README's generated tables from the pipeline's outputs (what
`make run` does after `dvc repro`; not a DVC stage, since the README is edited by hand too)."""

from __future__ import annotations

from pathlib import Path

from fgpo.config import DEFAULT_PARAMS
from fgpo.report.readme import update_readme


def main(path: Path = Path("README.md"), params: Path = DEFAULT_PARAMS,
         bench_dir: Path = Path("data/benchmarks")) -> Path:
    update_readme(path, params, bench_dir)
    return path
