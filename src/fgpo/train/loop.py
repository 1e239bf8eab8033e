"""The training loop shared by every estimator (fgpo.train.estimators): the loop owns the
policy, data order, optimiser, schedule, clipping, evaluation, logging and checkpoints; the
estimator only collects a batch, computes its loss and counts what it paid for."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm
from transformers import get_scheduler

from fgpo.errors import DivergedError, InputError
from fgpo.policy import build_policy
from fgpo.policy.base import Policy
from fgpo.rewards.table import RewardTable, RunData
from fgpo.train.base import Batch, Estimator, NextBatch, RefLogp
from fgpo.train.config import TrainConfig
from fgpo.train.settings import resolve_device
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.exact import entropy, expectation, kl_divergence
from fgpo.train.metrics import policy_metrics, predict
from fgpo.train.schedule import Schedule
from fgpo.train.subtable import check_sub_table, sub_table_rows

SELECT_BY = "val/expected_reward"  # the checkpoint rule's quantity (train.checkpoint_rule)


@dataclass
class RunResult:
    """A trained run: its final validation and budget numbers, its per-step log and its policy
    (the test split is evaluated afterwards, by fgpo.evaluate, never here)."""

    final: dict[str, float]
    history: list[dict[str, float]]
    policy: Policy | None = field(repr=False, default=None)
    selections: pd.DataFrame | None = field(repr=False, default=None)  # set by the test evaluation
    run_id: str | None = None  # its MLflow run, when tracked
    model_uri: str | None = None  # its policy logged as an MLflow model, when tracked
    val_states: dict[int, dict[str, torch.Tensor]] = field(repr=False, default_factory=dict)
    """step -> trainable weights at each validation point (train_run's `keep_val_states`):
    what fgpo.evaluate tests after training, for a budget frontier."""
    points: pd.DataFrame | None = field(repr=False, default=None)
    """One row per validation point, tested after training (fgpo.evaluate's
    `evaluate_validation_points`; set by the run's owner, like `selections`)."""
    point_choices: pd.DataFrame | None = field(repr=False, default=None)
    """The greedy choice per test question at each validation point (`step` column)."""


class MetricsLog(Protocol):
    """Where the loop logs each step's metrics: an MLflow run (fgpo.tracking.Tracker), a sweep
    trial (fgpo.sweep.study.TrialTracker) or anything with these members."""

    run_id: str | None

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...

    def flush(self) -> None:
        """Write what log_metrics buffered (called before each checkpoint)."""


@dataclass
class LoopState:
    """What a checkpoint restores besides the weights, optimiser, schedule, generators and the
    estimator's own state."""

    step: int = 0                                   # optimiser steps taken
    perm: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.long))
    pos: int = 0                                    # next position in this epoch's `perm`
    seen: set[int] = field(default_factory=set)     # train rows drawn so far
    visits: int = 0                                 # train questions drawn, repeats counted
    best_step: int = -1                             # the selected checkpoint so far (best_val)
    best_value: float = float("-inf")               # its val/expected_reward
    best_state: dict[str, torch.Tensor] | None = None  # its trainable weights
    history: list[dict[str, float]] = field(default_factory=list)
    run_id: str | None = None                       # the tracker's run, for a resume
    val_states: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)  # if asked


@dataclass
class Step:
    """One optimiser step's outcome, as the log reads it."""

    batch: Batch
    loss: torch.Tensor
    logp: torch.Tensor  # [B, 2^K] log pi_theta of batch.idx before the update
    stats: dict[str, torch.Tensor]
    grad_norm: torch.Tensor


