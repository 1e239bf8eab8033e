"""`train:` section of params.yaml: one config for every estimator, so that the methods differ
in nothing but the estimator (same policy, optimiser, schedule, steps, table).

`TrainConfig` is the shared `TrainSettings` plus one sub-section per registered estimator
(`train.<name>:`, that estimator's own `Config` dataclass), derived from the registry
(fgpo.train.estimators), so an estimator's settings are declared once, in its module."""

from __future__ import annotations

from dataclasses import field, make_dataclass

from fgpo.errors import InputError
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.settings import TrainSettings


def _check_methods(self: TrainSettings) -> None:
    TrainSettings.__post_init__(self)
    bad = [m for m in self.methods if m not in ESTIMATORS]
    if bad:
        raise InputError(f"unknown method(s) {bad}; choose from {list(ESTIMATORS)}",
                         field="train.methods")


TrainConfig = make_dataclass(
    "TrainConfig",
    [("methods", list[str], field(default_factory=lambda: list(ESTIMATORS))),  # every one
     *[(name, est.Config, field(default_factory=est.Config)) for name, est in ESTIMATORS.items()]],
    bases=(TrainSettings,), namespace={
        "__module__": __name__, "__post_init__": _check_methods, "__doc__": (
            "The whole `train:` section: `TrainSettings` plus `train.<name>:` for each "
            "registered estimator (its own `Config`); `methods` defaults to every one.")})
