"""`fgpo tune` (`make tune`): every method's equal-budget study on the tuning settings, and the
chosen values written to tune/tuned.yaml, the params file the train stage reads.

Writes tune/trials.csv (every trial of every method: state, objective, what it spent, its values;
what the report's tuning section reads) and, once every method has `tune.n_trials` COMPLETE trials,
tune/tuned.yaml. Both are committed; `make run` reads them and never tunes. The studies live in
`tune.storage` (git-ignored), so a killed `make tune` continues where it stopped. With
`tune.workers` > 1 the methods' studies run side by side, each in its own process forked after
the tuning settings' tables are read (each study is seeded per trial, so where it runs changes
nothing). `fgpo tune --method M` runs one method's study alone (in the background, or on
another machine sharing `tune.storage`); whichever process completes the last study writes
tune/tuned.yaml.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.rewards.data import load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import tool_names
from fgpo.seqio import atomic_write_text
from fgpo.sweep.handoff import dvc_stable
from fgpo.sweep.plateau import plateau_gain, still_improving
from fgpo.sweep.storage import open_storage
from fgpo.sweep.tune import (TuneConfig, chosen, complete, resolve_storage, run_tune,
                             study_name, trials_table)
from fgpo.train.config import TrainConfig
from fgpo.train.overrides import TUNED_PARAMS, read_tuned, resolve, write_tuned
from fgpo.train.settings import resolve_device
from fgpo.workers import fork_pool

TRIALS = Path("tune/trials.csv")
log = logging.getLogger(__name__)


def main(params: Path = DEFAULT_PARAMS, data: Path = Path("data"), storage: str | None = None,
         tuned: Path = TUNED_PARAMS, trials: Path = TRIALS, tracking: bool = True,
         methods: list[str] | None = None) -> dict[str, optuna.Study]:
    """Run (or resume) each method's study, or only those of `methods` (a study per process or
    machine, sharing `tune.storage`); write the trials and, once every method of tune.methods
    is done, the chosen values. Returns method -> study."""
    from fgpo.tracking import sigterm_as_exit

    cfg = load_section(TuneConfig, "tune", params)
    for method in methods or []:
        if method not in cfg.methods:
            raise InputError(f"method {method!r} has no study: tune.methods is {cfg.methods}",
                             file=str(params), field="tune.methods")
    running = methods or cfg.methods
    base = load_section(TrainConfig, "train", params)
    names = tool_names(params)
    runs = {}
    for reasoner, benchmark in cfg.pairs():
        run_data = load_run_data(reasoner, benchmark, names, data)
        require_trainable(run_data, base.allow_degenerate_table,
                          str(table_path(reasoner, benchmark, data / "reward_tables")))
        runs[f"{reasoner}/{benchmark}"] = run_data
    url = resolve_storage(storage, cfg)
    cfg.check_seeds(base.seeds)
    # tuning starts from params.yaml alone: never from earlier tuned values or a sweep's best
    starts = {m: resolve(base, m, params, upto="params").config for m in running}
    studies: dict[str, optuna.Study] = {}
    try:
        with sigterm_as_exit():
            run_studies(cfg, starts, runs, url, tracking)
    finally:  # what finished is on record even after a kill
        studies = load_studies(cfg.methods, url)
        if studies:
            write_trials(studies, trials)
    short = short_studies(studies, cfg)
    if any(m in short for m in running):
        raise InputError(f"studies ended with fewer than {cfg.n_trials} complete trials "
                         f"({short}; see {trials}): tune/tuned.yaml left as it was; rerun "
                         "`make tune` to continue", field="tune")
    if short:  # another process runs the others' studies: the last to finish writes the file
        log.info("tune/tuned.yaml waits for the studies of %s", ", ".join(short))
        return studies
    write_tuned(dvc_stable(chosen(studies, cfg)), tuned)  # dvc.lock keeps them as written
    return studies


def short_studies(studies: dict[str, optuna.Study], cfg: TuneConfig) -> dict[str, int]:
    """The methods whose studies hold fewer than `tune.n_trials` complete trials, with how many
    they hold (a study not created yet: 0); tune/tuned.yaml is written once this is empty."""
    counts = {m: len(complete(studies[m])) if m in studies else 0 for m in cfg.methods}
    return {m: n for m, n in counts.items() if n < cfg.n_trials}


_SHARED: tuple[Any, ...] | None = None
"""What a forked study process runs from (inherited by the fork, not pickled)."""


def run_studies(cfg: TuneConfig, starts: dict[str, TrainConfig], runs: dict, url: str,
                tracking: bool) -> None:
    """Each method's study to `cfg.n_trials` complete trials: one after another, or with
    `cfg.workers` > 1 (CPU) side by side in forked processes, one per method at a time."""
    global _SHARED
    cpu = all(resolve_device(c.device).type == "cpu" for c in starts.values())
    if cfg.workers > 1 and len(starts) > 1 and cpu:
        # one thread per study process, so `workers` studies share the cores without contention
        starts = {m: replace(c, threads=1) for m, c in starts.items()}
        _SHARED = (cfg, starts, runs, url, tracking)
        try:
            with fork_pool(min(cfg.workers, len(starts)), maxtasksperchild=1) as pool:
                for _ in pool.imap_unordered(_study, list(starts)):
                    pass
        finally:
            _SHARED = None
        return
    for method, start in starts.items():
        run_tune(method, start, cfg, runs, url, tracking)


def _study(method: str) -> None:
    assert _SHARED is not None, "a study process runs only when forked by run_studies"
    cfg, starts, runs, url, tracking = _SHARED
    run_tune(method, starts[method], cfg, runs, url, tracking)


def load_studies(methods: list[str], url: str) -> dict[str, optuna.Study]:
    """The methods' studies as the storage holds them (those not created yet left out)."""
    storage = open_storage(url, "tune.storage")
    names = {s.study_name for s in optuna.get_all_study_summaries(storage,
                                                                 include_best_trial=False)}
    return {m: optuna.load_study(study_name=study_name(m), storage=storage) for m in methods
            if study_name(m) in names}


