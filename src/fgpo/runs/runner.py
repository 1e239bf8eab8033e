"""One training run around `train_run`: its key and cache, resume, the MLflow run's lifecycle,
the test evaluation, the saved adapter and learning curve, and every validation point's weights
tested after training (validation_points.parquet, validation_choices.parquet: what the budget
frontier selects from, by validation only).

A finished run is read back from runs/<method>/<reasoner>/<benchmark>/seed<s>/result.json when
its key (config, table md5 and the stage's code digest) still matches; an interrupted one
continues from its checkpoint and its MLflow run.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fgpo.evaluate import evaluate_test, evaluate_validation_points
from fgpo.policy.pyfunc import log_policy, save_policy
from fgpo.rewards.table import RunData
from fgpo.seqio import atomic_write_parquet, atomic_write_text
from fgpo.tracking.datasets import split_inputs
from fgpo.tracking.provenance import EXPERIMENT, git_commit
from fgpo.train.curve import learning_curve
from fgpo.train.loop import RunResult, config_hash, train_run
from fgpo.train.overrides import Settings
from fgpo.train.settings import resolve_device

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    """What every run of a setting shares."""

    reasoner: str
    benchmark: str
    run_data: RunData
    table_md5: str
    code: str
    """Digest of the code the runs execute (`fgpo.tracking.code.stage_digest`)."""
    baselines: dict[str, float]
    runs_root: Path
    tracking: bool
    inputs: list
    """MLflow dataset inputs every run of the setting logs (empty without tracking)."""


@contextmanager
def setting_lock(runs_root: Path, reasoner: str, benchmark: str) -> Iterator[None]:
    """One training of a setting at a time: a second `fgpo train` of it waits here, then reads
    back the runs the first one finished (no run trained or logged twice, no second registry
    version). An OS file lock, released when its process dies, so a kill leaves none behind."""
    from filelock import FileLock, Timeout

    path = runs_root / ".locks" / f"{reasoner}--{benchmark}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.warning("%s/%s is being trained by another process (lock %s); waiting for it, "
                    "then its finished runs are read back", reasoner, benchmark, path)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def run_inputs(run_data: RunData, bench_file: Path, table_file: Path, table_md5: str) -> list:
    """A training run's MLflow dataset inputs: each split of the benchmark and of the reward
    table, named `<file>:<split>`, digest the DVC md5, context the split's role."""
    splits, counts = np.unique(run_data.table.splits, return_counts=True)
    per_split = {str(s): int(n) for s, n in zip(splits, counts)}
    n_sub = 2 ** len(run_data.tool_names)
    setting = f"{run_data.table.meta.get('reasoner', table_file.parent.name)}/{bench_file.stem}"
    return (split_inputs(bench_file, f"benchmark {bench_file.stem}", per_split)
            + split_inputs(table_file, f"reward table {setting}",
                           {s: n * n_sub for s, n in per_split.items()}, table_md5))


def table_test_input(inputs: list) -> Any:
    """Of a run's dataset inputs, the reward table's test split (what test metrics measure)."""
    return next(i for i in inputs if i.dataset.name.startswith("reward table")
                and i.dataset.name.endswith(":test"))


def sweep_label(best: dict | None) -> str:
    """'study#trial' of the sweep whose best params a run used, or 'none'."""
    return f"{best['study']}#{best['trial']}" if best else "none"


def resumable_run_id(ckpt: Path, chash: str) -> str | None:
    """The MLflow run of an interrupted run with the same configuration, to continue it."""
    if not ckpt.exists():
        return None
    import torch
    ck = torch.load(ckpt, weights_only=False)
    return ck["state"].get("run_id") if ck["config_hash"] == chash else None


def run_key(chash: str, ctx: RunContext) -> str:
    """A finished run is reused only when config, table and code are the ones it ran with."""
    return hashlib.sha256(f"{chash}|{ctx.table_md5}|{ctx.code}".encode()).hexdigest()[:16]


def summarise(results: list[RunResult], seeds: list[int]) -> dict[str, Any]:
    """Mean and standard deviation over seeds of every final metric, plus the per-seed values."""
    out: dict[str, Any] = {}
    for key in results[0].final:
        vals = np.array([r.final[key] for r in results], dtype=float)
        out[key] = float(vals.mean())
        out[f"{key}_std"] = float(vals.std())
    out["seeds"] = seeds
    return out


RUN_TABLES = ("test_selections", "validation_points", "validation_choices")
"""A finished run's tables in its folder (besides result.json): the test choices of its
checkpoint, and each validation point's numbers and test choices."""


def run_dir(ctx: RunContext, method: str, seed: int) -> Path:
    return ctx.runs_root / method / ctx.reasoner / ctx.benchmark / f"seed{seed}"


def finished(ctx: RunContext, method: str, settings: Settings, seed: int) -> RunResult | None:
    """The run's result when it finished before with the same key (config, table, code)."""
    out_dir = run_dir(ctx, method, seed)
    done = out_dir / "result.json"
    if not done.exists():
        return None
    saved = json.loads(done.read_text())
    key = run_key(config_hash(settings.config, method, seed, ctx.run_data.table.meta), ctx)
    files = [out_dir / f"{name}.parquet" for name in RUN_TABLES]
    if saved.get("key") != key or not all(f.exists() for f in files):
        return None
    selections, points, choices = (pd.read_parquet(f) for f in files)
    return RunResult(final=saved["final"], history=saved["history"], selections=selections,
                     policy=None, run_id=saved.get("run_id"), model_uri=saved.get("model_uri"),
                     points=points, point_choices=choices)


