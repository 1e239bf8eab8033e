"""An Optuna study per (method, reasoner, benchmark): TPE + median pruning on validation accuracy.

Storage is any SQLAlchemy URL (default an SQLite file in the repo; PostgreSQL for many workers on
many machines); the same study resumes with `load_if_exists`. Heartbeats mark the trial of a
killed worker as failed and re-queue it once. MLflow: one parent run per study, each trial a
nested run with its params, intermediate and final metrics and its Optuna state.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

from fgpo.errors import InputError
from fgpo.seqio import atomic_write_text
from fgpo.sweep.space import Dimension, apply, parse_space, space_hash
from fgpo.train.config import TrainConfig
from fgpo.train.loop import RunData, train_run

OBJECTIVE = "val/accuracy"


@dataclass
class SweepConfig:
    """`sweep:` section of params.yaml."""

    n_trials: int = 8
    """Trials per `fgpo sweep` call (each worker process runs this many)."""
    seed: int = 0
    """TPE sampler seed (a worker joining a study offsets it by the trials already there)."""
    steps: int = 40
    """Optimiser steps per trial (shorter than train.steps so a sweep fits in CPU minutes)."""
    eval_every: int = 10
    """Validation (and pruning) every N steps of a trial."""
    storage: str = "sqlite:///sweeps/optuna.db"
    """SQLAlchemy URL of the study storage, e.g. postgresql://user:pass@host/db."""
    n_startup_trials: int = 3
    """MedianPruner: trials that complete before pruning starts."""
    n_warmup_steps: int = 10
    """MedianPruner: steps of a trial before it can be pruned."""
    multi_objective: bool = False
    """Maximise val accuracy and minimise tools per question together (no pruning then:
    Optuna prunes single-objective studies only)."""
    heartbeat_interval: int = 30
    """Seconds between a running trial's heartbeats; a trial silent for grace_period is failed
    and re-queued once (a killed worker's trial is not lost)."""
    grace_period: int = 120
    apply_best: bool = False
    """The train stage trains each setting with its study's best params
    (sweeps/best/<method>/<reasoner>/<benchmark>.json) where one exists."""
    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    """name -> {type: float|int|categorical, low, high, log, choices}; names are dotted paths
    into the train section (learning_rate, policy.lora_r, grpo.clip_eps, ...)."""

    def __post_init__(self) -> None:
        if self.n_trials < 1 or self.steps < 1 or self.eval_every < 1:
            raise InputError("n_trials, steps and eval_every must be >= 1", file="params.yaml",
                             field="sweep")

    def dimensions(self, method: str) -> list[Dimension]:
        """The shared dimensions plus those of `method` (grpo.* only for GRPO)."""
        return [d for d in parse_space(self.space) if d.method() in (None, method)]


def study_name(method: str, reasoner: str, benchmark: str) -> str:
    return f"{method}-{reasoner}-{benchmark}"


def open_storage(url: str, cfg: SweepConfig) -> RDBStorage:
    """The RDB storage with heartbeats; an unreachable or invalid URL is a clear error."""
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    try:
        retry = RetryHeartbeatStaleTrialCallback(max_retry=1)
        return RDBStorage(url, heartbeat_interval=cfg.heartbeat_interval,
                          grace_period=cfg.grace_period, heartbeat_stale_trial_callback=retry,
                          engine_kwargs={"pool_pre_ping": True})
    except Exception as exc:  # SQLAlchemy raises many types; name the URL (without password)
        safe = url.split("@")[-1] if "@" in url else url
        raise InputError(f"cannot open study storage ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:200]})", file=safe,
                         field="sweep.storage") from None


def open_study(name: str, storage: RDBStorage, dims: list[Dimension], cfg: SweepConfig
               ) -> optuna.Study:
    """Create or load the study; refuse one made with another direction or search space."""
    directions = ["maximize", "minimize"] if cfg.multi_objective else ["maximize"]
    try:
        existing = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        existing = None
    # a worker joining later seeds its sampler differently, so workers do not propose alike
    offset = len(existing.trials) if existing is not None else 0
    sampler = optuna.samplers.TPESampler(seed=cfg.seed + offset,
                                         n_startup_trials=cfg.n_startup_trials)
    pruner = (optuna.pruners.NopPruner() if cfg.multi_objective else
              optuna.pruners.MedianPruner(n_startup_trials=cfg.n_startup_trials,
                                          n_warmup_steps=cfg.n_warmup_steps))
    if existing is not None:
        have = [d.name.lower() for d in existing.directions]
        if have != directions:
            raise InputError(f"study {name!r} exists with directions {have}, not {directions}; "
                             "use another --study-name or storage", field="sweep.multi_objective")
        if existing.user_attrs.get("space_hash") != space_hash(dims):
            raise InputError(f"study {name!r} exists with another search space "
                             f"({existing.user_attrs.get('space')}); use another --study-name",
                             field="sweep.space")
    study = optuna.create_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner,
                                directions=directions, load_if_exists=True)
    if existing is None:
        study.set_user_attr("space_hash", space_hash(dims))
        study.set_user_attr("space", [asdict(d) for d in dims])
    return study


