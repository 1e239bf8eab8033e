"""FGPO vs GRPO step time on the same policy and batch, and the cost of exact enumeration vs K.

In one run, with medians over repeats:
  * seconds per optimiser step and per question for FGPO and GRPO (sampling + mu inner steps
    amortised), same MiniLM + LoRA policy, same batch, through the train loop's own step
    (`fgpo.train.loop.optimizer_step`: the estimator's collect and loss, clipping, AdamW);
  * milliseconds per step of each estimator with and without the frozen-layer cache, for the
    adapted layers [5], [4, 5] (the default) and all six (bench/step_times.py);
  * the exact-enumeration overhead: for K = 4..10, the subset head + FGPO loss (forward and
    backward over all 2^K subsets) timed against the backbone forward/backward of the same
    batch; the ratio at K = 6 is the number to watch (target: under about 10%);
  * wall time to a target validation accuracy: both methods trained as the train stage trains
    them (params.yaml `train`, the pipeline's reward table of --setting), target = the best
    validation accuracy both reach; seconds from the first step to the first validation point at
    or above it (median over --target-repeats). Skipped when the table is not built yet;
Writes reports/bench_train.json.
Usage: python bench/bench_train.py [--batch 16] [--repeats 5] [--setting careful_expert/genomeqa]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.policy import build_policy
from fgpo.policy.base import PolicyConfig
from fgpo.policy.heads import FactorizedHead, SubsetHead
from fgpo.seqio import atomic_write_text
from fgpo.train.config import TrainConfig
from fgpo.train.fgpo import fgpo_loss
from fgpo.train.loop import train_run

sys.path.insert(0, str(Path(__file__).parent))
from step_times import ms_per_step, step_table, timed  # noqa: E402 - the bench folder's own


class Clock:
    """A tracker for train_run that timestamps every validation point (from step 0's log)."""

    run_id = None

    def __init__(self) -> None:
        self.t0: float | None = None
        self.points: list[tuple[int, float, float]] = []
        self.evals: list[float] = []   # train/reward_evals at each validation point

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        now = time.perf_counter()
        self.t0 = now if self.t0 is None else self.t0
        if "val/accuracy" in metrics:
            self.points.append((step, now - self.t0, metrics["val/accuracy"]))
            self.evals.append(metrics.get("train/reward_evals", 0.0))


def pipeline_setting(setting: str, what: str):
    """The pipeline's run data for 'reasoner/benchmark' and the train config; None if unbuilt."""
    from fgpo.config import load_section
    from fgpo.rewards.data import load_run_data
    from fgpo.rewards.table import tool_names
    reasoner, benchmark = setting.split("/")
    try:
        data = load_run_data(reasoner, benchmark, tool_names())
    except Exception as exc:  # noqa: BLE001 - the pipeline has not built this table
        print(f"{what} skipped: {exc}")
        return None
    return data, load_section(TrainConfig, "train")


def time_to_target(setting: str, repeats: int) -> dict | None:
    """Median seconds for FGPO and GRPO to reach the validation accuracy both reach."""
    loaded = pipeline_setting(setting, "time to target")
    if loaded is None:
        return None
    data, cfg = loaded
    runs: dict[str, list[Clock]] = {"fgpo": [], "grpo": []}
    for _ in range(repeats):
        for method in runs:
            clock = Clock()
            train_run(method, cfg, data, cfg.seeds[0], clock)  # tqdm bar per run
            runs[method].append(clock)
    target = min(max(a for _, _, a in runs[m][0].points) for m in runs)
    out = {"setting": setting, "epochs": cfg.epochs, "target_val_accuracy": target}
    for method, clocks in runs.items():
        hits = [next((s, t) for s, t, a in c.points if a >= target - 1e-9) for c in clocks]
        out[f"{method}_step_to_target"] = hits[0][0]
        out[f"{method}_s_to_target"] = statistics.median(t for _, t in hits)
        out[f"{method}_s_total"] = statistics.median(c.points[-1][1] for c in clocks)
    informative = out["fgpo_step_to_target"] > 0 and out["grpo_step_to_target"] > 0
    out["grpo_over_fgpo_to_target"] = (out["grpo_s_to_target"] / out["fgpo_s_to_target"]
                                       if informative else None)  # None: no learning needed
    print(f"to val accuracy {target:.3f} on {setting}: FGPO {out['fgpo_s_to_target']:.1f}s "
          f"(step {out['fgpo_step_to_target']}), GRPO {out['grpo_s_to_target']:.1f}s "
          f"(step {out['grpo_step_to_target']})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--setting", default="careful_expert/genomeqa", help="reasoner/benchmark")
    ap.add_argument("--target-repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("reports/bench_train.json"))
    args = ap.parse_args()
    torch.set_num_threads(2)
    cfg = TrainConfig(batch_size=args.batch, lr_schedule="constant", warmup_ratio=0.0,
                      policy=PolicyConfig(lora_layers=[4, 5], max_length=48,
                                          cache_frozen_layers=False))  # the backbone's cost
    qs = generate("genomeqa", BenchmarkConfig(n_questions=args.batch, seed=0), progress=False)
    policy = build_policy(cfg.policy, 6, [], seed=0)
    policy.prepare(qs)
    policy.eval()
    idx = torch.arange(args.batch)
    # FGPO vs GRPO through the loop's own step, on the backbone this file measures (no cache)
    t_fgpo, t_grpo = (ms_per_step(qs, [4, 5], False, m, args.batch, args.repeats) / 1000
                      for m in ("fgpo", "grpo"))
    report = {"batch": args.batch, "fgpo_s_per_step": t_fgpo, "grpo_s_per_step": t_grpo,
              "fgpo_ms_per_question": 1000 * t_fgpo / args.batch,
              "grpo_ms_per_question": 1000 * t_grpo / args.batch,
              "grpo_over_fgpo": t_grpo / t_fgpo}
    print(f"step: FGPO {t_fgpo:.3f}s  GRPO {t_grpo:.3f}s per optimiser step "
          f"(ratio {t_grpo / t_fgpo:.2f})")

    # ---- the frozen-layer cache: ms per step with and without, per estimator and layers -----
    report["step_times"] = step_table(qs, args.batch, args.repeats)

    # ---- exact enumeration vs K: head + loss over 2^K subsets, against the backbone ----------
    def backbone_pass() -> torch.Tensor:
        mask = policy.attention_mask[idx]
        hidden = policy.backbone(input_ids=policy.input_ids[idx],
                                 attention_mask=mask).last_hidden_state
        return (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)

    def backbone_step() -> None:
        backbone_pass().sum().backward()

    t_backbone = timed(backbone_step, args.repeats)
    pooled = backbone_pass().detach()
    rows = []
    for k in range(4, 11):
        for name, head_cls in (("subset", SubsetHead), ("factorized", FactorizedHead)):
            head = head_cls(pooled.shape[1], k)
            torch.nn.init.normal_(head.linear.weight, std=0.02)
            r = torch.rand(args.batch, 2 ** k)
            ref = torch.full((args.batch, 2 ** k), -k * torch.log(torch.tensor(2.0)))
            h = pooled.clone().requires_grad_(True)

            def head_step() -> None:
                loss, _ = fgpo_loss(torch.log_softmax(head(h), -1), ref, r, beta=0.01)
                loss.backward()

            t_head = timed(head_step, args.repeats)
            rows.append({"K": k, "subsets": 2 ** k, "head": name, "head_s": t_head,
                         "over_backbone": t_head / t_backbone})
            print(f"K={k:2d} {name:10s} head+loss {1000 * t_head:7.2f} ms = "
                  f"{100 * t_head / t_backbone:5.1f}% of the backbone fwd/bwd "
                  f"({1000 * t_backbone:.0f} ms)")
    report.update({"backbone_s_per_step": t_backbone, "enumeration_vs_K": rows})
    report["time_to_target"] = time_to_target(args.setting, args.target_repeats)
    atomic_write_text(json.dumps(report, indent=2) + "\n", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
