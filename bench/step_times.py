"""Milliseconds per optimiser step of each estimator, with and without the frozen-layer cache.

Same questions, batch, policy config and estimator code as the train loop
(`fgpo.train.loop.optimizer_step`: the estimator's collect and loss, backward, clipping, AdamW);
only `cache_frozen_layers` (and, across rows, `lora_layers`) differs. GRPO's sampling is
amortised over its mu inner steps. Imports nothing beyond the policy and the train loop, so the
same code times a GPU (bench/gpu_check.py) where the pipeline's other packages are absent.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable

import torch

from fgpo.policy import build_policy
from fgpo.policy.base import PolicyConfig
from fgpo.question import Question
from fgpo.train.config import TrainConfig
from fgpo.train.settings import resolve_device
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.loop import build_optimizer, optimizer_step, reference_logp

LAYER_OPTIONS = ([5], [4, 5], [])  # top one, top two (the default), all six (nothing to cache)


def timed(fn: Callable[[], None], repeats: int,
          device: torch.device = torch.device("cpu")) -> float:
    """Median seconds of `fn` over `repeats` calls after one warm-up (GPU work awaited)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ms_per_step(questions: list[Question], layers: list[int], cache: bool, method: str,
                batch: int, repeats: int, device: str = "cpu", backbone: str | None = None,
                mu: int = 2) -> float:
    """Milliseconds per optimiser step of `method` on the first `batch` questions."""
    policy_cfg = PolicyConfig(lora_layers=layers, cache_frozen_layers=cache, max_length=48,
                              **({"backbone": backbone} if backbone else {}))
    cfg = TrainConfig(batch_size=batch, lr_schedule="constant", warmup_ratio=0.0,
                      policy=policy_cfg, device=device)
    dev = resolve_device(device)
    policy = build_policy(cfg.policy, 6, [], seed=0).to(dev)
    policy.prepare(questions[:batch])
    policy.eval()
    idx = torch.arange(batch)
    rewards = torch.rand(batch, 64, generator=torch.Generator().manual_seed(0)).to(dev)
    ref_logp = reference_logp("uniform", policy, 64)
    optimizer, scheduler = build_optimizer(cfg, policy, total_steps=1)  # constant: unused
    estimator = ESTIMATORS[method](cfg, getattr(cfg, method), rewards, batch,
                                   torch.Generator().manual_seed(0))
    counter = itertools.count()  # step numbers go on: GRPO resamples every mu-th

    def run() -> None:
        for _ in range(mu):
            optimizer_step(estimator, policy, optimizer, scheduler, next(counter),
                           lambda: idx, ref_logp, cfg.max_grad_norm)

    return 1000 * timed(run, repeats, dev) / mu


def step_table(questions: list[Question], batch: int, repeats: int, device: str = "cpu",
               backbone: str | None = None, progress: bool = True) -> list[dict]:
    """One row per (adapted layers, estimator): ms per step uncached and cached, and the ratio."""
    rows = []
    for layers in LAYER_OPTIONS:
        for method in ESTIMATORS:
            row = {"lora_layers": layers, "method": method, "batch": batch, "device": device,
                   "uncached_ms": ms_per_step(questions, layers, False, method, batch, repeats,
                                              device, backbone)}
            row["cached_ms"] = (ms_per_step(questions, layers, True, method, batch, repeats,
                                            device, backbone) if layers else None)
            row["speedup"] = row["uncached_ms"] / row["cached_ms"] if layers else None
            rows.append(row)
            if progress:
                cached = f"{row['cached_ms']:7.1f} ms cached ({row['speedup']:.1f}x)" \
                    if layers else "(nothing to cache)"
                print(f"{device} batch {batch} layers {layers or 'all'} {method}: "
                      f"{row['uncached_ms']:7.1f} ms uncached, {cached}", flush=True)
    return rows
