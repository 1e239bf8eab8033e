"""One MLflow run per training run.

Default store: `sqlite:///<root>/mlruns/mlflow.db` with artifacts under `mlruns/artifacts`
(MLflow 3 refuses the old file store unless forced), where <root> is the DVC project
(`$DVC_ROOT`, which `dvc exp run --temp` and `--queue` point at the workspace, not at their
temporary copy, whose runs would be lost with it); `MLFLOW_TRACKING_URI` switches to a server.

MLflow does most of it: the client splits a batch into requests of MLflow's size, and
`resolve_tags` (what `mlflow.start_run` calls) adds the source, user and git commit tags, so the
runs table's Source column names the entry point and its commit. The fluent `start_run` itself is
not used: it keeps one active run per thread, while a sweep holds its study's run and a trial's
run open at once, and resumes them from other processes by id.

What MLflow's client does not do for us:
- a fresh SQLite store is created (schema migrations) by the first process that opens it; two
  processes starting together both migrate and one crashes, so `open_client` creates it under
  a file lock;
- processes writing one SQLite store side by side (`train.workers`) log a run's datasets under
  the store's lock (two inserting the same new dataset would collide);
- a SIGTERM (`sigterm_as_exit`) must not cut a store call in two: a SQLite write transaction
  cut by its SystemExit kept the store's write lock, and no process, itself included, could
  then end its run KILLED; the tracker's calls run whole (`Uninterrupted`);
- a resumed run must not log the metric points it already has (a kill after step 46 and a
  resume from the step-40 checkpoint would otherwise log steps 41..46 twice);
- credentials in params or tags (a storage URL with a password) are redacted before logging.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import mlflow
from filelock import FileLock
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import resolve_tags

from fgpo.redact import redact, redact_url

log = logging.getLogger(__name__)
MLRUNS = Path("mlruns")
TERMINAL = ("FINISHED", "FAILED", "KILLED")
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
"""Marks an experiment as model training: the UI opens it on the runs table (MLflow 3 otherwise
guesses, and lands an experiment without traces on the empty GenAI overview)."""


def project_mlruns(root: Path = MLRUNS) -> Path:
    """`root` inside the DVC project: under `dvc exp run --temp/--queue` the working directory
    is a temporary copy, and DVC points $DVC_ROOT at the project it came from."""
    if not root.is_absolute() and os.environ.get("DVC_ROOT"):
        return Path(os.environ["DVC_ROOT"]) / root
    return root.resolve()


def default_tracking_uri(root: Path = MLRUNS) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or \
        f"sqlite:///{project_mlruns(root) / 'mlflow.db'}"


def dvc_experiment_tags() -> dict[str, str]:
    """The DVC experiment a run belongs to (`dvc exp run` sets these; empty under `dvc repro`)."""
    env = {"dvc.exp_name": "DVC_EXP_NAME", "dvc.baseline_rev": "DVC_EXP_BASELINE_REV"}
    return {tag: os.environ[var] for tag, var in env.items() if os.environ.get(var)}


def store_lock(uri: str) -> FileLock | nullcontext:
    """The lock beside a SQLite store (its creation, a run's dataset inputs); a server: none."""
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        db.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(db) + ".lock", timeout=300)
    return nullcontext()


def retry_duplicate_key(call: Callable[[], Any], attempts: int = 4) -> Any:
    """`call()`, again after an insert lost to a concurrent one: two processes logging the same
    new row at once (a dataset two seeds read, a tag on a shared run) make an MLflow server on
    PostgreSQL fail the later insert with a duplicate key; on the retry the row exists and is
    reused or updated. Any other error is raised at once."""
    for attempt in range(attempts):
        try:
            return call()
        except mlflow.exceptions.MlflowException as exc:
            lost = "duplicate key" in str(exc) or "UNIQUE constraint failed" in str(exc)
            if attempt == attempts - 1 or not lost:
                raise
            time.sleep(0.2 * (attempt + 1))


def open_client(uri: str) -> MlflowClient:
    """A client whose store exists: a new SQLite store is created once, under a file lock; the
    project's own store, copied or moved with its checkout, is re-rooted (`reroot_artifacts`)."""
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        with store_lock(uri):
            client = MlflowClient(uri)
            client.search_experiments(max_results=1)  # creates and migrates the schema
            if db.resolve() == (project_mlruns() / "mlflow.db").resolve():
                reroot_artifacts(db, project_mlruns() / "artifacts")
        return client
    return MlflowClient(uri)


