"""Each method at its best: one Optuna study per method, the same trials and budget for each.

A reviewer's first question about an estimator comparison is whether the baseline was tuned as
well as the method. `fgpo tune` answers it: for every method in `tune.methods` a study named
`tune-<method>` searches that method's own space (`tune.space.<method>`: learning rate, head
learning-rate multiplier and KL beta for every method; GRPO adds G, clip and temperature) on the
declared tuning settings. Every trial of every method trains the same schedule (`tune.epochs`
visits of every train question of each tuning setting, seed `tune.train_seed`, which is none of
the evaluation seeds `train.seeds`) and is scored by
the faithful protocol's quantity: validation expected reward at the best-validation checkpoint,
averaged over the tuning settings. No pruning: a pruned trial would spend less than the others,
and the budgets would no longer be equal. The study stops when `tune.n_trials` trials are
COMPLETE, so a killed run resumes where it stopped (its dead trial failed and re-queued once),
and several `fgpo tune` workers may share a study: it is one use of the study engine
(`fgpo.sweep.engine`), as a sweep is.

MLflow: one parent run per study (experiment `fgpo-tune`), each trial a nested run with its
values, the per-setting and mean objective, and what it spent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import optuna
from optuna.study import MaxTrialsCallback
from optuna.trial import TrialState
from tqdm import tqdm

from fgpo.config import check_number, range_fraction
from fgpo.errors import InputError
from fgpo.redact import redact_url
from fgpo.rewards.table import RunData
from fgpo.sweep.engine import (TrialSeededTPE, open_study, optimize, parent_run, tag_shared_run,
                               trial_run)
from fgpo.sweep.space import Dimension, parse_space, space_hash
from fgpo.sweep.storage import open_storage, recover_dead_workers, storage_url
from fgpo.tracking.provenance import TUNE_EXPERIMENT
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.loop import train_run
from fgpo.train.overrides import apply

OBJECTIVE = "val/expected_reward"
STORAGE_ENV = "FGPO_TUNE_STORAGE"
SHARED = ("learning_rate", "head_lr_mult", "beta")
"""Searched for every method: the settings that act on both estimators' advantages."""


