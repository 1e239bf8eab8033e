"""Provenance every logged run carries: experiment names, the code commit, file digests."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

EXPERIMENT = "fgpo"
"""Training runs (one per method x setting x seed) and the report run (tag kind=report)."""
SWEEP_EXPERIMENT = "fgpo-sweeps"
"""Optuna studies (parent runs) and their trials (nested runs)."""
TABLES_EXPERIMENT = "fgpo-reward-tables"
"""Reward-table builds: one run each (reasoner, cells, calls, throughput, unparseable share)."""
TUNE_EXPERIMENT = "fgpo-tune"
"""The per-method tuning studies of `fgpo tune` (parent runs) and their trials (nested)."""


def file_md5(path: Path) -> str:
    """The md5 DVC records for a file output in dvc.lock."""
    h = hashlib.md5()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
