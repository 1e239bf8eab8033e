"""One setting's training: every method and seed in one process, and the per-method outputs.

The process loads the reward table once and computes the policy's frozen layers once (the
encoder's in-memory cache), then trains each (method, seed) run in turn through
`fgpo.runs.runner.train_seed`: every run keeps its own seed stream, MLflow run, checkpoint and
result, so a run's numbers do not depend on which runs share the process, and after a kill each
run resumes on its own (a finished run is read back while its key, which covers the config, the
table's md5 and the digest of the training code, still matches). The setting's best run goes to
MLflow's model registry (`fgpo.tracking.registry`). The train stage and the ablation's `ablate`
stage both call `train_setting`, with their own output folders.

With `train.workers` > 1 (CPU), the runs not finished before are spread over that many worker
processes forked after the frozen layers are computed, each run single-threaded
(`train.threads: 1`) from start to end in one worker; the process then reads every result back
in the fixed order, so a setting's outputs do not depend on the number of workers.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.config import load_section
from fgpo.errors import InputError
from fgpo.rewards.data import benchmark_path, load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import tool_names
from fgpo.runs.runner import (RunContext, finished, run_inputs, setting_lock, summarise,
                              sweep_label, train_seed)
from fgpo.seqio import atomic_write_parquet, atomic_write_text
from fgpo.tracking.code import module_digest
from fgpo.tracking.mlflow_run import deferred_sigterm
from fgpo.tracking.provenance import file_md5
from fgpo.tracking.registry import Candidate, register_best
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.loop import RunResult, check_run_data
from fgpo.train.overrides import Settings, resolve
from fgpo.train.settings import resolve_device
from fgpo.workers import fork_pool

log = logging.getLogger(__name__)


def training_code() -> str:
    """The digest the runs cache is keyed by: the module closure of this module, the training
    code both stages run (`fgpo.tracking.code`; dvc.yaml declares it for each of them)."""
    return module_digest(__name__)


def train_setting(reasoner: str, benchmark: str, methods: list[str] | None, params: Path,
                  data: Path, metrics_root: Path, plots_root: Path, runs_root: Path,
                  selections_root: Path, tracking: bool = True, force: bool = False,
                  tables_root: Path | None = None, any_method: bool = False,
                  register: bool = True) -> dict[str, dict[str, Any]]:
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
    settings = {m: resolve(base_cfg, m, params, reasoner, benchmark) for m in methods}
    for s in settings.values():
        check_run_data(s.config, run_data)  # e.g. batch_size > the train split: before any run
    stats = require_trainable(run_data, base_cfg.allow_degenerate_table,  # before any model
                              str(table_file))
    baselines = {f"baseline/{k}": v for k, v in stats.items()
                 if k.startswith("test/") and isinstance(v, float)}
    table_md5 = file_md5(table_file)
    context = RunContext(reasoner, benchmark, run_data, table_md5, training_code(),
                         baselines, runs_root, tracking,
                         run_inputs(run_data, benchmark_path(benchmark, data), table_file,
                                    table_md5) if tracking else [])

    # ---- every method, every seed: one run each, outputs per method ---------------------------
    done = train_runs(context, settings, base_cfg.workers)
    out: dict[str, dict[str, Any]] = {}
    candidates: list[Candidate] = []
    for method, s in settings.items():
        seeds = s.config.seeds
        results = [done[(method, seed)] for seed in seeds]
        candidates += [Candidate(method, seed, r.final, r.run_id, r.model_uri)
                       for seed, r in zip(seeds, results)]
        out[method] = write_method_outputs(results, seeds, method, reasoner, benchmark, s,
                                           metrics_root, plots_root, selections_root)
    if set(methods) == set(base_cfg.methods):  # a method dropped from train.methods: its files go
        for root, ext in ((metrics_root, "json"), (plots_root, "csv")):
            for stale in (root / reasoner / benchmark).glob(f"*.{ext}"):
                if stale.stem not in methods:
                    stale.unlink()
    if tracking and register:
        with deferred_sigterm():  # a kill lands after the registry's writes, not inside
            register_best(candidates, reasoner, benchmark, table_md5)
    return out


# ---- runs side by side: forked workers ------------------------------------------------------

_SHARED: tuple[RunContext, dict[str, Settings]] | None = None
"""What a forked worker trains from: the parent's context and settings, inherited by the fork
(the reward table and the frozen layers' states are not copied, let alone pickled)."""


def train_runs(context: RunContext, settings: dict[str, Settings], workers: int
               ) -> dict[tuple[str, int], RunResult]:
    """Every (method, seed) run of the setting: in this process, or, with `workers` > 1 on
    the CPU, the runs that have not finished before trained by that many forked processes,
    each run by one worker from start to end. Every result is then read back from its run
    folder in a fixed order, so the outputs are the same however the runs were spread."""
    global _SHARED
    jobs = [(m, seed) for m, s in settings.items() for seed in s.config.seeds]
    pending = sorted((j for j in jobs if finished(context, j[0], settings[j[0]], j[1]) is None),
                     key=lambda j: (settings[j[0]].config.seeds.index(j[1]), j[0]))
    cfg = next(iter(settings.values())).config
    if workers > 1 and len(pending) > 1 and resolve_device(cfg.device).type == "cpu":
        warm_frozen_layers(context, cfg)
        _SHARED = (context, settings)
        n = min(workers, len(pending))
        log.info("%d runs in %d worker processes", len(pending), n)
        try:
            with fork_pool(n) as pool:
                for _ in pool.imap_unordered(_train_job, pending):
                    pass
        finally:
            _SHARED = None
    return {(m, seed): train_seed(context, m, settings[m], seed) for m, seed in jobs}


def warm_frozen_layers(context: RunContext, cfg: TrainConfig) -> None:
    """Compute (or load) the backbone's frozen layers for the setting's questions in this
    process, so every forked worker inherits them instead of computing them again."""
    import torch

    from fgpo.policy import build_policy

    torch.set_num_threads(cfg.threads)
    data = context.run_data
    build_policy(cfg.policy, len(data.tool_names), data.tool_names, 0).prepare(data.questions)


def _train_job(job: tuple[str, int]) -> None:
    assert _SHARED is not None, "a worker runs only in a process forked by train_runs"
    context, settings = _SHARED
    method, seed = job
    train_seed(context, method, settings[method], seed)  # its result stays in its run folder


def write_method_outputs(results: list[RunResult], seeds: list[int], method: str,
                         reasoner: str, benchmark: str, settings: Settings, metrics_root: Path,
                         plots_root: Path, selections_root: Path) -> dict[str, Any]:
    """The method's metrics JSON (mean and spread over seeds; where its settings came from),
    curves CSV, test selections, and every seed's validation points with their test choices
    (<method>.points.parquet, <method>.point_choices.parquet: the budget frontier's input)."""
    summary = summarise(results, seeds)
    summary["sweep_best"] = sweep_label(settings.best)
    summary["tuned"] = settings.tuned  # tuned | from <relative> | untuned | off (tune.apply)
    atomic_write_text(json.dumps(summary, indent=1) + "\n",
                      metrics_root / reasoner / benchmark / f"{method}.json")
    plot = pd.concat([pd.DataFrame(r.history).assign(seed=s) for r, s in zip(results, seeds)],
                     ignore_index=True)
    plot.columns = [c.replace("/", "_") for c in plot.columns]
    path = plots_root / reasoner / benchmark / f"{method}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(plot.to_csv(index=False), path)
    folder = selections_root / reasoner / benchmark
    for table, name in (("selections", f"{method}.parquet"),
                        ("points", f"{method}.points.parquet"),
                        ("point_choices", f"{method}.point_choices.parquet")):
        atomic_write_parquet(pd.concat([getattr(r, table).assign(seed=s)
                                        for r, s in zip(results, seeds)], ignore_index=True),
                             folder / name)
    return summary


def outcome(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """What `fgpo train` and `fgpo ablate` print: each method's headline test numbers and budget."""
    lines = []
    for name, summary in summaries.items():
        lines.append(f"[{name}]")
        lines += [f"  {key:28s} {summary[key]:.4f}" for key in (
            "test/accuracy", "test/expected_accuracy", "test/tools_per_question",
            "budget/reward_evals")]
    return lines