@dataclass
class TuneConfig:
    """`tune:` section of params.yaml."""

    apply: bool = True
    """The train stage trains each method with its tuned values (tune/tuned.yaml) over the
    train section. false: every method trains with the train section as it is, e.g.
    `dvc exp run -S tune.apply=false -S train.learning_rate=0.003` (with it on, a tuned value
    shadows the same key of the train section). Read by the train stage itself
    (`fgpo.train.overrides.apply_tuned`)."""
    methods: list[str] = field(default_factory=lambda: ["fgpo", "grpo"])
    """Methods tuned, each in its own study with the same trials and budget."""
    settings: list[str] = field(default_factory=lambda: [
        "careful_expert/genomeqa", "overloaded_generalist/seqcalc", "tool_skeptic/variant"])
    """Tuning settings, `<reasoner>/<benchmark>`: one reasoner per benchmark by default. A trial
    trains on each and is scored by the mean; the comparison's other settings are never seen."""
    n_trials: int = 16
    """COMPLETE trials per method (failed ones are retried, not counted)."""
    epochs: int = 3
    """Visits of every train question per trial and setting: the comparison's own schedule
    (train.epochs), so the values are chosen under the protocol they are used in; 16 trials x
    3 settings x 2 methods fit `make tune` in well under an hour on 2 cores."""
    evals_per_epoch: int = 4
    """Validation points per epoch (the best one is the trial's checkpoint)."""
    seed: int = 0
    """TPE sampler seed: trial n draws from seed + n (as a sweep's), so workers started together
    on one study differ and a resumed study goes on as an uninterrupted one would."""
    tie_tolerance: float = 0.002
    """Trials whose objective is within this of the best count as tied (one training seed per
    trial: smaller differences are noise); of those, the chosen one lies farthest inside the
    search ranges, so a flat objective does not put the chosen value at a range's edge."""
    plateau_trials: int = 12
    """The study has stopped improving when its last `plateau_trials` complete trials raised its
    best objective by less than `tie_tolerance`; `fgpo tune` and the report's tuning table say
    which studies had not (then raise n_trials: the study resumes). A study with no more complete
    trials than this cannot tell."""
    train_seed: int = 100
    """The training seed of every trial's runs (data order, sampled groups, head init). Never
    one of train.seeds: values chosen on a seed's runs and then evaluated on the same seed's
    runs would carry that seed's luck into the comparison (`fgpo tune` refuses it)."""
    workers: int = 2
    """Studies run side by side, one process per method, each run single-threaded (torch
    threads 1 whatever train.threads says, so the processes share the cores): `make tune` takes
    about 1/workers of its serial time on that many cores. 1: the studies one after another
    at train.threads."""
    n_startup_trials: int = 4
    """Random trials before TPE models the space."""
    storage: str = "sqlite:///tune/optuna.db"
    """SQLAlchemy URL of the studies (git-ignored; the outcome is tune/tuned.yaml), e.g.
    postgresql://user@host/db. `--storage` and then $FGPO_TUNE_STORAGE override it. Never a
    password here (params.yaml is committed): name the variable holding it in
    `storage_password_env`. Printed redacted."""
    storage_password_env: str = ""
    """Name of an environment variable holding the storage password, inserted into the URL's
    user info at run time (e.g. FGPO_TUNE_PASSWORD); empty: none."""
    space: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """method -> {dotted train path -> {type, low, high, log, choices}}, as `sweep.space`."""

    def __post_init__(self) -> None:
        for name in ("n_trials", "epochs", "evals_per_epoch", "n_startup_trials", "seed",
                     "train_seed", "workers"):
            check_number(getattr(self, name), f"tune.{name}", "a whole number",
                         ge=1 if name in ("n_trials", "epochs", "evals_per_epoch", "workers")
                         else 0, integer=True)
        check_number(self.plateau_trials, "tune.plateau_trials", "a whole number of trials, "
                     "e.g. a quarter of tune.n_trials", ge=1, integer=True)
        check_number(self.tie_tolerance, "tune.tie_tolerance", "set 0 to take the best trial, "
                     "or a small objective difference, e.g. 0.002", ge=0)
        if not self.settings:
            raise InputError("declare at least one tuning setting <reasoner>/<benchmark>",
                             field="tune.settings")
        for s in self.settings:
            if s.count("/") != 1:
                raise InputError(f"{s!r}: write a setting as <reasoner>/<benchmark>",
                                 field="tune.settings")
        for m in self.methods:
            if m not in ESTIMATORS:
                raise InputError(f"unknown method {m!r}; choose from {list(ESTIMATORS)}",
                                 field="tune.methods")
            dims = self.dimensions(m)
            missing = [n for n in SHARED if n not in {d.name for d in dims}]
            if missing:
                raise InputError(f"every method searches {list(SHARED)}; add {missing} to "
                                 f"tune.space.{m}", field=f"tune.space.{m}")
            other = [d.name for d in dims if d.method() not in (None, m)]
            if other:
                raise InputError(f"{other} belong to another method's section",
                                 field=f"tune.space.{m}")

    def dimensions(self, method: str) -> list[Dimension]:
        if method not in self.space:
            raise InputError(f"no search space for {method!r}", field=f"tune.space.{method}")
        return parse_space(self.space[method], f"tune.space.{method}")

    def check_seeds(self, train_seeds: list[int]) -> None:
        """Refuse a trial seed that is also an evaluation seed."""
        if self.train_seed in train_seeds:
            raise InputError(f"tune.train_seed {self.train_seed} is one of the evaluation seeds "
                             f"train.seeds {train_seeds}: the chosen values would be evaluated "
                             "on the runs they were chosen on; pick a seed outside them, e.g. "
                             "100", field="tune.train_seed")

    def pairs(self) -> list[tuple[str, str]]:
        return [tuple(s.split("/")) for s in self.settings]  # type: ignore[misc]


def study_name(method: str) -> str:
    return f"tune-{method}"