def reroot_artifacts(db: Path, artifacts: Path) -> str | None:
    """Point a moved store's artifact locations at `artifacts`, the folder beside it now.

    MLflow's SQLite store records absolute artifact URIs (experiments, runs, logged models,
    model versions), so a copied checkout would read and write its artifacts in the original
    tree. When the store's experiments name another `.../mlruns/artifacts`, every text cell that
    starts with that location (as a file URI or a path) is rewritten to start with `artifacts`
    instead; nothing else is touched. MLflow has no API for this, hence SQL on its own tables.
    Returns the old location when it re-rooted, else None."""
    import sqlite3

    new_uri = artifacts.resolve().as_uri()
    with sqlite3.connect(db) as con:
        olds = {row[0] for row in con.execute("SELECT artifact_location FROM experiments")
                if row[0] and row[0].startswith("file://") and row[0] != new_uri
                and row[0].rstrip("/").endswith("/mlruns/artifacts")}
        for old_uri in sorted(olds):
            old_path = old_uri[len("file://"):]
            pairs = [(old_uri, new_uri), (old_path, str(artifacts.resolve()))]
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                        ).fetchall():
                columns = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')
                           if "CHAR" in c[2].upper() or "TEXT" in c[2].upper()]
                for column, (old, new) in ((c, pair) for c in columns for pair in pairs):
                    # prefix match only (a path separator or the end after it), by length
                    con.execute(f'UPDATE "{table}" SET "{column}" = ? || substr("{column}", ?) '
                                f'WHERE substr("{column}", 1, ?) = ? AND (length("{column}") '
                                f'= ? OR substr("{column}", ?, 1) = \'/\')',
                                (new, len(old) + 1, len(old), old, len(old), len(old) + 1))
            log.info("MLflow store %s was made at %s: artifact locations re-rooted to %s",
                     db, old_uri, new_uri)
    return sorted(olds)[0] if olds else None


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def end_if_running(run_id: str, status: str = "KILLED", uri: str | None = None) -> bool:
    """Mark an orphaned run (its process died) as ended; True when it was still RUNNING."""
    client = open_client(uri or default_tracking_uri())
    try:
        run = client.get_run(run_id)
    except mlflow.exceptions.MlflowException:
        return False
    if run.info.status in TERMINAL:
        return False
    client.set_tag(run_id, "orphaned", "process ended before the run did")
    client.set_terminated(run_id, status=status)
    return True


@contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (a scheduler or `kill`) raises SystemExit, so runs end as KILLED, not RUNNING.

    One SIGTERM, one orderly end: the handler ignores the signals that follow while the runs are
    ended (the kernel sends a worker's parent-death signal again as each thread of its dying
    parent exits, which would cut the ending short). A SystemExit raised while Python runs a
    `__del__` or a weakref callback is dropped by the interpreter ("Exception ignored in ..."):
    the unraisable hook sees it and sends the signal again, so it lands in the code proper."""
    code = 128 + signal.SIGTERM

    def handler(signum, frame):  # noqa: ARG001
        signal.signal(signum, signal.SIG_IGN)
        if _DEFERRED["depth"]:  # inside `deferred_sigterm`: raised when the block ends
            _DEFERRED["pending"] = 128 + signum
            return
        raise SystemExit(128 + signum)

    def unraisable(info) -> None:
        hook(info)
        if isinstance(info.exc_value, SystemExit) and info.exc_value.code == code:
            signal.signal(signal.SIGTERM, handler)
            # from another thread: sent from here, it could be raised in this hook and dropped
            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGTERM)).start()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield
    finally:
        sys.unraisablehook = hook
        signal.signal(signal.SIGTERM, previous)


_DEFERRED = {"depth": 0, "pending": None}


@contextmanager
def deferred_sigterm() -> Iterator[None]:
    """Under `sigterm_as_exit`, a SIGTERM inside this block raises its SystemExit when the
    block ends: a run being created (MLflow's `create_run`) is then held by the caller, who
    ends it KILLED, instead of left RUNNING with an id nobody has."""
    _DEFERRED["depth"] += 1
    try:
        yield
    finally:
        _DEFERRED["depth"] -= 1
        if not _DEFERRED["depth"] and (pending := _DEFERRED["pending"]) is not None:
            _DEFERRED["pending"] = None
            raise SystemExit(pending)


class Uninterrupted:
    """`client` whose every call runs whole (`deferred_sigterm`): a SIGTERM arriving inside one
    is raised when it returns, never inside MLflow's or SQLAlchemy's code."""

    def __init__(self, client: MlflowClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def whole(*args: Any, **kwargs: Any) -> Any:
            with deferred_sigterm():
                return attr(*args, **kwargs)
        return whole


FLUSH_AT = 1000
"""Metrics buffered before a write (MLflow's limit per log_batch request)."""


def experiment_id(client: MlflowClient, name: str, root: Path = MLRUNS, uri: str = "") -> str:
    """The id of experiment `name`, created when missing (artifacts beside a SQLite store) and
    marked as a model-training experiment."""
    exp = client.get_experiment_by_name(name)
    if exp is None:
        artifacts = (project_mlruns(root) / "artifacts").as_uri() if uri.startswith("sqlite") \
            else None
        try:
            return client.create_experiment(name, artifact_location=artifacts,
                                            tags=EXPERIMENT_KIND)
        except mlflow.exceptions.MlflowException:  # another worker created it meanwhile
            exp = client.get_experiment_by_name(name)
    for key, value in EXPERIMENT_KIND.items():  # a store from before the kind was set
        if exp.tags.get(key) != value:
            client.set_experiment_tag(exp.experiment_id, key, value)
    return exp.experiment_id


class Tracker:
    """A thin wrapper: start (or resume) a run, log batched metrics, artifacts, end."""

    def __init__(self, experiment: str, run_name: str, tags: dict[str, str],
                 params: dict[str, Any], uri: str | None = None, run_id: str | None = None,
                 root: Path = MLRUNS, parent_run_id: str | None = None,
                 on_create: Callable[[str], None] | None = None) -> None:
        """`on_create(run_id)` runs the moment a new run exists, before anything is logged to
        it: a caller that records the id there (to end the run after a SIGKILL) loses none."""
        self.uri = uri or default_tracking_uri(root)
        self.client = Uninterrupted(open_client(self.uri))
        self._logged: set[tuple[str, int]] = set()
        self._pending: list[mlflow.entities.Metric] = []
        exp_id = self._experiment_id(experiment, root)
        if run_id is None:
            all_tags = {k: str(v) for k, v in redact(dict(tags)).items()}
            all_tags.update(dvc_experiment_tags())
            if parent_run_id:
                all_tags["mlflow.parentRunId"] = parent_run_id
            run_id = None
            try:
                with deferred_sigterm():
                    run_id = self.client.create_run(exp_id, run_name=run_name,
                                                    tags=resolve_tags(all_tags)).info.run_id
                if on_create is not None:
                    on_create(run_id)
                flat = flatten(redact(params))
                items = [mlflow.entities.Param(k, str(v)[:6000]) for k, v in flat.items()]
                self.client.log_batch(run_id, params=items)  # the client splits it
            except BaseException as exc:  # before the caller holds the run: end it here
                if run_id is not None:
                    self.client.set_terminated(
                        run_id, status="FAILED" if isinstance(exc, Exception) else "KILLED")
                raise
        else:  # resume: remember what is logged so that no point is logged twice
            for key in self.client.get_run(run_id).data.metrics:
                self._logged.update((key, m.step)
                                    for m in self.client.get_metric_history(run_id, key))
            self.client.update_run(run_id, status="RUNNING")
        self.run_id = run_id

    def __repr__(self) -> str:
        return f"Tracker(uri={redact_url(self.uri)!r}, run_id={self.run_id!r})"

    def _experiment_id(self, name: str, root: Path) -> str:
        return experiment_id(self.client, name, root, self.uri)

    def log_inputs(self, datasets: list[mlflow.entities.DatasetInput]) -> None:
        """The datasets the run read (the runs table's Dataset column). Two processes inserting
        the same new dataset collide: a SQLite store is written under its lock, a server's
        losing insert is retried (the dataset then exists and is linked)."""
        with store_lock(self.uri):
            retry_duplicate_key(lambda: self.client.log_inputs(self.run_id, datasets=datasets))

    def log_metrics(self, metrics: dict[str, float], step: int, model_id: str | None = None,
                    dataset: mlflow.entities.DatasetInput | None = None) -> None:
        """Buffered: written when `FLUSH_AT` metrics wait, on `flush()` (the training loop calls
        it before each checkpoint, so a resumed run misses no point) and on `end()`. One
        sqlite transaction per step cost about as much as a training step. With `model_id`
        and `dataset` the metrics are also the logged model's, measured on that dataset (its
        page's metrics and "Datasets used")."""
        ts = int(time.time() * 1000)
        data = dataset.dataset if dataset is not None else None
        self._pending += [mlflow.entities.Metric(k, float(v), ts, step, model_id=model_id,
                                                 dataset_name=data and data.name,
                                                 dataset_digest=data and data.digest)
                          for k, v in metrics.items() if (k, step) not in self._logged]
        if len(self._pending) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            self.client.log_batch(self.run_id, metrics=pending)  # the client splits it

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        if Path(path).is_dir():
            self.client.log_artifacts(self.run_id, str(path), artifact_path)
        else:
            self.client.log_artifact(self.run_id, str(path), artifact_path)

    def set_tags(self, tags: dict[str, str]) -> None:
        for k, v in redact(dict(tags)).items():
            self.client.set_tag(self.run_id, k, v)

    def end(self, status: str = "FINISHED") -> None:
        try:
            self.flush()
        finally:  # a failed write of the last points still ends the run
            self.client.set_terminated(self.run_id, status=status)
