"""`fgpo sweep`: load the setting's data, run (or join) its study, write the best params."""

from __future__ import annotations

from pathlib import Path

import optuna

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.sweep.study import SweepConfig, run_sweep, study_name
from fgpo.tools import ToolsConfig
from fgpo.train.config import METHODS, TrainConfig
from fgpo.train.stage import load_run_data

BEST_ROOT = Path("sweeps/best")


def best_path(method: str, reasoner: str, benchmark: str, root: Path = BEST_ROOT) -> Path:
    return root / method / reasoner / f"{benchmark}.json"


def main(method: str, reasoner: str, benchmark: str, n_trials: int | None = None,
         storage: str | None = None, name: str | None = None, multi_objective: bool | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"), tracking: bool = True
         ) -> optuna.Study:
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose from {list(METHODS)}",
                         field="--method")
    cfg = load_section(SweepConfig, "sweep", params)
    if multi_objective is not None:
        cfg.multi_objective = multi_objective
    train_cfg = load_section(TrainConfig, "train", params)
    cfg.dimensions(method)  # validate the space before loading anything
    run_data = load_run_data(reasoner, benchmark, load_section(ToolsConfig, "tools", params), data)
    return run_sweep(method, reasoner, benchmark, train_cfg, cfg, run_data,
                     n_trials or cfg.n_trials, storage or cfg.storage,
                     name or study_name(method, reasoner, benchmark),
                     best_path(method, reasoner, benchmark), tracking)
