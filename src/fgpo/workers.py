"""Worker processes forked from a stage's process: the runs of a setting (`fgpo.runs.setting`)
and the methods' tuning studies (`fgpo.stages.tune`) side by side.

A worker is forked after the parent has loaded what every worker reads (tables, the frozen
layers' states), so none of it is copied or pickled. It ends with its parent: a parent that is
killed outright (SIGKILL) cannot end its workers itself, so each asks the kernel for SIGTERM when
the parent dies (Linux's PR_SET_PDEATHSIG), which `fgpo.tracking.sigterm_as_exit`, inherited
through the fork, turns into an orderly end (an MLflow run ends KILLED, not RUNNING for good).
Database connections the parent may hold are not used across the fork: SQLAlchemy's rule is to
dispose the inherited pool without closing the parent's connections.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.pool
import os
import signal

PR_SET_PDEATHSIG = 1


def fork_pool(processes: int, maxtasksperchild: int | None = None) -> multiprocessing.pool.Pool:
    """A pool of `processes` forked workers that end with this process."""
    return multiprocessing.get_context("fork").Pool(
        processes, initializer=_start, initargs=(os.getpid(),),
        maxtasksperchild=maxtasksperchild)


def _start(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown ends the workers
        pass
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
        engines = list(getattr(SqlAlchemyStore, "_engine_map", {}).values())
    except ImportError:
        engines = []
    for engine in engines:
        engine.dispose(close=False)
