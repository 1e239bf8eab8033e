"""Values a study hands to DVC (tune/tuned.yaml, sweeps/best.yaml: params files of the train
stage), written so that DVC's record of them in dvc.lock equals the file.

DVC reads a params file and writes its values into dvc.lock with ruamel.yaml in round-trip
mode, whose float repr is lossy for some numbers in exponent form (7.813413285645664e-05 read
from a file is written ...663e-05): the lock then never equals the file, and every train stage
stays stale after its own `dvc repro`.
"""

from __future__ import annotations

import io
import math
from typing import Any

import yaml


def dvc_stable(value: Any) -> Any:
    """`value` (nested dicts and lists too) with each float as dvc.lock will hold it: whole
    where it survives DVC's round trip (most do), else rounded to the most significant digits
    that do (14 for the value above: a change of 5e-15 relative)."""
    if isinstance(value, dict):
        return {k: dvc_stable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dvc_stable(v) for v in value]
    if not isinstance(value, float) or not math.isfinite(value):
        return value
    from ruamel.yaml import YAML  # DVC's YAML library (installed with dvc)

    ruamel = YAML()  # round-trip mode, as DVC reads a params file and writes dvc.lock
    for digits in range(17, 6, -1):
        rounded = float(f"{value:.{digits}g}")
        read = ruamel.load(yaml.safe_dump({"v": rounded}))  # the file as written, as DVC reads it
        lock = io.StringIO()
        ruamel.dump(read, lock)
        if ruamel.load(lock.getvalue())["v"] == rounded:
            return rounded
    return value
