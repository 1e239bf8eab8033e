"""DVC stage `train`: one (method, reasoner, benchmark) setting, every seed, logged to MLflow.

Writes metrics/train/<method>/<reasoner>/<benchmark>.json (final metrics, mean and spread over
seeds), plots/train/<method>/<reasoner>/<benchmark>.csv (the per-step curves) and
data/selections/<method>/<reasoner>/<benchmark>.parquet (every seed's greedy test-set choice per
question, which the report breaks down by family and subset).
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.rewards.data import load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import RewardTableConfig
from fgpo.seqio import atomic_write_parquet, atomic_write_text
from fgpo.tools import ToolsConfig
from fgpo.tracking.provenance import EXPERIMENT, file_md5, git_commit
from fgpo.train.config import TrainConfig
from fgpo.train.loop import RunResult, check_run_data, config_hash, train_run
from fgpo.train.overrides import BEST_PARAMS, apply, apply_best, read_best


def swept_params(method: str, reasoner: str, benchmark: str, params: Path,
                 best: Path = BEST_PARAMS) -> dict | None:
    """The setting's best sweep params when `sweep.apply_best` is on and a sweep recorded them
    in the best-params file (a params file of this stage in dvc.yaml)."""
    return read_best(method, reasoner, benchmark, best) if apply_best(params) else None


def resumable_run_id(ckpt: Path, chash: str) -> str | None:
    """The MLflow run of an interrupted run with the same configuration, to continue it."""
    if not ckpt.exists():
        return None
    import torch
    ck = torch.load(ckpt, weights_only=False)
    return ck["state"].get("run_id") if ck["config_hash"] == chash else None


def summarise(results: list[RunResult], seeds: list[int]) -> dict[str, Any]:
    """Mean and standard deviation over seeds of every final metric, plus the per-seed values."""
    out: dict[str, Any] = {}
    for key in results[0].final:
        vals = np.array([r.final[key] for r in results], dtype=float)
        out[key] = float(vals.mean())
        out[f"{key}_std"] = float(vals.std())
    out["seeds"] = seeds
    return out


def learning_curve_png(history: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    df = pd.DataFrame(history)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    val = df.dropna(subset=["val/accuracy"])
    axes[0].plot(val["train/reward_evals"].ffill(), val["val/accuracy"], marker="o")
    axes[0].set(xlabel="reward evaluations", ylabel="val accuracy")
    axes[1].plot(df.step, df["train/zero_signal_frac"])
    axes[1].set(xlabel="step", ylabel="zero-signal fraction")
    axes[2].plot(df.step, df["train/expected_reward"])
    axes[2].set(xlabel="step", ylabel="E_pi[r] (train batch)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(method: str, reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), metrics_root: Path = Path("metrics/train"),
         plots_root: Path = Path("plots/train"), runs_root: Path = Path("runs"),
         selections_root: Path = Path("data/selections"),
         tracking: bool = True, force: bool = False) -> dict[str, Any]:
    """Train every seed; `force` trains even on a degenerate table (allow_degenerate_table)."""
    from fgpo.tracking import sigterm_as_exit
    with sigterm_as_exit():  # a `kill` ends the MLflow run as KILLED, not RUNNING for good
        return _main(method, reasoner, benchmark, params, data, metrics_root, plots_root,
                     runs_root, selections_root, tracking, force)


def _main(method: str, reasoner: str, benchmark: str, params: Path, data: Path,
          metrics_root: Path, plots_root: Path, runs_root: Path, selections_root: Path,
          tracking: bool, force: bool = False) -> dict[str, Any]:
    from fgpo.tracking import Tracker, end_if_running

    tools_cfg = load_section(ToolsConfig, "tools", params)
    cfg = load_section(TrainConfig, "train", params)
    if method not in cfg.methods:
        raise InputError(f"method {method!r} not in train.methods {cfg.methods}",
                         file=str(params), field="train.methods")
    best = swept_params(method, reasoner, benchmark, params)
    if best:
        cfg = apply(cfg, best["params"])
    if force:
        cfg = replace(cfg, allow_degenerate_table=True)
    run_data = load_run_data(reasoner, benchmark, tools_cfg, data)  # fails before training
    check_run_data(cfg, run_data)  # e.g. batch_size > the train split: before any MLflow run
    group = load_section(RewardTableConfig, "reward_table", params).group_size
    stats = require_trainable(run_data, group, cfg.allow_degenerate_table,  # before the model
                              str(table_path(reasoner, benchmark, data / "reward_tables")))
    baselines = {f"baseline/{k}": v for k, v in stats.items()
                 if k.startswith("test/") and isinstance(v, float)}
    table_md5 = file_md5(table_path(reasoner, benchmark, data / "reward_tables"))
    results, curves, selections = [], [], []
    for seed in cfg.seeds:
        out_dir = runs_root / method / reasoner / benchmark / f"seed{seed}"
        ckpt = out_dir / "checkpoint.pt"
        tracker = None
        try:  # from the run's creation on, an interrupt ends it KILLED
            if tracking:
                run_id = resumable_run_id(ckpt, config_hash(cfg, method, seed, run_data.table.meta))
                sidecar = out_dir / "mlflow_run_id"
                if run_id is None and sidecar.exists():
                    # the previous attempt died before a checkpoint it could resume from
                    end_if_running(sidecar.read_text().strip(), "KILLED")
                tracker = Tracker(EXPERIMENT, f"{method}-{reasoner}-{benchmark}-s{seed}",
                                  tags={"method": method, "reasoner": reasoner,
                                        "benchmark": benchmark, "seed": str(seed),
                                        "setting": f"{reasoner}/{benchmark}",
                                        "git_commit": git_commit(), "table_md5": table_md5,
                                        "table_fingerprint": run_data.table.meta["fingerprint"],
                                        "sweep_best": f"{best['study']}#{best['trial']}"
                                        if best else "none"},
                                  params={"method": method, "train": asdict(cfg),
                                          "tools": tools_cfg.names, "reasoner": reasoner,
                                          "benchmark": benchmark, "seed": seed},
                                  run_id=run_id)
                atomic_write_text(tracker.run_id + "\n", sidecar)
            result = train_run(method, cfg, run_data, seed, tracker, ckpt)
        except BaseException:
            if tracker is not None:
                tracker.end("KILLED")
            raise
        ckpt.unlink(missing_ok=True)  # finished: a rerun starts afresh (and a new MLflow run)
        result.final.update(baselines)
        results.append(result)
        curves.append(pd.DataFrame(result.history).assign(seed=seed))
        selections.append(result.selections.assign(seed=seed))
        out_dir.mkdir(parents=True, exist_ok=True)
        result.selections.to_parquet(out_dir / "test_selections.parquet", index=False)
        result.policy.save_adapter(out_dir / "adapter")
        learning_curve_png(result.history, out_dir / "learning_curve.png",
                           f"{method} {reasoner}/{benchmark} seed {seed}")
        if tracker is not None:
            tracker.log_metrics({k: v for k, v in result.final.items()
                                 if k.startswith(("test/", "budget/", "baseline/"))}, cfg.steps)
            for name in ("test_selections.parquet", "learning_curve.png"):
                tracker.log_artifact(out_dir / name)
            tracker.log_artifact(out_dir / "adapter", "adapter")
            tracker.end()
    summary = summarise(results, cfg.seeds)
    summary["sweep_best"] = f"{best['study']}#{best['trial']}" if best else "none"
    atomic_write_text(json.dumps(summary, indent=1) + "\n",
                      metrics_root / method / reasoner / f"{benchmark}.json")
    plot = pd.concat(curves, ignore_index=True)
    plot.columns = [c.replace("/", "_") for c in plot.columns]
    path = plots_root / method / reasoner / f"{benchmark}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(plot.to_csv(index=False), path)
    atomic_write_parquet(pd.concat(selections, ignore_index=True),
                         selections_root / method / reasoner / f"{benchmark}.parquet")
    return summary
