"""Split assignment shared by every benchmark (generated and imported)."""

from __future__ import annotations

import numpy as np

from fgpo.question import Question


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
