"""Benchmarks: seeded, offline question sets with verifiable answers, plus a real-data importer.

Which benchmarks the pipeline runs is declared once, in params.yaml's `prepare:` section
(`fgpo.benchmarks.config`); `build` turns one declaration into its questions.

Each benchmark module defines FAMILIES: name -> builder(rng, cfg, i) -> Question (id and split
are filled in here). Question i of family f draws from its own RNG stream seeded by
(seed, crc32(f), i), so families are independent and growing n keeps earlier questions.
"""

from __future__ import annotations

import importlib
import logging
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from fgpo.benchmarks.base import assign_splits
from fgpo.benchmarks.config import (GENERATORS, Benchmark, BenchmarkConfig, ImportConfig,
                                    load_prepare)
from fgpo.errors import InputError
from fgpo.question import Question

log = logging.getLogger(__name__)

Builder = Callable[[np.random.Generator, BenchmarkConfig, int], Question]



def families(name: str) -> dict[str, Builder]:
    """The family builders of benchmark `name` (its module's FAMILIES)."""
    if name not in GENERATORS:
        raise InputError(f"no generated benchmark {name!r}; generators: {list(GENERATORS)}",
                         field="benchmark")
    return importlib.import_module(f"fgpo.benchmarks.{name}").FAMILIES


def evidence(name: str) -> dict[str, list[str]]:
    """Family -> the tools that carry a generated benchmark's planted evidence (documentation and
    README table). An imported collection has none: its labels come from the real data."""
    families(name)
    return importlib.import_module(f"fgpo.benchmarks.{name}").EVIDENCE


def generate(name: str, cfg: BenchmarkConfig, progress: bool = True) -> list[Question]:
    """All questions of benchmark `name`, with ids and splits assigned."""
    builders = families(name)
    chosen = cfg.families or list(builders)
    unknown = [f for f in chosen if f not in builders]
    if unknown:
        raise InputError(f"unknown {name} families {unknown}; known: {list(builders)}",
                         field=f"prepare.{name}.families")
    per = [cfg.n_questions // len(chosen) + (k < cfg.n_questions % len(chosen))
           for k in range(len(chosen))]
    questions = []
    with tqdm(total=cfg.n_questions, desc=f"prepare {name}", disable=not progress) as bar:
        for fam, n in zip(chosen, per):
            for i in range(n):
                rng = np.random.default_rng([cfg.seed, zlib.crc32(fam.encode()), i])
                q = builders[fam](rng, cfg, i)
                q.id, q.benchmark, q.family = f"{name}-{fam}-{i:05d}", name, fam
                questions.append(q)
                bar.update()
    assign_splits(questions, tuple(cfg.split), cfg.seed)
    return questions


def build(name: str, cfg: Benchmark, progress: bool = True) -> list[Question]:
    """The questions of declared benchmark `name`: generated, or imported from its source files
    (check them first with ImportConfig.check_files for an error naming the params field)."""
    if isinstance(cfg, ImportConfig):
        from fgpo.benchmarks import importer
        return importer.import_declared(name, cfg)
    return generate(name, cfg, progress)


def build_sample(name: str, cfg: Benchmark, n: int) -> list[Question]:
    """About `n` questions of declared benchmark `name`, built as `prepare` builds them (the
    bench's inputs): fewer generated questions, or a smaller balanced sample of a collection."""
    if isinstance(cfg, ImportConfig):
        per_class = max(1, n // 2)
        if cfg.max_per_class is not None:
            per_class = min(per_class, cfg.max_per_class)
        return build(name, replace(cfg, max_per_class=per_class))
    return generate(name, replace(cfg, n_questions=n), progress=False)


def declared_samples(params: str | Path, n: int) -> Iterator[tuple[str, list[Question]]]:
    """(name, about `n` questions) of every benchmark `params` declares, in order; an imported
    collection whose source files are absent on this machine is skipped with a message."""
    for name, cfg in load_prepare(params).benchmarks.items():
        if isinstance(cfg, ImportConfig) and not all(f.is_file() for f in cfg.files()):
            log.warning("%s: skipped, source %s not found", name, cfg.source)
            continue
        yield name, build_sample(name, cfg, n)
