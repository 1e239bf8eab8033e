"""The training loop shared by FGPO and GRPO. Everything but the estimator step is common:
policy, data order, optimiser, schedule, clipping, evaluation, logging and checkpoints."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm
from transformers import get_scheduler

from fgpo.benchmarks.base import Question
from fgpo.errors import InputError
from fgpo.evaluate.metrics import policy_metrics, predict
from fgpo.policy.base import Policy, build_policy
from fgpo.rewards.table import RewardTable
from fgpo.train.config import TrainConfig
from fgpo.train.fgpo import fgpo_loss
from fgpo.train.grpo import grpo_loss, sample_groups


@dataclass
class RunData:
    """Questions aligned row for row with the reward table."""

    questions: list[Question]
    table: RewardTable
    tool_names: list[str]

    def split(self, name: str) -> np.ndarray:
        return np.flatnonzero(self.table.splits == name)


@dataclass
class RunResult:
    final: dict[str, float]
    history: list[dict[str, float]]
    selections: pd.DataFrame
    policy: Policy = field(repr=False)


class Tracker:
    """What the loop logs to (fgpo.tracking.Tracker or anything with these methods)."""

    run_id: str | None = None

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...


def config_hash(cfg: TrainConfig, method: str, seed: int, table_meta: dict) -> str:
    blob = json.dumps([asdict(cfg), method, seed, table_meta.get("fingerprint"),
                       table_meta.get("reasoner"), table_meta.get("benchmark")], sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _trainable_state(policy: Policy) -> dict[str, torch.Tensor]:
    names = {n for n, p in policy.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in policy.state_dict().items() if k in names}


def check_run_data(cfg: TrainConfig, data: RunData) -> None:
    """Refuse settings that only the data can rule out (a batch larger than the train split
    would otherwise be silently capped at the split's size)."""
    n_train = len(data.split("train"))
    if cfg.batch_size > n_train:
        raise InputError(f"batch_size {cfg.batch_size} exceeds the train split "
                         f"({n_train} questions); set train.batch_size to at most {n_train}, "
                         f"or give the benchmark more train questions",
                         field="train.batch_size")


def train_run(method: str, cfg: TrainConfig, data: RunData, seed: int,
              tracker: Tracker | None = None, checkpoint: Path | None = None,
              progress: bool = True) -> RunResult:
    """Train one policy with `method` ('fgpo' | 'grpo') for cfg.steps optimiser steps."""
    # ---- setup: policy, table tensors, reference, optimiser --------------------------------
    check_run_data(cfg, data)  # before the (slow) policy is built
    torch.set_num_threads(cfg.threads)
    policy = build_policy(cfg.policy, len(data.tool_names), data.tool_names, seed)
    policy.prepare(data.questions)
    policy.eval()  # dropout off: seeded CPU runs reproduce bit for bit; gradients still flow
    table = data.table
    rewards = torch.tensor(table.reward, dtype=torch.float32)
    n_sub = rewards.shape[1]
    train_idx, val_idx, test_idx = data.split("train"), data.split("val"), data.split("test")
    if cfg.policy.reference == "initial":
        reference = copy.deepcopy(policy).requires_grad_(False)
        def ref_logp(idx: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return reference.log_probs(idx)
    else:
        uniform = torch.full((n_sub,), -float(np.log(n_sub)))
        def ref_logp(idx: torch.Tensor) -> torch.Tensor:
            return uniform.expand(len(idx), n_sub)
    head = [p for n, p in policy.named_parameters() if p.requires_grad and n.startswith("head.")]
    lora = [p for n, p in policy.named_parameters() if p.requires_grad and not n.startswith("head.")]
    optimizer = torch.optim.AdamW(
        [{"params": lora, "lr": cfg.learning_rate},
         {"params": head, "lr": cfg.learning_rate * cfg.head_lr_mult}],
        weight_decay=cfg.weight_decay)
    scheduler = get_scheduler(cfg.lr_schedule, optimizer,
                              num_warmup_steps=int(cfg.warmup_ratio * cfg.steps),
                              num_training_steps=cfg.steps)
    data_gen = torch.Generator().manual_seed(seed)
    sample_gen = torch.Generator().manual_seed(seed + 1)
    G, mu = cfg.grpo.group_size, cfg.grpo.inner_epochs
    table_cells_train = len(train_idx) * n_sub
    state: dict[str, Any] = {"step": 0, "perm": torch.empty(0, dtype=torch.long), "pos": 0,
                             "reward_evals": 0, "unique": set(), "seen": set(), "history": [],
                             "group": None,
                             "run_id": getattr(tracker, "run_id", None)}
    chash = config_hash(cfg, method, seed, table.meta)

    # ---- resume from the last checkpoint, if any ----------------------------------------------
    if checkpoint is not None and checkpoint.exists():
        ck = torch.load(checkpoint, weights_only=False)
        if ck["config_hash"] == chash:
            policy.load_state_dict(ck["policy"], strict=False)
            optimizer.load_state_dict(ck["optimizer"])
            scheduler.load_state_dict(ck["scheduler"])
            data_gen.set_state(ck["data_gen"])
            sample_gen.set_state(ck["sample_gen"])
            state = ck["state"]
            state.setdefault("seen", set())

    def save_checkpoint() -> None:
        if checkpoint is None:
            return
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        tmp = checkpoint.with_suffix(".tmp")
        torch.save({"config_hash": chash, "policy": _trainable_state(policy),
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "data_gen": data_gen.get_state(), "sample_gen": sample_gen.get_state(),
                    "state": state}, tmp)
        os.replace(tmp, checkpoint)

    def next_batch() -> torch.Tensor:
        if state["pos"] + cfg.batch_size > len(state["perm"]):
            state["perm"] = torch.as_tensor(train_idx)[torch.randperm(len(train_idx),
                                                                      generator=data_gen)]
            state["pos"] = 0
        batch = state["perm"][state["pos"]:state["pos"] + cfg.batch_size]
        state["pos"] += cfg.batch_size
        state["seen"].update(batch.tolist())  # rows a lazily built table would have paid for
        return batch

    def evaluate(idx: np.ndarray) -> dict[str, float]:
        if not len(idx):
            return {}
        return policy_metrics(predict(policy, idx), table.correct[idx], table.reward[idx],
                              table.n_tools, G)

    def log(metrics: dict[str, float], step: int) -> None:
        state["history"].append({"step": step, **metrics})
        if tracker is not None:
            tracker.log_metrics(metrics, step)

    if state["step"] == 0 and not state["history"]:  # the uniform starting point of every curve
        log({**{f"val/{k}": v for k, v in evaluate(val_idx).items()},
             "train/reward_evals": table_cells_train if method == "fgpo" else 0,
             "train/questions_seen": 0}, 0)

    # ---- the loop: one optimiser step per iteration ---------------------------------------------
    bar = tqdm(total=cfg.steps, initial=state["step"], desc=f"{method} seed {seed}",
               unit="step", disable=not progress)
    while state["step"] < cfg.steps:
        step = state["step"]
        if method == "fgpo":
            idx = next_batch()
            logp = policy.log_probs(idx)
            loss, stats = fgpo_loss(logp, ref_logp(idx), rewards[idx], cfg.beta,
                                    cfg.entropy_coef, cfg.fgpo.normalize_std, cfg.eps)
            evals, unique = table_cells_train, table_cells_train
        else:
            if step % mu == 0 or state["group"] is None:  # sample a new batch of groups
                idx = next_batch()
                with torch.no_grad():
                    masks, old = sample_groups(policy.log_probs(idx), G, cfg.grpo.temperature,
                                               sample_gen)
                state["group"] = (idx, masks, old.gather(1, masks))
                state["reward_evals"] += masks.numel()  # every lookup = one reasoner call
                state["unique"].update((idx[:, None] * n_sub + masks).flatten().tolist())
            idx, masks, logp_old = state["group"]
            logp = policy.log_probs(idx)
            tempered = torch.log_softmax(logp / cfg.grpo.temperature, dim=-1)
            ref_tempered = torch.log_softmax(ref_logp(idx) / cfg.grpo.temperature, dim=-1)
            loss, stats = grpo_loss(tempered.gather(1, masks), logp_old,
                                    ref_tempered.gather(1, masks), rewards[idx].gather(1, masks),
                                    cfg.grpo.clip_eps, cfg.beta, cfg.eps)
            evals, unique = state["reward_evals"], len(state["unique"])
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), cfg.max_grad_norm)
        optimizer.step()
        scheduler.step()
        state["step"] = step = step + 1

        # ---- logging: exact quantities from the full distribution, for both methods ----------
        with torch.no_grad():
            p = logp.detach().exp()
            exact = {"train/expected_reward": float((p * rewards[idx]).sum(-1).mean()),
                     "train/kl": float((p * (logp.detach() - ref_logp(idx))).sum(-1).mean()),
                     "train/entropy": float(-(p * logp.detach()).sum(-1).mean())}
        metrics = {"train/loss": loss.item(), **exact,
                   "train/zero_signal_frac": float(stats["zero_signal_frac"]),
                   "train/reward_evals": evals, "train/reward_evals_unique": unique,
                   "train/questions_seen": len(state["seen"]),
                   "train/lr": scheduler.get_last_lr()[0], "train/grad_norm": float(grad_norm)}
        if step % cfg.eval_every == 0 or step == cfg.steps:
            metrics.update({f"val/{k}": v for k, v in evaluate(val_idx).items()})
        log(metrics, step)
        bar.update()
        bar.set_postfix(loss=f"{loss.item():.3f}", zero=f"{metrics['train/zero_signal_frac']:.2f}")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            save_checkpoint()
    bar.close()

    # ---- final evaluation on test ----------------------------------------------------------------
    logp = predict(policy, test_idx)
    test = policy_metrics(logp, table.correct[test_idx], table.reward[test_idx], table.n_tools, G)
    last = state["history"][-1]
    final = {**{f"test/{k}": v for k, v in test.items()},
             **{k: v for k, v in last.items() if k.startswith("val/")},
             "budget/reward_evals": last["train/reward_evals"],
             "budget/reward_evals_unique": last["train/reward_evals_unique"],
             "budget/questions_seen": last["train/questions_seen"],
             "budget/table_cells": int(table.reward.size),
             "budget/table_cells_train": table_cells_train,
             "budget/optimizer_steps": cfg.steps}
    greedy = logp.argmax(1).numpy()
    selections = pd.DataFrame({
        "question_id": [table.question_ids[i] for i in test_idx],
        "family": table.families[test_idx], "mask": greedy,
        "tools": [",".join(n for b, n in enumerate(data.tool_names) if m >> b & 1) for m in greedy],
        "n_tools": table.n_tools[greedy], "correct": table.correct[test_idx, greedy],
        "reward": table.reward[test_idx, greedy],
        "p_selected": logp.exp().numpy()[np.arange(len(greedy)), greedy]})
    return RunResult(final=final, history=state["history"], selections=selections, policy=policy)