def config_hash(cfg: TrainConfig, method: str, seed: int, table_meta: dict) -> str:
    """A run's identity: its config, method, seed and table. Left out: `workers`, which
    changes no result, and the `seeds` list, of which the run trains only `seed` (so the budget
    frontier's seeds read back the train stage's runs of the same seeds)."""
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("workers", "seeds")}
    blob = json.dumps([settings, method, seed, table_meta.get("fingerprint"),
                       table_meta.get("reasoner"), table_meta.get("benchmark")], sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _trainable_state(policy: Policy) -> dict[str, torch.Tensor]:
    names = {n for n, p in policy.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in policy.state_dict().items() if k in names}


def reference_logp(kind: str, policy: Policy, n_sub: int) -> RefLogp:
    """log pi_ref over all subsets: uniform, or a frozen copy of `policy` as it is now (on the
    policy's device)."""
    if kind == "initial":
        reference = copy.deepcopy(policy).requires_grad_(False)
        def frozen(idx: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return reference.log_probs(idx)
        return frozen
    uniform = torch.full((n_sub,), -float(np.log(n_sub)), device=policy.device)
    return lambda idx: uniform.expand(len(idx), n_sub)


def build_optimizer(cfg: TrainConfig, policy: Policy, total_steps: int
                    ) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over the LoRA adapters and the (faster) head, and the warm-up + decay schedule
    over the run's `total_steps` optimiser steps."""
    head = [p for n, p in policy.named_parameters() if p.requires_grad and n.startswith("head.")]
    lora = [p for n, p in policy.named_parameters() if p.requires_grad and not n.startswith("head.")]
    optimizer = torch.optim.AdamW(
        [{"params": lora, "lr": cfg.learning_rate},
         {"params": head, "lr": cfg.learning_rate * cfg.head_lr_mult}],
        weight_decay=cfg.weight_decay)
    scheduler = get_scheduler(cfg.lr_schedule, optimizer,
                              num_warmup_steps=int(cfg.warmup_ratio * total_steps),
                              num_training_steps=total_steps)
    return optimizer, scheduler


def next_batch(state: LoopState, train_idx: np.ndarray, batch_size: int,
               generator: torch.Generator, full: bool = False) -> torch.Tensor:
    """The next `batch_size` train rows of this epoch's permutation, the remainder at the end
    of an epoch, then a fresh permutation: every train row once per epoch. `full` (a
    sub-table run): an epoch's last batch is filled from the next permutation, so every batch
    holds `batch_size` questions and the run visits as many questions as the whole split's."""
    def permute() -> None:
        state.perm = torch.as_tensor(train_idx)[torch.randperm(len(train_idx),
                                                               generator=generator)]
        state.pos = 0
    if state.pos >= len(state.perm):
        permute()
    batch = state.perm[state.pos:state.pos + batch_size]
    state.pos += len(batch)
    if full and len(batch) < batch_size:
        rest = batch_size - len(batch)
        permute()
        batch = torch.cat([batch, state.perm[:rest]])
        state.pos = rest
    state.visits += len(batch)
    state.seen.update(batch.tolist())  # rows a lazily built table would have paid for
    return batch


def optimizer_step(estimator: Estimator, policy: Policy, optimizer: torch.optim.Optimizer,
                   scheduler: Any, step: int, batches: NextBatch, ref_logp: RefLogp,
                   max_grad_norm: float) -> Step:
    """Optimiser step `step` (0-based): the estimator's batch and loss, backward, clip, update."""
    batch = estimator.collect(step, policy, batches)
    loss, logp, stats = estimator.loss(policy, batch, ref_logp)
    optimizer.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), max_grad_norm)
    if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):  # never step on a NaN
        raise DivergedError(f"step {step + 1}: the loss is {loss.item()} and the gradient norm "
                            f"{grad_norm.item()}; the weights were left as they were. Lower "
                            "train.learning_rate (or head_lr_mult), or check the reward table "
                            "with `fgpo table-stats`")
    optimizer.step()
    scheduler.step()
    return Step(batch, loss, logp, stats, grad_norm)


@torch.no_grad()
def exact_metrics(logp: torch.Tensor, ref_logp: torch.Tensor, rewards: torch.Tensor
                  ) -> dict[str, float]:
    """Expected reward, KL and entropy of pi on the batch, exact over all subsets (any method)."""
    lp = logp.detach()
    p = lp.exp()
    return {"train/expected_reward": float(expectation(p, rewards).mean()),
            "train/kl": float(kl_divergence(p, lp, ref_logp).mean()),
            "train/entropy": float(entropy(p, lp).mean())}


def validate(policy: Policy, table: RewardTable, idx: np.ndarray, group_size: int
             ) -> dict[str, float]:
    if not len(idx):
        return {}
    return policy_metrics(predict(policy, idx), table.correct[idx], table.reward[idx],
                          table.n_tools, group_size)


def keep_if_best(state: LoopState, step: int, val: dict[str, float], policy: Policy,
                 keep_all: bool = False) -> None:
    """The best_val rule: remember this validation point's weights when its expected reward
    beats every earlier one (strictly: the earliest of equal points stays); `keep_all`: every
    validation point's weights too."""
    if keep_all and val:
        state.val_states[step] = _trainable_state(policy)
    value = val.get(SELECT_BY.removeprefix("val/"))
    if value is not None and value > state.best_value:
        state.best_step, state.best_value = step, value
        state.best_state = _trainable_state(policy)


