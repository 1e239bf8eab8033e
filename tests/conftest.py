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
# every `dvc` the tests run: no usage report. DVC sends it from a daemon it double-forks at the
# end of each command, and the command waits on a pipe for that daemon's pid: offline, and
# forked from a multi-threaded process, that is one more way for a test to hang.
os.environ["DVC_NO_ANALYTICS"] = "1"


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


S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                  "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """The endpoint URL of an S3-compatible server (moto): the CI's (`.ci/run` exports it) or
    one started by scripts/s3.sh; skips when neither is possible. Any credentials do (the
    tests use S3_CREDENTIALS); each test creates its own bucket."""
    url = os.environ.get("FGPO_TEST_S3_ENDPOINT")
    if url:
        return url
    r = subprocess.run([str(REPO / "scripts" / "s3.sh"), "start"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"the S3 server could not be started: {r.stderr.strip()[-300:]}")
    return r.stdout.strip()


def new_bucket(endpoint: str, name: str) -> str:
    """Create bucket `name` on the test server; returns its s3:// URL."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, **{k.lower(): v for k, v in
                                                        S3_CREDENTIALS.items()
                                                        if k != "AWS_DEFAULT_REGION"},
                      region_name=S3_CREDENTIALS["AWS_DEFAULT_REGION"])
    s3.create_bucket(Bucket=name)
    return f"s3://{name}"
