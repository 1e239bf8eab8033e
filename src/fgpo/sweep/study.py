"""An Optuna study per (method, reasoner, benchmark): TPE + median pruning on validation accuracy.

Storage is a SQLAlchemy URL (default an SQLite file in the repo; PostgreSQL for many workers on
many machines) or a file path (Optuna's JournalStorage: several processes on one host, no
server); a study resumes by name. MLflow: one parent run per study, each trial a nested run with
its params, intermediate and final metrics and its Optuna state.

Workers are safe in parallel: the one whose `create_study` wins sets the study up (space, the
params.yaml defaults enqueued as the first trial, the MLflow parent run) while the others wait
for it; TPE runs with `constant_liar` (running trials count as bad, so workers spread out) and
draws trial n's randomness from seed + n (trial numbers are handed out by the storage one at a
time, so workers started together never propose alike, and one worker's study is reproducible).

A killed worker's trial is failed and re-queued once (with the same params), and its MLflow run
marked FAILED, in one of two ways:
- heartbeats: any worker of the study that starts a trial fails the trials whose heartbeat is
  older than `grace_period` (Optuna's stale-trial check);
- at start-up, a worker fails at once the RUNNING trials of a worker process on the same host
  that no longer exists, so a single worker restarted after a kill retries the killed trial
  first, without waiting out the grace period.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend
from sqlalchemy.exc import IntegrityError, ProgrammingError

from fgpo.config import check_number
from fgpo.errors import InputError
from fgpo.redact import redact_text, redact_url, url_with_password_from_env
from fgpo.rewards.table import RunData
from fgpo.sweep.space import Dimension, parse_space, space_hash
from fgpo.tracking.provenance import SWEEP_EXPERIMENT
from fgpo.train.config import TrainConfig
from fgpo.train.loop import train_run
from fgpo.train.overrides import apply

log = logging.getLogger(__name__)

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
    url = cli or os.environ.get(STORAGE_ENV) or cfg.storage
    return url_with_password_from_env(url, cfg.storage_password_env)


class RetryAndEndRun(RetryHeartbeatStaleTrialCallback):
    """Optuna's retry of a stale trial, plus: the trial's nested MLflow run is marked FAILED."""

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        super().__call__(study, trial)
        _end_trial_run(trial)


def _end_trial_run(trial: optuna.trial.FrozenTrial) -> None:
    run_id = trial.user_attrs.get("mlflow_run_id")
    if run_id:
        from fgpo.tracking import end_if_running
        try:
            end_if_running(run_id, "FAILED")
        except Exception as exc:  # noqa: BLE001 - the study must go on without MLflow
            log.warning("could not end MLflow run %s of trial %d: %s", run_id, trial.number,
                        redact_text(str(exc))[:200])


def open_storage(url: str, cfg: SweepConfig, field: str = "sweep.storage"
                 ) -> RDBStorage | JournalStorage:
    """The RDB storage with heartbeats for a URL, Optuna's journal for a file path; an
    unreachable or invalid one is a clear error naming `field`, the params key it came from."""
    if "://" not in url:
        path = Path(url)
        if path.is_dir():
            raise InputError("a journal storage is a file, not a folder", file=url, field=field)
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    try:
        for attempt in range(3):
            try:
                return RDBStorage(url, heartbeat_interval=cfg.heartbeat_interval,
                                  grace_period=cfg.grace_period,
                                  heartbeat_stale_trial_callback=RetryAndEndRun(max_retry=1),
                                  engine_kwargs={"pool_pre_ping": True})
            except (IntegrityError, ProgrammingError):
                # workers started together on a new database race to create Optuna's tables
                # (PostgreSQL: a duplicate pg_type key); the loser finds them made a moment later
                if attempt == 2:
                    raise
                log.info("study storage: tables being created by another worker; retrying")
                time.sleep(1.0 + attempt)
    except Exception as exc:  # SQLAlchemy raises many types; name the URL (without password)
        raise InputError(f"cannot open study storage ({type(exc).__name__}: "
                         f"{redact_text(str(exc).splitlines()[0])[:200]})", file=redact_url(url),
                         field=field) from None


def recover_dead_workers(study: optuna.Study, storage: optuna.storages.BaseStorage
                         ) -> list[int]:
    """Fail (and re-queue once) the RUNNING trials of dead worker processes on this host.

    Trials record their worker as host:pid; on the same host a pid that no longer exists is a
    killed worker. Other hosts' trials are left to the heartbeat check. Returns trial numbers.
    """
    host, failed = socket.gethostname(), []
    study_id = storage.get_study_id_from_name(study.study_name)
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker_host, _, pid = str(t.user_attrs.get("worker", "")).rpartition(":")
        if worker_host != host or not pid.isdigit() or _pid_alive(int(pid)):
            continue
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
        try:
            if not storage.set_trial_state_values(trial_id, state=optuna.trial.TrialState.FAIL):
                continue
        except optuna.exceptions.UpdateFinishedTrialError:  # another worker got there first
            continue
        frozen = storage.get_trial(trial_id)
        RetryAndEndRun(max_retry=1)(study, frozen)
        failed.append(t.number)
        log.info("study %s: trial %d of dead worker %s failed and re-queued", study.study_name,
                 t.number, t.user_attrs.get("worker"))
    # trials failed by the heartbeat check in a process that died before ending their runs
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,)):
        _end_trial_run(t)
    return failed


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class TrialSeededTPE(optuna.samplers.TPESampler):
    """TPE with `constant_liar` whose randomness for trial n is seeded with seed + n.

    A sampler's seed is per process; workers that share a seed propose the same startup trials,
    and an offset read from the storage races when they start together. Trial numbers come from
    the storage, one per trial, so seeding from them is race-free. (Optuna 5.1's TPE keeps its
    generators in `_rng` and `_random_sampler._rng`; optuna is pinned.)"""

    def __init__(self, seed: int, n_startup_trials: int) -> None:
        super().__init__(seed=seed, n_startup_trials=n_startup_trials, constant_liar=True)
        self.base_seed = seed

    def before_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        seed = (self.base_seed + trial.number) % 2**32
        self._rng.rng.seed(seed)
        self._random_sampler._rng.rng.seed(seed)
        super().before_trial(study, trial)


READY = "mlflow_parent_run_id"
"""The user attribute the study's creator sets last ("" without MLflow): joiners wait for it."""