def save_checkpoint(path: Path, chash: str, policy: Policy, optimizer: torch.optim.Optimizer,
                    scheduler: Any, generators: dict[str, torch.Generator], state: LoopState,
                    estimator: Estimator) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # never another process's file
    torch.save({"config_hash": chash, "policy": _trainable_state(policy),
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                **{k: g.get_state() for k, g in generators.items()},
                "state": vars(state), "estimator": estimator.state_dict()}, tmp)
    os.replace(tmp, path)  # a kill mid-write leaves the previous checkpoint whole


def load_checkpoint(path: Path | None, chash: str, policy: Policy,
                    optimizer: torch.optim.Optimizer, scheduler: Any,
                    generators: dict[str, torch.Generator], estimator: Estimator
                    ) -> LoopState | None:
    """Restore everything from `path` when it holds a run of this exact config; else None."""
    if path is None or not path.exists():
        return None
    ck = torch.load(path, weights_only=False, map_location=policy.device)
    if ck["config_hash"] != chash:
        return None
    policy.load_state_dict(ck["policy"], strict=False)
    optimizer.load_state_dict(ck["optimizer"])
    scheduler.load_state_dict(ck["scheduler"])
    for k, g in generators.items():
        g.set_state(ck[k].cpu())  # generators stay on the CPU (config.device)
    estimator.load_state_dict(ck["estimator"])
    state = LoopState(**ck["state"])
    state.perm = state.perm.cpu()
    return state


def check_run_data(cfg: TrainConfig, data: RunData) -> None:
    """Refuse settings that only the data can rule out (a batch larger than the train split
    would otherwise be silently capped at the split's size)."""
    n_train = len(data.rows("train"))
    if cfg.batch_size > n_train:
        raise InputError(f"batch_size {cfg.batch_size} exceeds the train split "
                         f"({n_train} questions); set train.batch_size to at most {n_train}, "
                         f"or give the benchmark more train questions",
                         field="train.batch_size")
    check_sub_table(n_train, cfg.train_fraction, cfg.batch_size)


