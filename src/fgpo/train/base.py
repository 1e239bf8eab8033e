"""What the training loop asks of an estimator (FGPO, GRPO, any later one).

Per optimiser step the loop calls `collect` (which questions, and any samples the loss needs;
a new batch every `steps_per_batch` steps), then `loss`; it backpropagates, clips and steps. An estimator counts what it paid for (reward
evaluations, unique table cells) and keeps whatever must survive a checkpoint in `state_dict`.
The loop owns everything else: data order, optimiser, schedule, evaluation, checkpoints, logs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch

if TYPE_CHECKING:
    from fgpo.policy.base import Policy
    from fgpo.train.settings import TrainSettings

NextBatch = Callable[[], torch.Tensor]   # the loop's data order: the next [B] train rows
RefLogp = Callable[[torch.Tensor], torch.Tensor]  # rows [B] -> log pi_ref [B, 2^K]


@dataclass
class Batch:
    """What an estimator collected for one optimiser step; subclasses add their samples."""

    idx: torch.Tensor  # [B] rows of the reward table


class Estimator(Protocol):
    """Built once per run as `Estimator(cfg, own, rewards [N, 2^K], n_train, generator)`: the
    shared settings, its own `train.<name>:` settings, the table's rewards, the train split's
    size, and its own randomness (e.g. GRPO's draws), which the loop checkpoints."""

    name: ClassVar[str]
    """Its name in `train.methods`, the registry, metrics paths and MLflow tags."""
    Config: ClassVar[type]
    """Its settings: a dataclass loaded from `train.<name>:` (validated in __post_init__)."""
    tuned_from: ClassVar[str | None]
    """The estimator whose tuned values (tune/tuned.yaml) it starts from when it has none of
    its own, e.g. "grpo" for a GRPO variant; None: params.yaml's values."""
    steps_per_batch: int
    """Optimiser steps it takes on each batch of questions it draws (1, or e.g. GRPO's mu):
    the loop's schedule (fgpo.train.schedule) gives every method the same question visits."""

    def __init__(self, cfg: TrainSettings, own: Any, rewards: torch.Tensor, n_train: int,
                 generator: torch.Generator) -> None: ...

    def collect(self, step: int, policy: Policy, next_batch: NextBatch) -> Batch:
        """The questions of optimiser step `step` (0-based) and whatever the loss needs."""

    def loss(self, policy: Policy, batch: Batch, ref_logp: RefLogp
             ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """(loss, log pi_theta [B, 2^K] of batch.idx, stats with 'zero_signal_frac')."""

    @property
    def reward_evals(self) -> int:
        """Reward lookups so far, repeats counted (each one a reasoner call without a cache)."""

    @property
    def reward_evals_unique(self) -> int:
        """Distinct (question, subset) cells among them: the reasoner calls with a cache, the
        cost every method is compared on."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


ESTIMATORS: dict[str, type[Estimator]] = {}
"""name -> estimator class, filled by `register` as each estimator module is imported; read it
from fgpo.train.estimators, which imports every estimator module (one line each)."""


def register(cls: type) -> type:
    """Class decorator: add an estimator to the registry under its `name`."""
    if cls.name in ESTIMATORS:
        raise RuntimeError(f"estimator name {cls.name!r} registered twice")
    ESTIMATORS[cls.name] = cls
    return cls