def complete(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def open_tune_study(method: str, storage: Any, dims: list[Dimension], cfg: TuneConfig
                    ) -> tuple[optuna.Study, bool]:
    """Create, join or resume the method's study (and whether this worker created it); one made
    with another space or budget is refused (its trials would not be comparable)."""
    budget = {"settings": cfg.settings, "epochs": cfg.epochs,
              "evals_per_epoch": cfg.evals_per_epoch, "train_seed": cfg.train_seed}
    return open_study(
        study_name(method), storage, ["maximize"],
        TrialSeededTPE(cfg.seed, cfg.n_startup_trials), optuna.pruners.NopPruner(),
        identity={"space_hash": space_hash(dims), "budget": budget},
        refuse=("space or budget", f"delete it from {redact_url(cfg.storage)} or change "
                "tune.storage", "tune"))


def trial_score(method: str, cfg: TrainConfig, data: dict[str, RunData], seed: int,
                log: Any = None) -> tuple[float, dict[str, float]]:
    """Train `cfg` on every tuning setting; (mean objective, per-setting metrics and what the
    trial spent). `log(metrics, step)` receives each setting's final numbers."""
    per, spent = {}, {"budget/question_visits": 0.0, "budget/reward_evals": 0.0,
                      "budget/optimizer_steps": 0.0}
    for i, (setting, run_data) in enumerate(data.items()):
        result = train_run(method, cfg, run_data, seed, progress=False)
        per[f"setting/{setting}/{OBJECTIVE}"] = result.final[OBJECTIVE]
        for k in spent:
            spent[k] += float(result.final[k])
        if log is not None:
            log({f"setting/{setting}/{k}": v for k, v in result.final.items()
                 if k.startswith(("val/", "checkpoint/"))}, i)
    value = float(np.mean(list(per.values())))
    return value, {**per, **spent, OBJECTIVE: value}


def resolve_storage(cli: str | None, cfg: TuneConfig) -> str:
    """The storage URL actually used: --storage, else $FGPO_TUNE_STORAGE, else tune.storage;
    then the password from `tune.storage_password_env` when that names a variable."""
    return storage_url(cli, STORAGE_ENV, cfg.storage, cfg.storage_password_env, "tune")


def run_tune(method: str, base: TrainConfig, cfg: TuneConfig, data: dict[str, RunData],
             storage_url: str, tracking: bool = True) -> optuna.Study:
    """Run the method's study until `cfg.n_trials` trials are COMPLETE (resuming it)."""
    dims = cfg.dimensions(method)
    storage = open_storage(storage_url, "tune.storage")
    study, created = open_tune_study(method, storage, dims, cfg)
    recover_dead_workers(study, storage)
    cfg.check_seeds(base.seeds)
    base = replace(base, epochs=cfg.epochs, evals_per_epoch=cfg.evals_per_epoch,
                   seeds=[cfg.train_seed])
    tags = {"method": method, "study": study.study_name, "settings": ",".join(cfg.settings)}
    parent = parent_run(study, created, TUNE_EXPERIMENT, study.study_name, tags,
                        {"tune": {"n_trials": cfg.n_trials, "epochs": cfg.epochs,
                                  "evals_per_epoch": cfg.evals_per_epoch,
                                  "settings": cfg.settings, "space": cfg.space[method]},
                         "method": method}, tracking)

    def objective(trial: optuna.Trial) -> float:
        values = {d.name: d.suggest(trial) for d in dims}
        with trial_run(trial, parent, TUNE_EXPERIMENT,
                       f"{study.study_name}-trial{trial.number}", tags,
                       {"method": method, **values}) as run:
            value, metrics = trial_score(method, apply(base, values), data, base.seeds[0],
                                         run.log_metrics if run is not None else None)
            for k in ("budget/question_visits", "budget/reward_evals",
                      "budget/optimizer_steps"):
                trial.set_user_attr(k, metrics[k])
            if run is not None:
                run.log_metrics(metrics, len(data))
        return value

    done = len(complete(study))
    bar = tqdm(total=cfg.n_trials, initial=done, desc=f"tune {method}", unit="trial")

    def progress(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if trial.state == TrialState.COMPLETE:
            bar.update()
            bar.set_postfix(best=f"{study.best_value:.4f}")
    try:
        if done < cfg.n_trials:  # failed trials are retried: at most as many attempts again
            optimize(study, objective, 2 * (cfg.n_trials - done), parent,
                     callbacks=[MaxTrialsCallback(cfg.n_trials, states=(TrialState.COMPLETE,)),
                                progress])
    finally:
        bar.close()
    if parent is not None:
        done = complete(study)
        if done:
            parent.log_metrics({"best/" + OBJECTIVE: study.best_value}, len(done))
            tag_shared_run(parent, {"best_trial": str(study.best_trial.number),
                                    "best_params": json.dumps(study.best_params,
                                                              sort_keys=True)})
        parent.end("FINISHED" if len(done) >= cfg.n_trials else "FAILED")
    return study


def trials_table(studies: dict[str, optuna.Study]) -> list[dict[str, Any]]:
    """Every trial of every method's study: number, state, value, what it spent, its values."""
    rows = []
    for method, study in studies.items():
        for t in study.get_trials(deepcopy=False):
            rows.append({"method": method, "trial": t.number, "state": t.state.name,
                         "value": t.value if t.state == TrialState.COMPLETE else None,
                         "question_visits": t.user_attrs.get("budget/question_visits"),
                         "reward_evals": t.user_attrs.get("budget/reward_evals"),
                         "params": json.dumps(t.params, sort_keys=True)})
    return rows


def inside(params: dict[str, Any], dims: list[Dimension]) -> float:
    """How far inside its ranges a trial's values lie: the smallest distance to a bound, as a
    fraction of the range (log scale for a log range); categorical dimensions do not count."""
    fracs = [range_fraction(params[d.name], d.low, d.high, d.log) for d in dims
             if d.low is not None and d.high is not None and d.name in params]
    return min((min(f, 1 - f) for f in fracs), default=0.5)


def pick(trials: list[optuna.trial.FrozenTrial], dims: list[Dimension], tolerance: float
         ) -> optuna.trial.FrozenTrial:
    """The chosen trial: of the complete trials whose objective is within `tolerance` of the
    best (differences the objective's noise can make), the one farthest inside the ranges
    (ties: the higher objective, then the earlier trial). A value at a bound is chosen only
    where the objective prefers the bound by more than the tolerance."""
    best = max(t.value for t in trials)
    tied = [t for t in trials if t.value >= best - tolerance]
    return max(tied, key=lambda t: (inside(t.params, dims), t.value, -t.number))


def chosen(studies: dict[str, optuna.Study], cfg: TuneConfig) -> dict[str, dict[str, Any]]:
    """method -> the chosen trial's values (`pick`; the tuned file's content)."""
    return {m: dict(pick(complete(s), cfg.dimensions(m), cfg.tie_tolerance).params)
            for m, s in studies.items() if complete(s)}
