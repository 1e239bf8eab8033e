"""Shared fixtures. Motif thresholds are cached under the repo's .cache (as `make` sets)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL_DATA = REPO.parent / "shared" / "data" / "real"
os.environ.setdefault("FGPO_CACHE_DIR", str(REPO / ".cache" / "fgpo"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def real_data() -> Path:
    if not REAL_DATA.is_dir():
        pytest.skip(f"real data folder {REAL_DATA} absent (shared/ not laid beside the repo)")
    return REAL_DATA