def write_trials(studies: dict[str, optuna.Study], path: Path) -> None:
    atomic_write_text(pd.DataFrame(trials_table(studies)).to_csv(index=False), path)


def outcome(studies: dict[str, optuna.Study], params: Path = DEFAULT_PARAMS,
            tuned: Path = TUNED_PARAMS) -> list[str]:
    """What `fgpo tune` prints: per method, its trials, best objective, whether its study had
    stopped improving (tune.plateau_trials) and the chosen values, once tune/tuned.yaml holds
    every method's (while another process's studies run, the file waits for them)."""
    cfg = load_section(TuneConfig, "tune", params)
    waiting = list(short_studies(studies, cfg))
    lines = []
    for method, study in studies.items():
        done = complete(study)
        if not done:
            lines.append(f"{method}: no complete trial")
            continue
        values = [t.value for t in sorted(done, key=lambda t: t.number)]
        gain = plateau_gain(values, cfg.plateau_trials)
        trend = ("too few trials to tell whether it has stopped improving" if gain is None else
                 f"the last {cfg.plateau_trials} trials added {gain:+.4f}"
                 + (" (still improving: raise tune.n_trials, the study resumes)"
                    if still_improving(gain, cfg.tie_tolerance) else " (stopped improving)"))
        lines.append(f"{method}: {len(done)} complete trials, best val/expected_reward "
                     f"{study.best_value:.4f} (trial {study.best_trial.number}); {trend}"
                     + ("" if waiting else f"; chosen: {read_tuned(method, tuned)}"))
    if waiting:
        return lines + [f"{tuned} waits for the studies of {', '.join(waiting)} (the last to "
                        "finish writes it)"]
    return lines + [f"-> {tuned} (the train stage applies it; `make run` retrains)"]
