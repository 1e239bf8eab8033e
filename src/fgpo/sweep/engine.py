"""The study engine the sweeps (`fgpo.sweep.study`) and the tuning (`fgpo.sweep.tune`) share:
create or join a study, seed its sampler per trial, run one trial inside its nested MLflow run,
and keep the study's parent run.

Workers are safe in parallel: the one whose `create_study` wins sets the study up (what makes
its trials comparable, recorded as user attributes; a first trial enqueued; the MLflow parent
run) while the others wait for it. TPE runs with `constant_liar` (running trials count as bad,
so workers spread out) and draws trial n's randomness from seed + n: trial numbers are handed
out by the storage one at a time, so workers started together never propose alike, and one
worker's study is reproducible. Storage and the recovery of a killed worker's trial are
`fgpo.sweep.storage`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import optuna

from fgpo.errors import InputError

log = logging.getLogger(__name__)


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


def open_study(name: str, storage: Any, directions: list[str],
               sampler: optuna.samplers.BaseSampler, pruner: optuna.pruners.BasePruner,
               identity: dict[str, Any], refuse: tuple[str, str, str],
               first: dict[str, Any] | None = None, directions_field: str | None = None
               ) -> tuple[optuna.Study, bool]:
    """Create or join the study (and whether this worker created it). The creator records
    `identity` (what makes the study's trials comparable: its space, its budget) and enqueues
    `first`; a study made with other directions or another identity is refused with
    `refuse` = (what the identity is, how to fix it, the params field; `directions_field`
    names the setting that chose the directions, when another does)."""
    study, created = create_or_join(name, storage, directions, sampler, pruner)
    what, fix, field = refuse
    if created:
        for key, value in identity.items():
            study.set_user_attr(key, value)
        if first:
            study.enqueue_trial(first)
        return study, True
    have = [d.name.lower() for d in study.directions]
    if have != directions:
        raise InputError(f"study {name!r} exists with directions {have}, not {directions}; "
                         f"{fix}", field=directions_field or field)
    attrs = wait_until_ready(study)
    differ = {k: attrs.get(k) for k, v in identity.items() if attrs.get(k) != v}
    if differ:
        raise InputError(f"study {name!r} exists with another {what} ({differ}); {fix}",
                         field=field)
    return study, False


def tag_shared_run(run: Any, tags: dict[str, str]) -> None:
    """Tag the study's parent run, which every worker shares: workers ending together set the
    same tags at once, and an MLflow server on PostgreSQL fails the losing insert (a duplicate
    `tag_pk` key); setting them again then updates (`retry_duplicate_key`)."""
    from fgpo.tracking.mlflow_run import retry_duplicate_key
    retry_duplicate_key(lambda: run.set_tags(tags))


def parent_run(study: optuna.Study, created: bool, experiment: str, name: str,
               tags: dict[str, str], params: dict[str, Any], tracking: bool) -> Any:
    """The study's MLflow parent run, shared by its workers (the creator starts it, a joiner or
    a resumed study continues it), or None without tracking; then marks the study set up."""
    from fgpo.tracking import Tracker

    parent = None
    parent_id = None if created else study.user_attrs.get(READY) or None
    if tracking:
        parent = Tracker(experiment, name, {**tags, "kind": "study"}, params, run_id=parent_id)
        parent_id = parent.run_id
    if created or (parent_id and not study.user_attrs.get(READY)):
        study.set_user_attr(READY, parent_id or "")  # set up: the joiners may go on
    return parent


@contextmanager
def trial_run(trial: optuna.Trial, parent: Any, experiment: str, name: str,
              tags: dict[str, str], params: dict[str, Any]) -> Iterator[Any]:
    """One trial inside its nested MLflow run (None without a parent run): the worker is
    recorded (host:pid, for the recovery of a killed one); the run ends with the trial's
    Optuna state: COMPLETE, PRUNED (KILLED), FAIL (FAILED) or interrupted (KILLED)."""
    from fgpo.tracking import Tracker

    trial.set_user_attr("worker", f"{socket.gethostname()}:{os.getpid()}")
    run = None
    if parent is not None:
        run = Tracker(experiment, name, {**tags, "kind": "trial", "trial": str(trial.number)},
                      params, parent_run_id=parent.run_id)
        trial.set_user_attr("mlflow_run_id", run.run_id)
    try:
        yield run
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
    if run is not None:
        run.set_tags({"optuna_state": "COMPLETE"})
        run.end()


def optimize(study: optuna.Study, objective: Any, n_trials: int, parent: Any,
             **kwargs: Any) -> None:
    """`study.optimize` with failed trials caught (the study goes on) and the parent run ended
    KILLED if the worker is interrupted."""
    try:
        study.optimize(objective, n_trials=n_trials, catch=(Exception,), gc_after_trial=True,
                       **kwargs)
    except BaseException:
        if parent is not None:
            parent.end("KILLED")
        raise
