"""DVC stage `train`: one (reasoner, benchmark) setting, every method and seed in one process.

The process loads the reward table once and computes the policy's frozen layers once (the
encoder's in-memory cache), then trains each (method, seed) run in turn through
`fgpo.runs.runner.train_seed`: every run keeps its own seed stream, MLflow run, checkpoint and
result, so a run's numbers do not depend on which runs share the process, and after a kill each
run resumes on its own (a finished run is read back while its key, which covers the config, the
table's md5 and the digest of this stage's code, still matches). The setting's best run goes to
MLflow's model registry (`fgpo.tracking.registry`).

Writes, per method <m>: metrics/train/<reasoner>/<benchmark>/<m>.json (final metrics, mean and
spread over seeds), plots/train/<reasoner>/<benchmark>/<m>.csv (the per-step curves) and
data/selections/<reasoner>/<benchmark>/<m>.parquet (every seed's greedy test-set choice per
question, which the report breaks down by family and subset).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.rewards.data import benchmark_path, load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import tool_names
from fgpo.runs.runner import (RunContext, run_inputs, setting_lock, summarise, sweep_label,
                              train_seed)
from fgpo.seqio import atomic_write_parquet, atomic_write_text
from fgpo.tracking.code import stage_digest
from fgpo.tracking.provenance import file_md5
from fgpo.tracking.registry import Candidate, register_best
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.loop import RunResult, check_run_data
from fgpo.train.settings import resolve_device
from fgpo.train.overrides import (BEST_PARAMS, TUNED_PARAMS, apply, apply_best,
                                  apply_tuned, read_best, read_tuned, tuned_source)


def swept_params(method: str, reasoner: str, benchmark: str, params: Path,
                 best: Path = BEST_PARAMS) -> dict | None:
    """The setting's best sweep params when `sweep.apply_best` is on and a sweep recorded them
    in the best-params file (a params file of this stage in dvc.yaml)."""
    return read_best(method, reasoner, benchmark, best) if apply_best(params) else None


def main(reasoner: str, benchmark: str, methods: list[str] | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         metrics_root: Path = Path("metrics/train"), plots_root: Path = Path("plots/train"),
         runs_root: Path = Path("runs"), selections_root: Path = Path("data/selections"),
         tracking: bool = True, force: bool = False, tables_root: Path | None = None,
         any_method: bool = False, register: bool = True) -> dict[str, dict[str, Any]]:
    """Train every seed of every method in `methods` (default: train.methods) on one setting;
    `force` trains even on a degenerate table (allow_degenerate_table). The table is read from
    `tables_root` (default data/reward_tables; the ablation's tables at other tool costs live
    elsewhere); `any_method` admits every registered estimator, not only train.methods (the
    ablation's); `register` puts the setting's best run's policy in MLflow's model registry.
    Returns method -> summary."""
    from fgpo.tracking import sigterm_as_exit
    with sigterm_as_exit(), setting_lock(runs_root, reasoner, benchmark):
        # a `kill` ends the MLflow run as KILLED, not RUNNING for good
        return _main(reasoner, benchmark, methods, params, data, metrics_root, plots_root,
                     runs_root, selections_root, tracking, force,
                     tables_root or data / "reward_tables", any_method, register)


def _main(reasoner: str, benchmark: str, methods: list[str] | None, params: Path, data: Path,
          metrics_root: Path, plots_root: Path, runs_root: Path, selections_root: Path,
          tracking: bool, force: bool, tables_root: Path, any_method: bool, register: bool
          ) -> dict[str, dict[str, Any]]:
    # ---- once per setting: config, reward table, the degenerate-table gate ---------------------
    names = tool_names(params)
    base_cfg = load_section(TrainConfig, "train", params)
    allowed = list(ESTIMATORS) if any_method else base_cfg.methods
    for method in methods or []:
        if method not in allowed:
            raise InputError(f"method {method!r} not in {allowed}", file=str(params),
                             field="train.methods")
    methods = methods or base_cfg.methods
    try:  # e.g. cuda on a machine without one: before any table or model is read
        resolve_device(base_cfg.device)
    except InputError as exc:
        raise InputError(exc.message, file=str(params), field=exc.field) from None
    if force:
        base_cfg = replace(base_cfg, allow_degenerate_table=True)
    # fails before training
    run_data = load_run_data(reasoner, benchmark, names, data, tables_root)
    table_file = table_path(reasoner, benchmark, tables_root)
    configs = {m: method_config(base_cfg, m, reasoner, benchmark, params) for m in methods}
    for cfg, _ in configs.values():
        check_run_data(cfg, run_data)  # e.g. batch_size > the train split: before any run
    stats = require_trainable(run_data, base_cfg.allow_degenerate_table,  # before any model
                              str(table_file))
    baselines = {f"baseline/{k}": v for k, v in stats.items()
                 if k.startswith("test/") and isinstance(v, float)}
    table_md5 = file_md5(table_file)
    context = RunContext(reasoner, benchmark, run_data, table_md5, stage_digest("train"),
                         baselines, runs_root, tracking,
                         run_inputs(run_data, benchmark_path(benchmark, data), table_file,
                                    table_md5) if tracking else [])

    # ---- every method, every seed: one run each, outputs per method ---------------------------
    out: dict[str, dict[str, Any]] = {}
    finished: list[Candidate] = []
    for method, (cfg, best) in configs.items():
        results = [train_seed(context, method, cfg, seed, best) for seed in cfg.seeds]
        finished += [Candidate(method, seed, r.final, r.run_id, r.model_uri)
                     for seed, r in zip(cfg.seeds, results)]
        out[method] = write_method_outputs(results, cfg.seeds, method, reasoner, benchmark,
                                           best, metrics_root, plots_root, selections_root,
                                           tuned_label(method, params))
    if set(methods) == set(base_cfg.methods):  # a method dropped from train.methods: its files go
        for root, ext in ((metrics_root, "json"), (plots_root, "csv")):
            for stale in (root / reasoner / benchmark).glob(f"*.{ext}"):
                if stale.stem not in methods:
                    stale.unlink()
    if tracking and register:
        register_best(finished, reasoner, benchmark, table_md5)
    return out


def tuned_label(method: str, params: Path) -> str:
    """Where the method's settings came from: tuned | from <relative> | untuned, or
    'off (tune.apply: false)' when the tuned values were not applied."""
    if not apply_tuned(params):
        return "off (tune.apply: false)"
    return tuned_source(method, Path(params).parent / TUNED_PARAMS)


def method_config(cfg: TrainConfig, method: str, reasoner: str, benchmark: str, params: Path,
                  tuned: Path | None = None) -> tuple[TrainConfig, dict | None]:
    """The config `method` trains with on this setting: params.yaml's train section, the
    method's tuned values (tune/tuned.yaml, from `make tune`) over it, and the setting's best
    sweep params over those when sweep.apply_best is on; plus the sweep record used."""
    # tune/tuned.yaml sits beside the params file (the repository root under `dvc repro`)
    if apply_tuned(params):
        tuned = tuned or Path(params).parent / TUNED_PARAMS
        cfg = apply(cfg, read_tuned(method, tuned), tuned, method)
    best = swept_params(method, reasoner, benchmark, params)
    if best:
        cfg = apply(cfg, best["params"], BEST_PARAMS, f"{method}.{reasoner}.{benchmark}.params")
    return cfg, best


def write_method_outputs(results: list[RunResult], seeds: list[int], method: str,
                         reasoner: str, benchmark: str, best: dict | None, metrics_root: Path,
                         plots_root: Path, selections_root: Path, tuned: str = "untuned"
                         ) -> dict[str, Any]:
    """The method's metrics JSON (mean and spread over seeds; where its settings came from),
    curves CSV and selections."""
    summary = summarise(results, seeds)
    summary["sweep_best"] = sweep_label(best)
    summary["tuned"] = tuned  # tuned | from <relative> | untuned (tune/tuned.yaml)
    atomic_write_text(json.dumps(summary, indent=1) + "\n",
                      metrics_root / reasoner / benchmark / f"{method}.json")
    plot = pd.concat([pd.DataFrame(r.history).assign(seed=s) for r, s in zip(results, seeds)],
                     ignore_index=True)
    plot.columns = [c.replace("/", "_") for c in plot.columns]
    path = plots_root / reasoner / benchmark / f"{method}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(plot.to_csv(index=False), path)
    atomic_write_parquet(pd.concat([r.selections.assign(seed=s) for r, s in zip(results, seeds)],
                                   ignore_index=True),
                         selections_root / reasoner / benchmark / f"{method}.parquet")
    return summary


def outcome(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """What `fgpo train` prints: each method's headline test numbers and budget."""
    lines = []
    for name, summary in summaries.items():
        lines.append(f"[{name}]")
        lines += [f"  {key:28s} {summary[key]:.4f}" for key in (
            "test/accuracy", "test/expected_accuracy", "test/tools_per_question",
            "budget/reward_evals")]
    return lines
