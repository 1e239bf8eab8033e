"""Shared fixtures. Motif thresholds are cached under the repo's .cache (as `make` sets)."""

from __future__ import annotations

import os
import subprocess
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


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The Optuna URL of a PostgreSQL server: the CI's (`.ci/run` exports it) or one started
    from the OS packages by scripts/postgres.sh; skips when neither is possible."""
    url = os.environ.get("FGPO_TEST_POSTGRES_URL")
    if url:
        return url
    r = subprocess.run([str(REPO / "scripts" / "postgres.sh"), "start"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"PostgreSQL could not be started: {r.stderr.strip()[-300:]}")
    return r.stdout.strip()
