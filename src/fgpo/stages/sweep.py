"""`fgpo sweep`: load the setting's data, run (or join) its study, write the study's best params.

The canonical study of a setting (named <method>-<reasoner>-<benchmark>) also records its best in
sweeps/best.yaml, the params file the train stage declares: the hand-off DVC tracks.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import optuna

from fgpo.config import DEFAULT_PARAMS, check_number, load_section
from fgpo.errors import InputError
from fgpo.rewards.data import load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import tool_names
from fgpo.sweep.handoff import dvc_stable
from fgpo.sweep.study import SweepConfig, best_of, resolve_storage, run_sweep, study_name
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.overrides import BEST_PARAMS, record_best, resolve

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def main(method: str, reasoner: str, benchmark: str, n_trials: int | None = None,
         storage: str | None = None, name: str | None = None, multi_objective: bool | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"), tracking: bool = True
         ) -> tuple[optuna.Study, bool]:
    """Run this worker's trials of the study; the canonical study's best goes to the hand-off
    file (sweeps/best.yaml). Returns (study, whether its best was handed off)."""
    from fgpo.tracking import sigterm_as_exit

    if method not in ESTIMATORS:
        raise InputError(f"unknown method {method!r}; choose from {list(ESTIMATORS)}",
                         field="--method")
    canonical = study_name(method, reasoner, benchmark)
    name = name or canonical
    if not _NAME.fullmatch(name):
        raise InputError(f"study name {name!r}: use letters, digits, '.', '_' and '-'",
                         field="--study-name")
    if n_trials is not None:  # 0 is no "default": the CLI refuses it too
        check_number(n_trials, "--n-trials", "trials for this worker, e.g. 8", ge=1,
                     integer=True)
    cfg = load_section(SweepConfig, "sweep", params)
    if multi_objective is not None:
        cfg = replace(cfg, multi_objective=multi_objective)
    # the layers below the sweep's own: what the train stage applies the sweep's best over
    train_cfg = resolve(load_section(TrainConfig, "train", params), method, params,
                        upto="tuned").config
    cfg.dimensions(method)  # validate the space before loading anything
    url = resolve_storage(storage, cfg)
    run_data = load_run_data(reasoner, benchmark, tool_names(params), data)
    require_trainable(run_data, train_cfg.allow_degenerate_table,
                      str(table_path(reasoner, benchmark, data / "reward_tables")))
    with sigterm_as_exit():
        study = run_sweep(method, reasoner, benchmark, train_cfg, cfg, run_data,
                          cfg.n_trials if n_trials is None else n_trials, url, name, tracking)
    best = best_of(study)
    handed_off = name == canonical and best is not None  # a side study never hands off
    if handed_off:
        record_best(dvc_stable(best), method, reasoner, benchmark,  # dvc.lock keeps it as written
                    Path(params).parent / BEST_PARAMS)
    return study, handed_off


def outcome(study: optuna.Study, handed_off: bool) -> list[str]:
    """What `fgpo sweep` prints: trial states, this study's own best (never another study's
    file) and the `dvc exp run` that trains with it."""
    states: dict[str, int] = {}
    for t in study.trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    lines = [f"study {study.study_name}: {states}"]
    best = best_of(study)
    if best is None:
        return lines + ["no trial completed: no best params written"]

    def value(k: str, v: object) -> str:  # -S values are parsed as YAML
        return f"[{v}]" if k.endswith("target_modules") else str(v).lower() \
            if isinstance(v, bool) else str(v)
    overrides = " ".join(f"-S 'train.{k}={value(k, v)}'" for k, v in sorted(best["params"].items()))
    where = (f"-> {BEST_PARAMS} (the train stage applies it with sweep.apply_best: true)"
             if handed_off else "(a side study: kept in its storage and MLflow run, not handed "
                                "to training)")
    return lines + [f"best trial {best['trial']}: val/accuracy {best['value']:.4f} {where}",
                    f"train with them: dvc exp run {overrides}"]
