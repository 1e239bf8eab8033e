"""`train:` section of params.yaml: one config for both estimators, so that FGPO and GRPO
differ in nothing but the estimator (same policy, optimiser, schedule, steps, table)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fgpo.errors import InputError
from fgpo.policy.base import PolicyConfig

METHODS = ("fgpo", "grpo")


@dataclass
class FGPOConfig:
    normalize_std: bool = False
    """Divide the exact advantage by the exact std of r under pi. Default off: the exact
    advantage already has the right scale, and std normalisation re-weights questions by
    1/spread, up-weighting near-constant rows (the bias Dr. GRPO, Liu et al. 2025, removes)."""


@dataclass
class GRPOConfig:
    group_size: int = 8
    """G, subsets sampled per question (DeepSeekMath GRPO; the paper's G)."""
    clip_eps: float = 0.2
    """PPO clip range on the subset-level ratio (Schulman et al. 2017)."""
    inner_epochs: int = 2
    """mu: optimiser steps per sampled batch (the PPO/GRPO inner loop)."""
    temperature: float = 1.0
    """Sampling temperature; pi_theta and pi_old are compared at the same temperature."""


@dataclass
class TrainConfig:
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    """Estimators the `train` stage runs: fgpo | grpo."""
    seeds: list[int] = field(default_factory=lambda: [0])
    """One run per seed; metrics report the mean and spread over seeds."""
    steps: int = 60
    """Optimiser steps (equal for both methods; GRPO samples a new batch every mu steps)."""
    batch_size: int = 16
    """Questions per optimiser step."""
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
    eval_every: int = 20
    """Validation every N steps (and at the end)."""
    checkpoint_every: int = 20
    """Checkpoint every N steps; a rerun resumes from the last one."""
    threads: int = 2
    """torch CPU threads."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    fgpo: FGPOConfig = field(default_factory=FGPOConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)

    def __post_init__(self) -> None:
        bad = [m for m in self.methods if m not in METHODS]
        if bad:
            raise InputError(f"unknown method(s) {bad}; choose from {list(METHODS)}",
                             file="params.yaml", field="train.methods")
        if self.steps < 1 or self.batch_size < 1:
            raise InputError("steps and batch_size must be >= 1", file="params.yaml",
                             field="train.steps")
        if self.lr_schedule not in ("constant", "linear", "cosine"):
            raise InputError("lr_schedule must be constant, linear or cosine",
                             file="params.yaml", field="train.lr_schedule")
        if self.grpo.group_size < 2:
            raise InputError("GRPO needs group_size >= 2 (a group of one has no std)",
                             file="params.yaml", field="train.grpo.group_size")
        if self.grpo.inner_epochs < 1 or self.grpo.temperature <= 0:
            raise InputError("inner_epochs >= 1 and temperature > 0 required",
                             file="params.yaml", field="train.grpo")
        if not 0 <= self.warmup_ratio < 1:
            raise InputError("warmup_ratio must be in [0, 1)", file="params.yaml",
                             field="train.warmup_ratio")
