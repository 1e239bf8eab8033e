"""Where studies live, shared by the sweeps and the tuning: the storage URL (a command's
`--storage`, then an environment variable, then params.yaml; the password from the variable
`storage_password_env` names), the storage itself (an SQLAlchemy URL with heartbeats: SQLite by
default, PostgreSQL for many workers on many machines; or a file path: Optuna's JournalStorage,
several processes on one host, no server), and the recovery of a killed worker's trial.

A killed worker's trial is failed and re-queued once (with the same params), and its MLflow run
marked FAILED, in one of two ways:
- heartbeats: any worker of the study that starts a trial fails the trials whose heartbeat is
  older than the grace period (Optuna's stale-trial check);
- at start-up, a worker fails at once the RUNNING trials of a worker process on the same host
  that no longer exists, so a single worker restarted after a kill retries the killed trial
  first, without waiting out the grace period.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend
from sqlalchemy.exc import IntegrityError, ProgrammingError

from fgpo.errors import InputError
from fgpo.redact import redact_text, redact_url, url_with_password_from_env
from fgpo.tracking.mlflow_run import store_lock

log = logging.getLogger(__name__)


def storage_url(cli: str | None, env_var: str, configured: str, password_env: str,
                section: str) -> str:
    """The storage URL actually used: `cli`, else $`env_var`, else `configured` (the params
    value); then the password from the variable `password_env` names, when it names one."""
    url = cli or os.environ.get(env_var) or configured
    return url_with_password_from_env(url, password_env, section)


class RetryAndEndRun(RetryHeartbeatStaleTrialCallback):
    """Optuna's retry of a stale trial, plus: the trial's nested MLflow run is marked FAILED."""

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        super().__call__(study, trial)
        end_trial_run(trial)


def end_trial_run(trial: optuna.trial.FrozenTrial) -> None:
    run_id = trial.user_attrs.get("mlflow_run_id")
    if run_id:
        from fgpo.tracking import end_if_running
        try:
            end_if_running(run_id, "FAILED")
        except Exception as exc:  # noqa: BLE001 - the study must go on without MLflow
            log.warning("could not end MLflow run %s of trial %d: %s", run_id, trial.number,
                        redact_text(str(exc))[:200])


def open_storage(url: str, field: str, heartbeat_interval: int = 30, grace_period: int = 120
                 ) -> RDBStorage | JournalStorage:
    """The RDB storage for a URL (a trial silent for `grace_period` seconds, with heartbeats
    every `heartbeat_interval`, is failed and re-queued once), Optuna's journal for a file
    path; an unreachable or invalid one is a clear error naming `field`, the params key it came
    from."""
    if "://" not in url:
        path = Path(url)
        if path.is_dir():
            raise InputError("a journal storage is a file, not a folder", file=url, field=field)
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    # processes opening a new SQLite file together would each create Optuna's tables and all
    # but one fail (`table alembic_version already exists`): one creates, under a lock
    lock = store_lock(url)
    try:
        for attempt in range(3):
            try:
                with lock:
                    return RDBStorage(url, heartbeat_interval=heartbeat_interval,
                                      grace_period=grace_period,
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
        end_trial_run(t)
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
