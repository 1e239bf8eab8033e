"""An Optuna study per (method, reasoner, benchmark): TPE + median pruning on validation accuracy.

One use of the study engine (`fgpo.sweep.engine`; storage and the recovery of a killed worker's
trial: `fgpo.sweep.storage`): workers join a study by name, from any number of processes and
hosts; the params.yaml defaults are its first trial. MLflow: one parent run per study, each
trial a nested run with its params, intermediate and final metrics and its Optuna state.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import optuna

from fgpo.config import check_number
from fgpo.errors import InputError
from fgpo.rewards.table import RunData
from fgpo.sweep.engine import (TrialSeededTPE, open_study, optimize, parent_run, tag_shared_run,
                               trial_run)
from fgpo.sweep.space import Dimension, parse_space, space_hash
from fgpo.sweep.storage import open_storage, recover_dead_workers, storage_url
from fgpo.tracking.provenance import SWEEP_EXPERIMENT
from fgpo.train.config import TrainConfig
from fgpo.train.loop import train_run
from fgpo.train.overrides import apply

OBJECTIVE = "val/accuracy"


@dataclass
class SweepConfig:
    """`sweep:` section of params.yaml."""

    n_trials: int = 8
    """Trials per `fgpo sweep` call (each worker process runs this many)."""
    seed: int = 0
    """TPE sampler seed: trial n draws from seed + n, so parallel workers differ and one
    worker's study is reproducible."""
    epochs: int = 1
    """Passes over the train split per trial (fewer than train.epochs so a sweep fits in CPU
    minutes); the same question visits for every method, as in training."""
    evals_per_epoch: int = 3
    """Validation (and pruning) points per epoch of a trial."""
    storage: str = "sqlite:///sweeps/optuna.db"
    """SQLAlchemy URL of the study storage, e.g. postgresql://user@host/db (workers on many
    hosts), or a file path such as sweeps/optuna.log (Optuna's JournalStorage: workers on one
    host, no server). `--storage` and then the environment variable FGPO_OPTUNA_STORAGE
    override it. Keep passwords out of params.yaml:
    name the variable holding it in `storage_password_env`. Logged and printed redacted."""
    storage_password_env: str = ""
    """Name of an environment variable holding the storage password, inserted into the URL's
    user info at connect time (e.g. FGPO_OPTUNA_PASSWORD); "" = none."""
    n_startup_trials: int = 3
    """MedianPruner: trials that complete before pruning starts."""
    n_warmup_steps: int = 10
    """MedianPruner: steps of a trial before it can be pruned."""
    multi_objective: bool = False
    """Maximise val accuracy and minimise tools per question together (no pruning then:
    Optuna prunes single-objective studies only)."""
    heartbeat_interval: int = 30
    """Seconds between a running trial's heartbeats (RDB storages; a journal's workers share a
    host, where a dead worker's pid tells); a trial silent for grace_period is failed and
    re-queued once (a killed worker's trial is not lost)."""
    grace_period: int = 120
    apply_best: bool = False
    """The train stage trains each setting with the best params of its canonical study
    (<method>-<reasoner>-<benchmark>, recorded in sweeps/best.yaml, the one hand-off file from
    sweep to train) where one exists; a study under another --study-name keeps its best in its
    storage and its MLflow parent run, never in the hand-off. Read by the train stage itself
    (`fgpo.train.overrides.apply_best`)."""
    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    """name -> {type: float|int|categorical, low, high, log, choices}; names are dotted paths
    into the train section (learning_rate, policy.lora_r, grpo.clip_eps, ...)."""

    def __post_init__(self) -> None:
        for name in ("n_trials", "epochs", "evals_per_epoch", "n_startup_trials",
                     "n_warmup_steps", "heartbeat_interval", "grace_period"):
            check_number(getattr(self, name), f"sweep.{name}", "a whole number",
                         ge=0 if name in ("n_startup_trials", "n_warmup_steps") else 1,
                         integer=True)
        check_number(self.seed, "sweep.seed", "a whole number, e.g. 0", ge=0, integer=True)
        if self.heartbeat_interval < 1 or self.grace_period <= self.heartbeat_interval:
            raise InputError("need heartbeat_interval >= 1 and grace_period > heartbeat_interval",
                             field="sweep.grace_period")

    def dimensions(self, method: str) -> list[Dimension]:
        """The shared dimensions plus those of `method` (grpo.* only for GRPO)."""
        return [d for d in parse_space(self.space) if d.method() in (None, method)]


def study_name(method: str, reasoner: str, benchmark: str) -> str:
    return f"{method}-{reasoner}-{benchmark}"


STORAGE_ENV = "FGPO_OPTUNA_STORAGE"