def train_seed(ctx: RunContext, method: str, settings: Settings, seed: int) -> RunResult:
    """One run with `settings` (`fgpo.train.overrides.resolve`): read back when it finished
    before with the same key, else trained (resuming from its checkpoint), its MLflow run
    ended, its result written."""
    from fgpo.tracking import Tracker, end_if_running
    from fgpo.tracking.mlflow_run import deferred_sigterm

    cfg = settings.config
    out_dir = run_dir(ctx, method, seed)
    ckpt, done = out_dir / "checkpoint.pt", out_dir / "result.json"
    chash = config_hash(cfg, method, seed, ctx.run_data.table.meta)
    key = run_key(chash, ctx)
    if (cached := finished(ctx, method, settings, seed)) is not None:
        return cached
    done.unlink(missing_ok=True)  # another config, table or code: train afresh
    tracker = None
    try:  # from the run's creation on, an interrupt ends it KILLED
        if ctx.tracking:
            run_id = resumable_run_id(ckpt, chash)
            sidecar = out_dir / "mlflow_run_id"
            if run_id is None and sidecar.exists():
                # the previous attempt died before a checkpoint it could resume from
                end_if_running(sidecar.read_text().strip(), "KILLED")
            tracker = Tracker(EXPERIMENT, f"{method}-{ctx.reasoner}-{ctx.benchmark}-s{seed}",
                              tags={"method": method, "reasoner": ctx.reasoner,
                                    "benchmark": ctx.benchmark, "seed": str(seed),
                                    "setting": f"{ctx.reasoner}/{ctx.benchmark}",
                                    "device": str(resolve_device(cfg.device)),
                                    "git_commit": git_commit(), "table_md5": ctx.table_md5,
                                    "table_fingerprint": ctx.run_data.table.meta["fingerprint"],
                                    "sweep_best": sweep_label(settings.best),
                                    "tuned": settings.tuned,
                                    # each value set over params.yaml's, and by which file
                                    "overrides": ", ".join(f"{k}={v}" for k, v in sorted(
                                        settings.sources.items())) or "none",
                                    # the ablation's grouping keys, on every run
                                    "estimator": method,
                                    "tool_cost": str(ctx.run_data.table.meta.get("tool_cost")),
                                    # the frontier's grouping keys: its budget and tool count
                                    "budget_fraction": str(cfg.train_fraction),
                                    "K": str(len(ctx.run_data.tool_names))},
                              params={"method": method, "train": asdict(cfg),
                                      "tools": ctx.run_data.tool_names, "reasoner": ctx.reasoner,
                                      "benchmark": ctx.benchmark, "seed": seed},
                              run_id=run_id,
                              # the id on disk before anything else: a SIGKILL from here on
                              # leaves a run the next attempt ends KILLED
                              on_create=lambda rid: atomic_write_text(rid + "\n", sidecar))
            if run_id is None:  # a resumed run logged them when it was created
                tracker.log_inputs(ctx.inputs)
        result = train_run(method, cfg, ctx.run_data, seed, tracker, ckpt, keep_val_states=True)
        test, result.selections = evaluate_test(result.policy, ctx.run_data,
                                                cfg.zero_signal_group_size)
        result.final = {**test, **result.final, **ctx.baselines}
        result.points, result.point_choices = evaluate_validation_points(
            result.policy, ctx.run_data, result.val_states, result.history,
            cfg.zero_signal_group_size)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, table in zip(RUN_TABLES, (result.selections, result.points,
                                            result.point_choices)):
            atomic_write_parquet(table, out_dir / f"{name}.parquet")
        save_policy(result.policy, cfg.policy, ctx.run_data.tool_names, out_dir / "adapter")
        learning_curve(result.history, out_dir / "learning_curve.png",
                       f"{method} {ctx.reasoner}/{ctx.benchmark} seed {seed}")
        if tracker is not None:
            step = int(result.final["budget/optimizer_steps"])
            tracker.log_metrics({k: v for k, v in result.final.items()
                                 if k.startswith(("budget/", "baseline/", "checkpoint/"))}, step)
            for name in ("test_selections.parquet", "learning_curve.png"):
                tracker.log_artifact(out_dir / name)
            tracker.flush()
            # the policy as an MLflow model (the adapter inside): the run's Models column
            with deferred_sigterm():  # a kill lands after the store's writes, not inside
                model = log_policy(out_dir / "adapter", tracker.run_id, tracker.uri,
                                   int(result.final["checkpoint/step"]))
            result.run_id, result.model_uri = tracker.run_id, model.model_uri
            # test metrics are the model's too, measured on the table's test split
            tracker.log_metrics({k: v for k, v in result.final.items() if k.startswith("test/")},
                                step, model.model_id, table_test_input(ctx.inputs))
            tracker.end()
    except BaseException as exc:  # an error FAILED (e.g. diverged), an interrupt KILLED
        if tracker is not None:
            tracker.end("FAILED" if isinstance(exc, Exception) else "KILLED")
        raise
    atomic_write_text(json.dumps({"key": key, "final": result.final, "history": result.history,
                                  "run_id": result.run_id, "model_uri": result.model_uri})
                      + "\n", done)
    ckpt.unlink(missing_ok=True)  # finished: result.json stands for it from now on
    return result
