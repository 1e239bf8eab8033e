"""Benchmarks: seeded, offline question sets with verifiable answers, plus a real-data importer.

Each benchmark module defines FAMILIES: name -> builder(rng, cfg, i) -> Question (id and split
are filled in here). Question i of family f draws from its own RNG stream seeded by
(seed, crc32(f), i), so families are independent and growing n keeps earlier questions.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable

import numpy as np
from tqdm import tqdm

from fgpo.benchmarks.base import assign_splits
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.errors import InputError
from fgpo.question import Question

Builder = Callable[[np.random.Generator, BenchmarkConfig, int], Question]


BENCHMARKS = ("genomeqa", "seqcalc", "variant")


def families(name: str) -> dict[str, Builder]:
    """The family builders of benchmark `name` (its module's FAMILIES)."""
    if name not in BENCHMARKS:
        raise InputError(f"unknown benchmark {name!r}; known: {list(BENCHMARKS)}",
                         field="benchmark")
    return importlib.import_module(f"fgpo.benchmarks.{name}").FAMILIES


def evidence(name: str) -> dict[str, list[str]]:
    """Family -> the tools that carry its evidence (documentation and README table)."""
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
