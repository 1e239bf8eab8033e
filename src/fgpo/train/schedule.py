"""The declared training schedule, the same data visits for every estimator.

A run is `epochs` passes over the train split in batches of `batch_size` questions (the last
batch of an epoch holds the remainder), so every train question is visited exactly `epochs`
times whatever the method. An estimator takes `steps_per_batch` optimiser steps on each batch it
draws (FGPO 1; GRPO mu, its inner epochs on one rollout batch), so the optimiser steps differ
between methods while the questions they learn from do not. Validation happens at
`evals_per_epoch` evenly spaced batch boundaries per epoch, at the same data visits for every
method, so best-checkpoint selection has the same number of candidates for each. Two spacings:
`even` (evenly spaced batch boundaries within each epoch) and `log` (the same number of points,
geometrically spaced in batches over the whole run, so they are dense where the curves move,
early, and sparse where they have flattened: an early peak is seen where it happens, not at the
first quarter epoch).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

import numpy as np

SPACINGS = ("even", "log")


@dataclass(frozen=True)
class Schedule:
    """One run's schedule, derived from the train split's size and the shared settings."""

    n_train: int
    batch_size: int
    epochs: int
    steps_per_batch: int
    evals_per_epoch: int
    spacing: str = "even"

    @property
    def batches_per_epoch(self) -> int:
        return ceil(self.n_train / self.batch_size)

    @property
    def total_batches(self) -> int:
        return self.epochs * self.batches_per_epoch

    @property
    def total_steps(self) -> int:
        """Optimiser steps of the whole run (the learning-rate schedule spans them)."""
        return self.total_batches * self.steps_per_batch

    @property
    def question_visits(self) -> int:
        """Train questions drawn over the run: epochs x N, the same for every method."""
        return self.epochs * self.n_train

    def validation_batches(self) -> list[int]:
        """Batches (1-based, counted over the run) after which the policy is validated, the
        last one included: `even`, evenly spaced within every epoch; `log`, epochs x
        evals_per_epoch batch counts geometrically spaced from 1 to the last (rounded, each at
        least one past the one before, so the early points stay distinct)."""
        bpe, total = self.batches_per_epoch, self.total_batches
        if self.spacing == "log":
            points: list[int] = []
            for x in np.geomspace(1, total, min(self.epochs * self.evals_per_epoch, total)):
                points.append(min(total, max(int(np.rint(x)), points[-1] + 1 if points else 1)))
            return sorted(set(points) | {total})
        per = min(self.evals_per_epoch, bpe)
        return sorted({e * bpe + round(k * bpe / per)
                       for e in range(self.epochs) for k in range(1, per + 1)})

    def validation_steps(self) -> list[int]:
        """Optimiser steps after which the policy is validated (step 0, the starting policy,
        is validated too): the last step of each validation batch (`validation_batches`)."""
        return [b * self.steps_per_batch for b in self.validation_batches()]