def create_or_join(name: str, storage: Any, directions: list[str],
                   sampler: optuna.samplers.BaseSampler, pruner: optuna.pruners.BasePruner
                   ) -> tuple[optuna.Study, bool]:
    """The study and whether this process created it: of workers started together exactly one
    wins `create_study`, and only it sets the study up."""
    try:
        return optuna.create_study(study_name=name, storage=storage, sampler=sampler,
                                   pruner=pruner, directions=directions), True
    except optuna.exceptions.DuplicatedStudyError:
        return optuna.load_study(study_name=name, storage=storage, sampler=sampler,
                                 pruner=pruner), False


def wait_until_ready(study: optuna.Study, timeout: float = 120.0) -> dict[str, Any]:
    """The study's user attributes once its creator has set it up (or after `timeout`: a study
    whose creator died early is joined as it is)."""
    deadline, told = time.monotonic() + timeout, False
    while True:
        attrs = study.user_attrs
        # a study from before READY existed: set up, and trials ran (not only the enqueued one)
        resumed = "space_hash" in attrs and any(
            t.state != optuna.trial.TrialState.WAITING for t in study.get_trials(deepcopy=False))
        if READY in attrs or resumed or time.monotonic() > deadline:
            return attrs
        if not told:
            log.info("study %s: waiting for the worker that created it", study.study_name)
            told = True
        time.sleep(0.5)


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