def train_run(method: str, cfg: TrainConfig, data: RunData, seed: int,
              tracker: MetricsLog | None = None, checkpoint: Path | None = None,
              progress: bool = True, keep_val_states: bool = False) -> RunResult:
    """Train one policy with estimator `method` (a key of ESTIMATORS) for cfg.epochs epochs
    and return it at the checkpoint `cfg.checkpoint_rule` selects (`keep_val_states`: with
    the weights of every validation point besides, changing nothing else)."""
    if method not in ESTIMATORS:
        raise InputError(f"unknown method {method!r}; choose from {list(ESTIMATORS)}",
                         field="train.methods")
    # ---- setup: policy, table tensors, reference, optimiser, estimator ------------------------
    check_run_data(cfg, data)  # before the (slow) policy is built
    device = resolve_device(cfg.device)
    torch.set_num_threads(cfg.threads)
    # Subnormal floats (a collapsed policy's probabilities, their gradients) take a slow
    # microcode path on x86: a GRPO run that collapses slowed from 0.06 to 0.7 s per step.
    # Flushed to zero they change a value by < 1.2e-38, and the run keeps its speed.
    torch.set_flush_denormal(True)
    policy = build_policy(cfg.policy, len(data.tool_names), data.tool_names, seed).to(device)
    policy.prepare(data.questions)  # tokens (and the frozen layers' states) once per process
    policy.eval()  # dropout off: seeded CPU runs reproduce bit for bit; gradients still flow
    table = data.table
    rewards = torch.tensor(table.reward, dtype=torch.float32, device=device)
    n_sub = rewards.shape[1]
    split_idx, val_idx = data.rows("train"), data.rows("val")  # test: fgpo.evaluate, after
    train_idx = sub_table_rows(split_idx, cfg.train_fraction, seed)  # the rows it may read
    ref_logp = reference_logp(cfg.policy.reference, policy, n_sub)
    generators = {"data_gen": torch.Generator().manual_seed(seed),       # data order
                  "sample_gen": torch.Generator().manual_seed(seed + 1)}  # the estimator's draws
    estimator = ESTIMATORS[method](cfg, getattr(cfg, method), rewards, len(train_idx),
                                   generators["sample_gen"])
    # the whole split's schedule, on a sub-table too: the same visits and validation points
    schedule = Schedule(len(split_idx), cfg.batch_size, cfg.epochs, estimator.steps_per_batch,
                        cfg.evals_per_epoch, cfg.val_spacing)
    total, val_steps = schedule.total_steps, set(schedule.validation_steps())
    optimizer, scheduler = build_optimizer(cfg, policy, total)
    G = cfg.zero_signal_group_size  # of the exact zero-signal metric, the same for every method
    table_cells_train = len(train_idx) * n_sub
    chash = config_hash(cfg, method, seed, table.meta)

    # ---- resume from the last checkpoint, if any ----------------------------------------------
    state = (load_checkpoint(checkpoint, chash, policy, optimizer, scheduler, generators,
                             estimator)
             or LoopState(run_id=getattr(tracker, "run_id", None)))
    batches = partial(next_batch, state, train_idx, cfg.batch_size, generators["data_gen"],
                      full=len(train_idx) < len(split_idx))

    def log(metrics: dict[str, float], step: int) -> None:
        state.history.append({"step": step, **metrics})
        if tracker is not None:
            tracker.log_metrics(metrics, step)

    if state.step == 0 and not state.history:  # the uniform starting point of every curve
        val = validate(policy, table, val_idx, G)
        keep_if_best(state, 0, val, policy, keep_val_states)
        log({**{f"val/{k}": v for k, v in val.items()},
             "train/reward_evals": estimator.reward_evals,
             "train/reward_evals_unique": estimator.reward_evals_unique,
             "train/questions_seen": 0,
             "train/question_visits": 0, "train/epoch": 0.0}, 0)

    # ---- the loop: one optimiser step per iteration ---------------------------------------------
    bar = tqdm(total=total, initial=state.step, desc=f"{method} seed {seed}",
               unit="step", disable=not progress)
    while state.step < total:
        out = optimizer_step(estimator, policy, optimizer, scheduler, state.step, batches,
                             ref_logp, cfg.max_grad_norm)
        state.step = step = state.step + 1

        # ---- logging: exact quantities from the full distribution, for every method ----------
        idx = out.batch.idx
        metrics = {"train/loss": out.loss.item(),
                   **exact_metrics(out.logp, ref_logp(idx), rewards[idx]),
                   "train/zero_signal_frac": float(out.stats["zero_signal_frac"]),
                   "train/reward_evals": estimator.reward_evals,
                   "train/reward_evals_unique": estimator.reward_evals_unique,
                   "train/questions_seen": len(state.seen),
                   "train/question_visits": state.visits,
                   "train/epoch": state.visits / len(split_idx),  # the split's epochs
                   "train/lr": scheduler.get_last_lr()[0], "train/grad_norm": float(out.grad_norm)}
        if step in val_steps:
            val = validate(policy, table, val_idx, G)
            keep_if_best(state, step, val, policy, keep_val_states)
            metrics.update({f"val/{k}": v for k, v in val.items()})
        log(metrics, step)
        bar.update()
        bar.set_postfix(loss=f"{out.loss.item():.3f}",
                        zero=f"{metrics['train/zero_signal_frac']:.2f}")
        if checkpoint is not None and (step % cfg.checkpoint_every == 0 or step == total):
            if tracker is not None:
                tracker.flush()  # every point up to the checkpoint is stored before it
            save_checkpoint(checkpoint, chash, policy, optimizer, scheduler, generators, state,
                            estimator)
    bar.close()

    # ---- the selected checkpoint, its validation numbers, and what the whole run spent --------
    last = state.history[-1]
    if cfg.checkpoint_rule == "best_val" and state.best_state is not None:
        policy.load_state_dict(state.best_state, strict=False)
        chosen = next(h for h in state.history if h["step"] == state.best_step)
    else:
        chosen = last
    chosen["checkpoint/selected"] = 1.0  # marks the tested policy's point on the curve
    final = {**{k: v for k, v in chosen.items() if k.startswith("val/")},
             "checkpoint/step": chosen["step"],
             "checkpoint/epoch": chosen["train/epoch"],
             "checkpoint/reward_evals": chosen["train/reward_evals"],
             "budget/reward_evals": last["train/reward_evals"],
             "budget/reward_evals_unique": last["train/reward_evals_unique"],
             "budget/questions_seen": last["train/questions_seen"],
             "budget/question_visits": last["train/question_visits"],
             "budget/table_cells": int(table.reward.size),
             "budget/table_cells_train": table_cells_train,
             "budget/optimizer_steps": total}
    return RunResult(final=final, history=state.history, policy=policy,
                     val_states=state.val_states)
