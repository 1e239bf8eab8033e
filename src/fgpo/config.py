"""Load one `params.yaml` section into that stage's dataclass; unknown keys fail loudly."""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from fgpo.errors import InputError
from fgpo.redact import find_secret

T = TypeVar("T")
DEFAULT_PARAMS = Path("params.yaml")


def cache_dir() -> Path:
    """Where computed caches live: motif thresholds, the policy's frozen-layer states
    ($FGPO_CACHE_DIR; `make` sets .cache/fgpo in the repo; default ~/.cache/fgpo)."""
    return Path(os.environ.get("FGPO_CACHE_DIR", Path.home() / ".cache" / "fgpo"))


def read_params(path: str | Path = DEFAULT_PARAMS) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise InputError("params file not found", file=str(path))
    text = path.read_text()
    try:
        duplicate = _first_duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", file=str(path)) from None
    if duplicate:
        key, lines = duplicate
        raise InputError(f"declared twice (lines {lines[0]} and {lines[1]}); YAML would keep "
                         "only the last one: merge or rename them", file=str(path), field=key)
    if not isinstance(data, dict):
        raise InputError("top level must be a mapping of stage sections", file=str(path))
    if secret := find_secret(data):
        # params.yaml is committed and DVC copies the values it tracks into dvc.lock
        raise InputError("holds a password or secret; params files are committed and DVC "
                         "records their values in dvc.lock: write the URL without it "
                         "(scheme://user@host/db) and put the secret in an environment variable "
                         "named by the section's *_password_env / api_key_env field",
                         file=str(path), field=secret)
    return data


def _first_duplicate_key(node: yaml.Node | None, where: str = ""
                         ) -> tuple[str, tuple[int, int]] | None:
    """(dotted key, (first line, second line)) of the first key repeated in one mapping."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value
            path = f"{where}.{key}" if where else str(key)
            if key in seen:
                return path, (seen[key], key_node.start_mark.line + 1)
            seen[key] = key_node.start_mark.line + 1
            if found := _first_duplicate_key(value_node, path):
                return found
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            if found := _first_duplicate_key(item, f"{where}[{i}]"):
                return found
    return None


def from_dict(cls: type[T], data: dict[str, Any], *, where: str = "params") -> T:
    """Build dataclass `cls` from `data`, recursing into nested dataclass fields.

    Unknown keys raise InputError naming the section and the allowed keys, so a typo in
    params.yaml never silently falls back to a default.
    """
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping, got {type(data).__name__}", field=where)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise InputError(f"unknown key(s) {unknown}; allowed: {sorted(fields)}", field=where)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in data.items():
        hint = hints.get(name)
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = from_dict(hint, value, where=f"{where}.{name}")
        elif typing.get_origin(hint) is dict:
            args = typing.get_args(hint)
            if len(args) == 2 and dataclasses.is_dataclass(args[1]) and isinstance(value, dict):
                value = {k: from_dict(args[1], v or {}, where=f"{where}.{name}.{k}")
                         for k, v in value.items()}
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except InputError as exc:
        field = qualify(exc.field, where)
        if field == exc.field:
            raise
        raise InputError(exc.message, file=exc.file, record=exc.record, field=field) from exc
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc), field=where) from exc


def qualify(field: str | None, where: str) -> str:
    """`field` as a full params path: a relative one (a nested dataclass's own field, e.g.
    "backend" under `reward_table.reasoners.<name>`) is prefixed with `where`; one already
    starting with the section (e.g. "train.policy.kind") is left as it is."""
    if not field:
        return where
    section = where.split(".")[0]
    if field == section or field.startswith(section + "."):
        return field
    return f"{where}.{field}"


def check_number(value: Any, field: str, fix: str, *, gt: float | None = None,
                 ge: float | None = None, lt: float | None = None,
                 integer: bool = False) -> None:
    """Refuse a config value that is not a number (an integer with `integer`) within the
    bounds; the message names the allowed range, the value given and `fix` (how to fix it)."""
    name = field.rsplit(".", 1)[-1]
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        hint = (" (YAML reads 1e-3 as a string: write 1.0e-3)"
                if isinstance(value, str) and not integer else "")
        raise InputError(f"{name} must be {'an integer' if integer else 'a number'}, got "
                         f"{value!r}{hint}; {fix}", field=field)
    if not math.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}; {fix}", field=field)
    bounds = [(gt, ">", lambda b: value > b), (ge, ">=", lambda b: value >= b),
              (lt, "<", lambda b: value < b)]
    if not all(ok(b) for b, _, ok in bounds if b is not None):
        rule = " and ".join(f"{op} {b}" for b, op, _ in bounds if b is not None)
        raise InputError(f"{name} must be {rule}, got {value!r}; {fix}", field=field)


def range_fraction(value: float, low: float, high: float, log: bool = False) -> float:
    """Where `value` lies in [low, high]: 0 at low, 1 at high, on the log scale for a log range
    (a search space's dimension; the tuning's choice and the report's at-bound mark read it)."""
    lo, hi, v = float(low), float(high), float(value)
    if log:
        lo, hi, v = math.log(lo), math.log(hi), math.log(v)
    return (v - lo) / (hi - lo)


def load_part(cls: type[T], section: str, path: str | Path = DEFAULT_PARAMS) -> T:
    """`cls`'s part of `params.yaml[section]`: the keys that are its fields, validated; the
    section's other keys belong to another reader (which validates them), so they are passed
    over here. A stage that needs only a view of a section depends on that view's code alone."""
    raw = read_params(path).get(section)
    if not isinstance(raw, dict):
        raise InputError(f"missing section '{section}'", file=str(path))
    mine = {f.name for f in dataclasses.fields(cls)}
    try:
        return from_dict(cls, {k: v for k, v in raw.items() if k in mine}, where=section)
    except InputError as exc:
        raise InputError(exc.message, file=str(path), record=exc.record,
                         field=exc.field) from exc


def load_section(cls: type[T], section: str, path: str | Path = DEFAULT_PARAMS) -> T:
    """Load `params.yaml[section]` into `cls` (a stage's config dataclass)."""
    params = read_params(path)
    if section not in params:
        raise InputError(f"missing section '{section}'", file=str(path))
    try:
        return from_dict(cls, params[section] or {}, where=section)
    except InputError as exc:
        if exc.file is None:
            raise InputError(exc.message, file=str(path), record=exc.record,
                             field=exc.field) from exc
        raise