def resolve_storage(cli: str | None, cfg: SweepConfig) -> str:
    """The storage URL actually used: --storage, else $FGPO_OPTUNA_STORAGE, else sweep.storage;
    then the password from `sweep.storage_password_env` when that names a variable."""
    return storage_url(cli, STORAGE_ENV, cfg.storage, cfg.storage_password_env, "sweep")


def default_trial(dims: list[Dimension], base: TrainConfig) -> dict[str, Any]:
    """The params.yaml value of each dimension that lies in its range (the first trial)."""
    out = {}
    for d in dims:
        value: Any = base
        for part in d.name.split("."):
            value = getattr(value, part)
        if isinstance(value, list):
            value = ",".join(value)
        inside = value in d.choices if d.type == "categorical" else d.low <= value <= d.high
        if inside:
            out[d.name] = value
    return out


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

    def flush(self) -> None:
        if self.mlflow_run is not None:
            self.mlflow_run.flush()


def run_sweep(method: str, reasoner: str, benchmark: str, train_cfg: TrainConfig,
              cfg: SweepConfig, data: RunData, n_trials: int, storage_url: str,
              name: str | None = None, tracking: bool = True) -> optuna.Study:
    """Run `n_trials` trials of the study (joining it if it exists); its best trial is tagged on
    the MLflow parent run (the caller hands a canonical study's best to training)."""
    dims = cfg.dimensions(method)
    name = name or study_name(method, reasoner, benchmark)
    storage = open_storage(storage_url, "sweep.storage", cfg.heartbeat_interval,
                           cfg.grace_period)
    directions = ["maximize", "minimize"] if cfg.multi_objective else ["maximize"]
    pruner = (optuna.pruners.NopPruner() if cfg.multi_objective else
              optuna.pruners.MedianPruner(n_startup_trials=cfg.n_startup_trials,
                                          n_warmup_steps=cfg.n_warmup_steps))
    study, created = open_study(
        name, storage, directions, TrialSeededTPE(cfg.seed, cfg.n_startup_trials), pruner,
        identity={"space_hash": space_hash(dims), "space": [asdict(d) for d in dims]},
        refuse=("search space", "use another --study-name or storage", "sweep.space"),
        first=default_trial(dims, train_cfg), directions_field="sweep.multi_objective")
    recover_dead_workers(study, storage)
    base = replace(train_cfg, epochs=cfg.epochs, evals_per_epoch=cfg.evals_per_epoch,
                   seeds=train_cfg.seeds[:1])
    tags = {"method": method, "reasoner": reasoner, "benchmark": benchmark, "study": name,
            "setting": f"{reasoner}/{benchmark}"}
    # the storage actually used (Tracker redacts its password)
    parent = parent_run(study, created, SWEEP_EXPERIMENT, f"sweep-{name}", tags,
                        {"sweep": asdict(replace(cfg, storage=storage_url)), "method": method},
                        tracking)

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        values = {d.name: d.suggest(trial) for d in dims}
        with trial_run(trial, parent, SWEEP_EXPERIMENT, f"{name}-trial{trial.number}", tags,
                       {"method": method, **values}) as run:
            result = train_run(method, apply(base, values), data, base.seeds[0],
                               TrialTracker(trial, run, prune=not cfg.multi_objective),
                               progress=False)
            if run is not None:
                run.log_metrics({k: v for k, v in result.final.items()
                                 if k.startswith(("val/", "test/", "budget/", "checkpoint/"))},
                                int(result.final["budget/optimizer_steps"]))
        acc, tools = result.final[OBJECTIVE], result.final["val/tools_per_question"]
        return (acc, tools) if cfg.multi_objective else acc

    optimize(study, objective, n_trials, parent, show_progress_bar=True)
    best = best_of(study)
    if parent is not None:
        if best is not None:
            parent.log_metrics({"best/" + OBJECTIVE: best["value"]}, len(study.trials))
            tag_shared_run(parent, {"best_trial": str(best["trial"]), "best_params":
                                    json.dumps(best["params"], sort_keys=True)[:5000]})
        else:
            tag_shared_run(parent, {"best_trial": "none (no trial completed)"})
        parent.end("FINISHED" if best is not None else "FAILED")
    return study


def best_of(study: optuna.Study) -> dict[str, Any] | None:
    """This study's best trial (single objective: best value; multi-objective: the Pareto
    trial with the highest accuracy), or None when no trial completed."""
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not done:
        return None
    best = study.best_trial if len(study.directions) == 1 else max(study.best_trials,
                                                                    key=lambda t: t.values[0])
    return {"study": study.study_name, "trial": best.number, "value": best.values[0],
            "params": best.params}
