"""The settings every estimator shares: the `train:` section of params.yaml less the estimators'
own sub-sections (those are added by fgpo.train.config from the registry)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fgpo.config import check_number
from fgpo.errors import InputError
from fgpo.policy.base import PolicyConfig


@dataclass
class TrainSettings:
    """The settings every estimator shares (`TrainConfig` adds each estimator's own)."""

    methods: list[str] = field(default_factory=list)
    """Estimators the `train` stage runs: names in the registry (`fgpo list-methods`);
    TrainConfig's default is every registered one, and it checks the names."""
    seeds: list[int] = field(default_factory=lambda: [0])
    """One run per seed; metrics report the mean and spread over seeds."""
    epochs: int = 8
    """Passes over the train split: every train question is visited `epochs` times by every
    method (fgpo.train.schedule). Optimiser steps follow: epochs x ceil(N / batch_size) x the
    estimator's steps per batch (FGPO 1, GRPO mu)."""
    batch_size: int = 16
    """Questions per batch (the last batch of an epoch holds the remainder)."""
    train_fraction: float = 1.0
    """Fraction of the train split's questions a run may read: a sub-table of
    ceil(fraction x N) questions drawn by the run's seed (fgpo.train.subtable; nested: for one
    seed a smaller fraction's questions are among a larger one's, and every method gets the
    same ones). The schedule stays the whole split's (the same question visits, steps and
    validation points), so a run on a sub-table passes over its questions 1/fraction times
    as often; its cost is the sub-table's cells. 1.0: the whole split."""
    learning_rate: float = 1.0e-3
    """AdamW learning rate of the LoRA adapters."""
    head_lr_mult: float = 10.0
    """The (zero-initialised) subset head learns at learning_rate * head_lr_mult."""
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1
    """Fraction of steps of linear warm-up."""
    lr_schedule: str = "cosine"
    """constant | linear | cosine (after warm-up; transformers.get_scheduler)."""
    max_grad_norm: float = 1.0
    """Global gradient-norm clip."""
    beta: float = 0.01
    """KL(pi || pi_ref) coefficient (exact for FGPO, k3 estimate for GRPO)."""
    entropy_coef: float = 0.0
    """Exact entropy bonus (FGPO only: GRPO as published has none)."""
    eps: float = 1.0e-6
    """Added to std in advantage normalisation."""
    zero_signal_group_size: int = 8
    """G of the exact zero-signal metric logged for every method (`val/zero_signal_frac`,
    `test/zero_signal_frac`): the probability that G subsets drawn from pi all get one reward,
    the quantity GRPO's group normalisation loses (the paper's G = 8). A measurement, the same
    for every method whatever G a sampled estimator trains with."""
    evals_per_epoch: int = 4
    """Validation points per epoch (epochs x this many over the run), at the same data visits
    for every method, so each has as many candidates for the selected checkpoint."""
    val_spacing: str = "even"
    """Where the validation points fall (fgpo.train.schedule): even = evenly spaced batch
    boundaries in every epoch; log = geometrically spaced in batches over the run, dense
    early where the curves move (a peak in the first quarter epoch is seen where it is)."""
    checkpoint_rule: str = "best_val"
    """Which policy a run hands to the test split: best_val = the validation point with the
    highest `val/expected_reward` (the exact expected reward under pi, the quantity both
    methods optimise; the earliest among ties; the untrained starting policy is a candidate
    too); last = the last step. The same rule for every method."""
    checkpoint_every: int = 20
    """Checkpoint every N steps; a rerun resumes from the last one."""
    threads: int = 2
    """torch CPU threads of one run (a result can differ in the last bits with another
    count: it is part of a run's configuration)."""
    workers: int = 1
    """Processes that train a setting's (method, seed) runs side by side, forked after the
    shared frozen layers are computed once (CPU; on a GPU the runs go one after another).
    Each run is the same whichever worker trains it, so this changes no result and is left
    out of a run's key; workers x threads should not exceed the cores. > 1 needs threads 1
    (a process forked after multi-threaded torch work can hang in OpenMP)."""
    device: str = "auto"
    """auto | cpu | cuda | cuda:N: where the policy, its cached frozen layers, the batches and
    the estimators' tensors live. auto = cuda when torch sees a GPU, else cpu. Sampling draws
    stay on the CPU generator, so a seed gives the same data order and draws on any device."""
    allow_degenerate_table: bool = False
    """Train (and sweep) even on a reward table `table-stats` flags as degenerate (mostly
    constant rows, many unparseable answers, or no subset beating no tools beyond noise).
    Off by default: such a table teaches noise, and a result trained on it would look like a
    finding. `fgpo train --force` sets it for one run."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)

    def __post_init__(self) -> None:
        """Validate every bounded setting before any work (model loading, data, tracking)."""
        if not isinstance(self.methods, list) or not self.methods:
            raise InputError(f"methods must be a non-empty list, got {self.methods!r}; list one "
                             f"or more estimators (`fgpo list-methods`)", field="train.methods")
        if len(set(self.methods)) != len(self.methods):
            raise InputError(f"methods must be unique, got {self.methods}; list each method "
                             f"once", field="train.methods")
        if not isinstance(self.seeds, list) or not self.seeds:
            raise InputError(f"seeds must be a non-empty list of integers, got {self.seeds!r}; "
                             f"e.g. seeds: [0, 1, 2]", field="train.seeds")
        for s in self.seeds:
            check_number(s, "train.seeds", "seeds must be integers, e.g. [0, 1, 2]",
                         integer=True)
        if len(set(self.seeds)) != len(self.seeds):
            dup = sorted({s for s in self.seeds if self.seeds.count(s) > 1})
            raise InputError(f"seeds must be unique, got {self.seeds} ({dup} repeated: a "
                             f"repeated seed reruns the same run); list each seed once",
                             field="train.seeds")
        check_number(self.epochs, "train.epochs", "set the passes over the train split, "
                     "e.g. 8", ge=1, integer=True)
        check_number(self.batch_size, "train.batch_size", "set the questions per step, e.g. "
                     "16 (at most the train split's size)", ge=1, integer=True)
        fraction_fix = "set the fraction of the train questions a run reads, in (0, 1], e.g. 0.25"
        check_number(self.train_fraction, "train.train_fraction", fraction_fix, gt=0)
        if self.train_fraction > 1:
            raise InputError(f"train_fraction must be at most 1, got {self.train_fraction}; "
                             f"{fraction_fix} (1 = the whole split)", field="train.train_fraction")
        check_number(self.learning_rate, "train.learning_rate", "set a positive learning "
                     "rate, e.g. 1.0e-3 (a negative one ascends the loss)", gt=0)
        check_number(self.head_lr_mult, "train.head_lr_mult", "set a positive multiplier, e.g. "
                     "10 (1 = the head learns at learning_rate)", gt=0)
        check_number(self.weight_decay, "train.weight_decay", "set 0 for no weight decay, or "
                     "a positive value, e.g. 0.01", ge=0)
        check_number(self.warmup_ratio, "train.warmup_ratio", "set the fraction of steps of "
                     "warm-up in [0, 1), e.g. 0.1 (0 = no warm-up)", ge=0, lt=1)
        if self.lr_schedule not in ("constant", "linear", "cosine"):
            raise InputError(f"lr_schedule must be constant, linear or cosine, got "
                             f"{self.lr_schedule!r}", field="train.lr_schedule")
        check_number(self.max_grad_norm, "train.max_grad_norm", "set a positive clip norm, "
                     "e.g. 1.0 (a large value effectively turns clipping off)", gt=0)
        check_number(self.beta, "train.beta", "set 0 to drop the KL term, or a positive "
                     "coefficient, e.g. 0.01", ge=0)
        check_number(self.entropy_coef, "train.entropy_coef", "set 0 for no entropy bonus, or "
                     "a positive coefficient, e.g. 0.01", ge=0)
        check_number(self.eps, "train.eps", "set a small positive value, e.g. 1.0e-6", gt=0)
        check_number(self.evals_per_epoch, "train.evals_per_epoch", "validate N >= 1 times "
                     "per epoch, e.g. 4 (1 = at the end of each epoch)", ge=1, integer=True)
        if self.checkpoint_rule not in ("best_val", "last"):
            raise InputError(f"checkpoint_rule must be best_val or last, got "
                             f"{self.checkpoint_rule!r}", field="train.checkpoint_rule")
        check_number(self.checkpoint_every, "train.checkpoint_every", "checkpoint every "
                     "N >= 1 optimiser steps (and at the end); a large value checkpoints only "
                     "at the end", ge=1, integer=True)
        check_number(self.threads, "train.threads", "set the torch CPU threads, e.g. 2",
                     ge=1, integer=True)
        check_number(self.workers, "train.workers", "set the processes per setting, e.g. 2 "
                     "(1 = every run in the stage's own process)", ge=1, integer=True)
        if self.workers > 1 and self.threads != 1:
            raise InputError(f"workers {self.workers} needs threads 1 (got {self.threads}): "
                             "each worker is a process forked from one that must not have run "
                             "multi-threaded torch; set train.threads: 1 and as many workers "
                             "as cores, or workers: 1", field="train.workers")
        if self.val_spacing not in ("even", "log"):
            raise InputError(f"val_spacing must be even or log, got {self.val_spacing!r}",
                             field="train.val_spacing")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise InputError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}",
                             field="train.device")
        check_number(self.zero_signal_group_size, "train.zero_signal_group_size", "the "
                     "zero-signal metric needs a group of at least two, e.g. 8", ge=2,
                     integer=True)


def resolve_device(name: str) -> torch.device:
    """`train.device` -> a torch device; cuda where torch sees none is refused, saying why."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        build = torch.__version__ + ("" if torch.version.cuda else ", a CPU-only build")
        raise InputError(f"train.device is {name!r} but torch {build} sees no CUDA GPU; set "
                         f"train.device: cpu (or auto, which picks cuda only when present)",
                         field="train.device")
    return torch.device(name)
