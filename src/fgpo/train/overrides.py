"""Settings that override `train`: dotted-path values, the tuned values and the sweeps' best
params, and `resolve`, the one place that merges them into a run's config.

A run's config is params.yaml's `train` section, then the method's tuned values
(`tune/tuned.yaml`, from `make tune`, when `tune.apply` is on), then the setting's best sweep
params (`sweeps/best.yaml`, when `sweep.apply_best` is on). Both files sit beside params.yaml
(the repository root under `dvc repro`) and are params files of the train stage, so DVC sees
when a sweep or a tuning changed what training applies. The train stage resolves every layer;
a sweep starts from the layers below its own (params and tuned); tuning from params alone.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, get_type_hints

import yaml
from filelock import FileLock

from fgpo.config import read_params
from fgpo.errors import InputError
from fgpo.seqio import atomic_write_text
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS

BEST_PARAMS = Path("sweeps/best.yaml")
HEADER = ("# Best sweep params per setting (method -> reasoner -> benchmark), written by "
          "`fgpo sweep`;\n# the train stage applies them when sweep.apply_best is true "
          "(a DVC params file of `train`).\n")


def apply(cfg: TrainConfig, values: dict[str, Any], file: str | Path | None = None,
          where: str = "") -> TrainConfig:
    """A copy of `cfg` with dotted-path values set (lists given as 'a,b' strings are split).

    An unknown path or a value the config refuses is an InputError naming `file` (the tuned or
    best-params file the values came from) and the field as written there (`where.path`)."""
    for path, value in values.items():
        field = f"{where}.{path}" if where else str(path)
        check_path(path, file, field)
        if isinstance(value, str) and path.endswith("target_modules"):
            value = value.split(",")
        try:
            cfg = _set(cfg, path.split("."), value)
        except InputError as exc:
            if file is None:
                raise
            raise InputError(f"{exc.message} (as train.{path})", file=str(file),
                             field=field) from exc
        except (TypeError, ValueError) as exc:
            raise InputError(f"{value!r} does not fit train.{path}: {exc}",
                             file=None if file is None else str(file), field=field) from exc
    return cfg


def check_path(path: Any, file: str | Path | None = None, field: str | None = None) -> None:
    """`path` names a setting of the train section (e.g. `grpo.group_size`), or an InputError
    naming the settings there are at the level where it went wrong."""
    obj: Any = TrainConfig
    for i, part in enumerate(str(path).split(".") if isinstance(path, str) else [path]):
        names = {f.name: f for f in fields(obj)} if is_dataclass(obj) else {}
        if part not in names:
            known = ".".join(str(path).split(".")[:i]) or "train"
            raise InputError(f"unknown train setting {path!r}; {known} has {sorted(names)}",
                             file=None if file is None else str(file), field=field or str(path))
        obj = get_type_hints(obj).get(part) if is_dataclass(obj) else None


def _set(obj: Any, parts: list[str], value: Any) -> Any:
    if len(parts) == 1:
        return replace(obj, **{parts[0]: value})
    return replace(obj, **{parts[0]: _set(getattr(obj, parts[0]), parts[1:], value)})


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise InputError(f"best-params file missing; restore the committed one "
                         f"(git checkout {path}) or write one with `fgpo sweep`", file=str(path))
    raw = read_params(path)  # YAML errors and repeated keys named like params.yaml's
    for method, per_reasoner in raw.items():
        if method not in ESTIMATORS:
            raise InputError(f"unknown method {method!r}; choose from {list(ESTIMATORS)}",
                             file=str(path), field=str(method))
        if per_reasoner is None:  # a method without any swept setting
            continue
        if not isinstance(per_reasoner, dict):
            raise InputError("expected method -> reasoner -> benchmark -> best trial",
                             file=str(path), field=str(method))
        for reasoner, per_bench in per_reasoner.items():
            if not isinstance(per_bench, dict):
                raise InputError("expected method -> reasoner -> benchmark -> best trial",
                                 file=str(path), field=f"{method}.{reasoner}")
            for bench, best in per_bench.items():
                where = f"{method}.{reasoner}.{bench}"
                if not isinstance(best, dict) or not isinstance(best.get("params"), dict):
                    raise InputError("a best trial is {study, trial, value, params: {dotted "
                                     "train path: value}}", file=str(path), field=where)
                for key in best["params"]:
                    check_path(key, path, f"{where}.params.{key}")
    return raw


def _switch(params: Path, section: str, key: str, default: bool) -> bool:
    value = (read_params(params).get(section) or {}).get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"must be true or false, got {value!r}", file=str(params),
                         field=f"{section}.{key}")
    return value


def apply_best(params: Path) -> bool:
    """`sweep.apply_best` of params.yaml, read without the sweep's own config (and Optuna)."""
    return _switch(params, "sweep", "apply_best", False)


def apply_tuned(params: Path) -> bool:
    """`tune.apply` of params.yaml (default true), read without the tune config (and Optuna)."""
    return _switch(params, "tune", "apply", True)


def read_best(method: str, reasoner: str, benchmark: str, path: Path = BEST_PARAMS
              ) -> dict[str, Any] | None:
    """The setting's best trial ({study, trial, value, params}), or None if none was swept."""
    return (_read(path).get(method) or {}).get(reasoner, {}).get(benchmark)


