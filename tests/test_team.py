"""Team setup (README, "Team setup"): the services such a team runs, each started on localhost
(by `.ci/run`, or by the fixtures in conftest.py): a shared S3 DVC remote (moto's S3 server)."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import S3_CREDENTIALS, new_bucket
from test_stages_smoke import _one_setting_project

BIN = Path(sys.executable).parent


def run(*args: str, cwd: Path, **env: str) -> str:
    """A command as a user types it: the venv on PATH, the S3 credentials set, MLflow in the
    project's store unless `env` says otherwise."""
    base = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    r = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True,
                       env={**base, **S3_CREDENTIALS, "PATH": f"{BIN}:{os.environ['PATH']}",
                            **env})
    assert r.returncode == 0, f"{' '.join(args)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout + r.stderr


def stages_run(log: str) -> set[str]:
    return {line.split("'")[1] for line in log.splitlines() if line.startswith("Running stage '")}


# ---- 1. a shared DVC remote on S3 ------------------------------------------------------------
@pytest.mark.slow
def test_tables_pushed_to_s3_pull_byte_identical_and_repro_then_only_trains(tmp_path,
                                                                            s3_endpoint):
    """The GPU machine builds the tables and pushes them to the team's S3 remote; a fresh clone
    pulls them byte for byte, and its `dvc repro` runs only the training and the report."""
    gpu = tmp_path / "gpu"
    _one_setting_project(gpu)
    run("dvc", "repro", "table_stats", cwd=gpu)
    bucket = new_bucket(s3_endpoint, f"fgpo-dvc-{os.getpid()}")
    # the README's commands: the remote in .dvc/config (committed), credentials from the
    # environment (or `dvc remote modify --local`)
    run("dvc", "remote", "add", "-d", "team", f"{bucket}/store", cwd=gpu)
    run("dvc", "remote", "modify", "team", "endpointurl", s3_endpoint, cwd=gpu)
    run("git", "add", "-A", cwd=gpu)
    run("git", "commit", "-qm", "tables built", cwd=gpu)
    pushed = run("dvc", "push", cwd=gpu)
    assert "pushed" in pushed

    laptop = tmp_path / "laptop"
    run("git", "clone", "-q", str(gpu), str(laptop), cwd=tmp_path)
    assert not (laptop / "data").exists()
    # the tables exist on the remote, the training outputs not yet: pull what there is
    run("dvc", "pull", "--allow-missing", cwd=laptop)
    outs = sorted(p.relative_to(gpu) for p in (gpu / "data").rglob("*.parquet"))
    assert {p.parts[1] for p in outs} == {"benchmarks", "tool_outputs", "reward_tables"}
    for rel in outs:
        assert filecmp.cmp(gpu / rel, laptop / rel, shallow=False), rel

    ran = stages_run(run("dvc", "repro", cwd=laptop))
    assert ran, "dvc repro ran nothing"
    assert all(s.startswith(("train@", "report")) for s in ran), sorted(ran)
    assert any(s.startswith("train@") for s in ran)
