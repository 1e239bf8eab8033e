"""The search space: parsed from params.yaml `sweep.space`, validated against TrainConfig."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import optuna

from fgpo.errors import InputError
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS

KINDS = ("float", "int", "categorical")


@dataclass
class Dimension:
    """One hyperparameter: a dotted TrainConfig path (e.g. policy.lora_r, grpo.clip_eps); a path
    under an estimator's own section (`<name>.`) is searched only in that estimator's studies."""

    name: str
    type: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[Any] = field(default_factory=list)

    def suggest(self, trial: optuna.Trial) -> Any:
        if self.type == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.type == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_categorical(self.name, self.choices)

    def method(self) -> str | None:
        """The estimator a method-specific setting belongs to, None for shared ones."""
        head = self.name.split(".")[0]
        return head if head in ESTIMATORS else None


def _field_type(path: str, section: str = "sweep.space") -> Any:
    cls: Any = TrainConfig
    hint = None
    for part in path.split("."):
        fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        if part not in fields:
            raise InputError(f"unknown parameter {path!r} (no train.{path} in TrainConfig)",
                             field=f"{section}.{path}")
        hint = fields[part].default_factory() if fields[part].default_factory is not \
            dataclasses.MISSING else fields[part].default
        cls = type(hint)
    return hint


def parse_space(raw: dict[str, dict[str, Any]], section: str = "sweep.space"
                ) -> list[Dimension]:
    """Dimensions from the params.yaml mapping under `section`; unknown names and empty ranges
    are refused."""
    if not raw:
        raise InputError("empty search space", field=section)
    dims = []
    for name, spec in raw.items():
        where = f"{section}.{name}"
        default = _field_type(name, section)
        if dataclasses.is_dataclass(default):
            raise InputError(f"{name!r} is a section, not a parameter",
                             field=where)
        spec = dict(spec or {})
        kind = spec.pop("type", None)
        if kind not in KINDS:
            raise InputError(f"type must be one of {list(KINDS)}", field=where)
        try:
            dim = Dimension(name=name, type=kind, **spec)
        except TypeError as exc:
            raise InputError(str(exc), field=where) from exc
        if kind == "categorical":
            if not dim.choices:
                raise InputError("empty choices", field=where)
        elif dim.low is None or dim.high is None or not dim.low < dim.high:
            raise InputError(f"empty range [{dim.low}, {dim.high}]: need low < high",
                             field=where)
        elif dim.log and dim.low <= 0:
            raise InputError("a log range needs low > 0", field=where)
        dims.append(dim)
    return dims


def space_hash(dims: list[Dimension]) -> str:
    blob = json.dumps([dataclasses.asdict(d) for d in dims], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