def record_best(best: dict[str, Any], method: str, reasoner: str, benchmark: str,
               path: Path = BEST_PARAMS) -> None:
    """Record the setting's best trial; other settings' entries are kept (workers of other
    studies may write at the same time, hence the lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=60):
        raw = _read(path) if path.exists() else {m: {} for m in ESTIMATORS}
        raw.setdefault(method, {}).setdefault(reasoner, {})[benchmark] = best
        atomic_write_text(HEADER + yaml.safe_dump(raw, sort_keys=True), path)


# ---- the tuned values per method (`fgpo tune`) ------------------------------------------------

TUNED_PARAMS = Path("tune/tuned.yaml")
TUNED_HEADER = ("# Each method's tuned values (method -> dotted train path -> value), written by "
                "`make tune`\n# (`fgpo tune`: the chosen trial of the method's equal-budget study). "
                "The train stage\n# applies them over params.yaml's train section (a DVC params "
                "file of `train`); {} = untuned.\n")


def _tuned_file(path: Path) -> dict[str, dict[str, Any]]:
    """The tuned file, checked whole: known methods, each a mapping of known train paths."""
    if not path.exists():
        return {}
    raw = read_params(path)  # YAML errors and repeated keys named like params.yaml's
    for method, values in raw.items():
        if method not in ESTIMATORS:
            raise InputError(f"unknown method {method!r}; choose from {list(ESTIMATORS)}",
                             file=str(path), field=str(method))
        if values is not None and not isinstance(values, dict):
            raise InputError(f"expected method -> {{dotted train path: value}}, got "
                             f"{values!r}", file=str(path), field=str(method))
        for key in values or {}:
            check_path(key, path, f"{method}.{key}")
    return raw


def tuned_source(method: str, path: Path = TUNED_PARAMS) -> str:
    """Where the method's values come from: 'tuned' (its own study), 'from <relative>' (an
    untuned estimator starting from its nearest tuned relative, `tuned_from`), or 'untuned'."""
    raw = _tuned_file(path)
    if raw.get(method):
        return "tuned"
    relative = getattr(ESTIMATORS.get(method), "tuned_from", None)
    return f"from {relative}" if relative and raw.get(relative) else "untuned"


def read_tuned(method: str, path: Path = TUNED_PARAMS) -> dict[str, Any]:
    """The method's tuned values; {} when it was not tuned or there is no tuned file (a
    project without `make tune`, e.g. a params file outside the repository). An estimator
    with no values of its own takes its `tuned_from` relative's: the shared settings as they
    are, the relative's own section renamed to its own (grpo.group_size -> dr_grpo.group_size),
    keeping only the fields its own section has."""
    raw = _tuned_file(path)
    if raw.get(method) or tuned_source(method, path) == "untuned":
        return dict(raw.get(method) or {})
    relative = ESTIMATORS[method].tuned_from
    own = {f.name for f in fields(ESTIMATORS[method].Config)}
    out = {}
    for key, value in raw[relative].items():
        head, _, rest = key.partition(".")
        if head != relative:
            out[key] = value
        elif rest in own:
            out[f"{method}.{rest}"] = value
    return out


def write_tuned(values: dict[str, dict[str, Any]], path: Path = TUNED_PARAMS) -> None:
    """The tuned file: every estimator's entry ({} for one not tuned), sorted."""
    raw = {m: dict(sorted((values.get(m) or {}).items())) for m in ESTIMATORS}
    atomic_write_text(TUNED_HEADER + yaml.safe_dump(raw, sort_keys=True), path)


# ---- the one merge: params, then tuned, then the sweep's best -------------------------------

LAYERS = ("params", "tuned", "sweep")
"""The sources of a run's values, lowest first; a later one overrides an earlier one."""


@dataclass
class Settings:
    """A run's train config and where its values came from."""

    config: TrainConfig
    sources: dict[str, str]
    """Each dotted train path set over params.yaml's section -> the layer that set it last
    ('tuned' or 'sweep'); a path not here has params.yaml's value."""
    tuned: str
    """tuned | from <relative> | untuned (`tuned_source`); 'off (tune.apply: false)' or
    'not applied' (a resolve that stops at params)."""
    best: dict[str, Any] | None
    """The sweep's best trial applied ({study, trial, value, params}), or None."""


def resolve(base: TrainConfig, method: str, params: Path, reasoner: str | None = None,
            benchmark: str | None = None, upto: str = "sweep", tuned: Path | None = None
            ) -> Settings:
    """`method`'s settings on (reasoner, benchmark): `base` (params.yaml's train section), the
    method's tuned values over it, the setting's best sweep params over those, stopping after
    layer `upto` (the train stage: sweep; a sweep: tuned; tuning: params). `tuned` replaces
    the tuned file beside params.yaml."""
    if upto not in LAYERS:
        raise ValueError(f"upto must be one of {LAYERS}, got {upto!r}")
    root = Path(params).parent
    cfg, sources, label, best = base, {}, "not applied", None
    if LAYERS.index(upto) >= LAYERS.index("tuned"):
        if apply_tuned(params):
            path = tuned or root / TUNED_PARAMS
            values = read_tuned(method, path)
            cfg = apply(cfg, values, path, method)
            sources.update(dict.fromkeys(values, "tuned"))
            label = tuned_source(method, path)
        else:
            label = "off (tune.apply: false)"
    if upto == "sweep" and apply_best(params):
        if reasoner is None or benchmark is None:
            raise ValueError("the sweep layer is per setting: give reasoner and benchmark")
        path = root / BEST_PARAMS
        best = read_best(method, reasoner, benchmark, path)
        if best:
            cfg = apply(cfg, best["params"], path, f"{method}.{reasoner}.{benchmark}.params")
            sources.update(dict.fromkeys(best["params"], "sweep"))
    return Settings(cfg, sources, label, best)
