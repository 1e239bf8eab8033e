"""A run's sub-table (`train.train_fraction`): the train questions it may read.

FGPO pays a question's 2^K cells when it first reads that question, so a smaller train set is
how it spends a smaller budget. The questions are drawn by the run's seed alone (not by the
method), from a stream of their own, so that

- every method at one (fraction, seed) reads the same questions (paired comparisons),
- for one seed the fractions nest: a smaller fraction's questions are a prefix of one seeded
  order of the split, so they are among any larger fraction's,
- fraction 1.0 is the whole split in its own order (a run is what it was without the option).
"""

from __future__ import annotations

import math

import numpy as np

from fgpo.errors import InputError

STREAM = 0x5AB7AB1E
"""Mixed into the seed: the sub-table's draw is independent of the data order and the
estimator's draws, which are seeded by the run's seed too."""


def sub_table_size(n_train: int, fraction: float) -> int:
    """ceil(fraction x N) questions (0.1 x 720 is 72, not the 73 that float rounding gives)."""
    return n_train if fraction >= 1.0 else max(1, math.ceil(round(fraction * n_train, 9)))


def sub_table_rows(train_rows: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """The first `sub_table_size` rows of one seeded order of `train_rows`, in table order (the
    data order over them is drawn as over any split); all rows, as given, when fraction is 1."""
    if fraction >= 1.0:
        return train_rows
    order = np.random.default_rng([seed, STREAM]).permutation(len(train_rows))
    return np.sort(train_rows[order[:sub_table_size(len(train_rows), fraction)]])


def check_sub_table(n_train: int, fraction: float, batch_size: int) -> None:
    """Refuse a sub-table smaller than one batch (each batch would repeat its questions)."""
    n = sub_table_size(n_train, fraction)
    if n < batch_size:
        raise InputError(f"train_fraction {fraction} keeps {n} of the {n_train} train "
                         f"questions, fewer than batch_size {batch_size}; raise "
                         f"train.train_fraction to at least {batch_size / n_train:.3g} or lower "
                         f"train.batch_size", field="train.train_fraction")