class TrialTracker:
    """Logs a trial's metrics to its nested MLflow run and feeds val accuracy to the pruner."""

    run_id = None

    def __init__(self, trial: optuna.Trial, mlflow_run, prune: bool) -> None:
        self.trial, self.mlflow_run, self.prune = trial, mlflow_run, prune

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if self.mlflow_run is not None:
            self.mlflow_run.log_metrics(metrics, step)
        if OBJECTIVE in metrics and step > 0:
            self.trial.report(metrics[OBJECTIVE], step)
            if self.prune and self.trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {step}")


def run_sweep(method: str, reasoner: str, benchmark: str, train_cfg: TrainConfig,
              cfg: SweepConfig, data: RunData, n_trials: int, storage_url: str,
              name: str | None = None, best_out: Path | None = None,
              tracking: bool = True) -> optuna.Study:
    """Run `n_trials` trials of the study (joining it if it exists) and write its best params."""
    from fgpo.tracking import Tracker

    dims = cfg.dimensions(method)
    name = name or study_name(method, reasoner, benchmark)
    storage = open_storage(storage_url, cfg)
    study = open_study(name, storage, dims, cfg)
    base = replace(train_cfg, steps=cfg.steps, eval_every=cfg.eval_every,
                   checkpoint_every=cfg.steps, seeds=train_cfg.seeds[:1])
    tags = {"method": method, "reasoner": reasoner, "benchmark": benchmark, "study": name,
            "setting": f"{reasoner}/{benchmark}"}
    parent = None
    if tracking:
        parent_id = study.user_attrs.get("mlflow_parent_run_id")
        parent = Tracker("fgpo-sweeps", f"sweep-{name}", {**tags, "kind": "study"},
                         {"sweep": asdict(cfg), "method": method}, run_id=parent_id)
        if parent_id is None:
            study.set_user_attr("mlflow_parent_run_id", parent.run_id)

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        values = {d.name: d.suggest(trial) for d in dims}
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        run = None
        if tracking:
            run = Tracker("fgpo-sweeps", f"{name}-trial{trial.number}",
                          {**tags, "kind": "trial", "trial": str(trial.number)},
                          {"method": method, **values}, parent_run_id=parent.run_id)
            trial.set_user_attr("mlflow_run_id", run.run_id)
        try:
            result = train_run(method, apply(base, values), data, base.seeds[0],
                               TrialTracker(trial, run, prune=not cfg.multi_objective),
                               progress=False)
        except optuna.TrialPruned:
            if run is not None:
                run.set_tags({"optuna_state": "PRUNED"})
                run.end("KILLED")
            raise
        except Exception as exc:
            if run is not None:
                run.set_tags({"optuna_state": "FAIL", "error": f"{type(exc).__name__}: {exc}"[:500]})
                run.end("FAILED")
            raise
        acc, tools = result.final[OBJECTIVE], result.final["val/tools_per_question"]
        if run is not None:
            run.log_metrics({k: v for k, v in result.final.items()
                             if k.startswith(("val/", "test/", "budget/"))}, cfg.steps)
            run.set_tags({"optuna_state": "COMPLETE"})
            run.end()
        return (acc, tools) if cfg.multi_objective else acc

    study.optimize(objective, n_trials=n_trials, catch=(Exception,), gc_after_trial=True,
                   show_progress_bar=True)
    best = write_best(study, best_out) if best_out else None
    if parent is not None and best is not None:
        parent.log_metrics({"best/" + OBJECTIVE: best["value"]}, len(study.trials))
        parent.set_tags({"best_trial": str(best["trial"]),
                         "best_params": json.dumps(best["params"], sort_keys=True)[:5000]})
        parent.end()
    return study


def write_best(study: optuna.Study, path: Path) -> dict[str, Any] | None:
    """The best trial's params as JSON for `train.sweep_best` (single objective: best value;
    multi-objective: the Pareto trial with the highest accuracy)."""
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return None
    best = study.best_trial if len(study.directions) == 1 else max(study.best_trials,
                                                                    key=lambda t: t.values[0])
    out = {"study": study.study_name, "trial": best.number, "value": best.values[0],
           "params": best.params}
    atomic_write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", path)
    return out
