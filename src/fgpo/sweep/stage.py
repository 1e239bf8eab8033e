"""`fgpo sweep`: load the setting's data, run (or join) its study, write the study's best params."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import optuna

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.sweep.study import SweepConfig, resolve_storage, run_sweep, study_name
from fgpo.tools import ToolsConfig
from fgpo.train.config import METHODS, TrainConfig
from fgpo.train.stage import load_run_data

BEST_ROOT = Path("sweeps/best")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def best_path(study: str, root: Path = BEST_ROOT) -> Path:
    """Where a study's best params live: one file per study, so that a second study of the same
    setting (`--study-name s2`) never overwrites the canonical study's choice."""
    return root / f"{study}.json"


def main(method: str, reasoner: str, benchmark: str, n_trials: int | None = None,
         storage: str | None = None, name: str | None = None, multi_objective: bool | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"), tracking: bool = True
         ) -> optuna.Study:
    from fgpo.tracking import sigterm_as_exit

    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose from {list(METHODS)}",
                         field="--method")
    name = name or study_name(method, reasoner, benchmark)
    if not _NAME.fullmatch(name):
        raise InputError(f"study name {name!r}: use letters, digits, '.', '_' and '-'",
                         field="--study-name")
    cfg = load_section(SweepConfig, "sweep", params)
    if multi_objective is not None:
        cfg = replace(cfg, multi_objective=multi_objective)
    train_cfg = load_section(TrainConfig, "train", params)
    cfg.dimensions(method)  # validate the space before loading anything
    url = resolve_storage(storage, cfg)
    run_data = load_run_data(reasoner, benchmark, load_section(ToolsConfig, "tools", params), data)
    with sigterm_as_exit():
        return run_sweep(method, reasoner, benchmark, train_cfg, cfg, run_data,
                         n_trials or cfg.n_trials, url, name, best_path(name), tracking)