def open_study(name: str, storage: Any, dims: list[Dimension], cfg: SweepConfig,
               first: dict[str, Any] | None = None) -> tuple[optuna.Study, bool]:
    """Create or join the study (whether this worker created it); the creator records the space
    and enqueues `first`; a study made with another direction or space is refused."""
    directions = ["maximize", "minimize"] if cfg.multi_objective else ["maximize"]
    sampler = TrialSeededTPE(cfg.seed, cfg.n_startup_trials)
    pruner = (optuna.pruners.NopPruner() if cfg.multi_objective else
              optuna.pruners.MedianPruner(n_startup_trials=cfg.n_startup_trials,
                                          n_warmup_steps=cfg.n_warmup_steps))
    study, created = create_or_join(name, storage, directions, sampler, pruner)
    if created:
        study.set_user_attr("space_hash", space_hash(dims))
        study.set_user_attr("space", [asdict(d) for d in dims])
        if first:
            study.enqueue_trial(first)
        return study, True
    have = [d.name.lower() for d in study.directions]
    if have != directions:
        raise InputError(f"study {name!r} exists with directions {have}, not {directions}; "
                         "use another --study-name or storage", field="sweep.multi_objective")
    attrs = wait_until_ready(study)
    if attrs.get("space_hash") != space_hash(dims):
        raise InputError(f"study {name!r} exists with another search space "
                         f"({attrs.get('space')}); use another --study-name", field="sweep.space")
    return study, False


def tag_shared_run(run: Any, tags: dict[str, str]) -> None:
    """Tag the study's parent run, which every worker shares: workers ending together set the
    same tags at once, and an MLflow server on PostgreSQL fails the losing insert (a duplicate
    `tag_pk` key); setting them again then updates. Any other error is raised at once."""
    from mlflow.exceptions import MlflowException
    for attempt in range(3):
        try:
            run.set_tags(tags)
            return
        except MlflowException as exc:
            if attempt == 2 or "duplicate key" not in str(exc):
                raise
            time.sleep(0.2 * (attempt + 1))


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
    from fgpo.tracking import Tracker

    dims = cfg.dimensions(method)
    name = name or study_name(method, reasoner, benchmark)
    storage = open_storage(storage_url, cfg)
    study, created = open_study(name, storage, dims, cfg, default_trial(dims, train_cfg))
    recover_dead_workers(study, storage)
    base = replace(train_cfg, epochs=cfg.epochs, evals_per_epoch=cfg.evals_per_epoch,
                   seeds=train_cfg.seeds[:1])
    tags = {"method": method, "reasoner": reasoner, "benchmark": benchmark, "study": name,
            "setting": f"{reasoner}/{benchmark}"}
    parent = None
    parent_id = None if created else study.user_attrs.get(READY) or None
    if tracking:
        # the storage actually used (Tracker redacts its password)
        logged = asdict(replace(cfg, storage=storage_url))
        parent = Tracker(SWEEP_EXPERIMENT, f"sweep-{name}", {**tags, "kind": "study"},
                         {"sweep": logged, "method": method}, run_id=parent_id)
        parent_id = parent.run_id
    if created or (parent_id and not study.user_attrs.get(READY)):
        study.set_user_attr(READY, parent_id or "")  # set up: the joiners may go on

    def objective(trial: optuna.Trial) -> float | tuple[float, float]:
        values = {d.name: d.suggest(trial) for d in dims}
        trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
        run = None
        if tracking:
            run = Tracker(SWEEP_EXPERIMENT, f"{name}-trial{trial.number}",
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
        except BaseException:  # Ctrl-C or SIGTERM: Optuna fails the trial, MLflow the run
            if run is not None:
                run.set_tags({"optuna_state": "FAIL", "error": "interrupted"})
                run.end("KILLED")
            raise
        acc, tools = result.final[OBJECTIVE], result.final["val/tools_per_question"]
        if run is not None:
            run.log_metrics({k: v for k, v in result.final.items()
                             if k.startswith(("val/", "test/", "budget/", "checkpoint/"))},
                            int(result.final["budget/optimizer_steps"]))
            run.set_tags({"optuna_state": "COMPLETE"})
            run.end()
        return (acc, tools) if cfg.multi_objective else acc

    try:
        study.optimize(objective, n_trials=n_trials, catch=(Exception,), gc_after_trial=True,
                       show_progress_bar=True)
    except BaseException:
        if parent is not None:
            parent.end("KILLED")
        raise
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
