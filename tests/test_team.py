"""Team setup (README, "Team setup"): the services such a team runs, each started on localhost
(by `.ci/run`, or by the fixtures in conftest.py): a shared S3 DVC remote (moto's S3 server) and
one MLflow tracking server on a PostgreSQL backend store with its artifacts on S3; Optuna
workers started together on one study (journal file and PostgreSQL)."""

from __future__ import annotations

import filecmp
import shutil
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import S3_CREDENTIALS, new_bucket
from test_stages_smoke import _one_setting_project
from test_training import tiny_backbone  # noqa: F401 - a fixture

WORKER = Path(__file__).parent / "sweep_worker.py"

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_database(postgres_url: str, name: str) -> str:
    """A fresh database on the test's PostgreSQL server; returns its SQLAlchemy URL for psycopg."""
    import psycopg

    server = postgres_url.rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server.replace('postgresql://', 'postgresql+psycopg://')}/{name}"


@pytest.fixture(scope="module")
def mlflow_server(postgres_url, s3_endpoint, tmp_path_factory):
    """The team's MLflow server, started as the README says: runs and the model registry in
    PostgreSQL, artifacts (models, datasets' files) in S3, proxied by the server so the
    clients need no S3 credentials. Yields (tracking URL, backend store URL, bucket URL)."""
    backend = new_database(postgres_url, f"fgpo_mlflow_server_{os.getpid()}")
    bucket = new_bucket(s3_endpoint, f"fgpo-mlflow-{os.getpid()}")
    port = free_port()
    log = tmp_path_factory.mktemp("mlflow-server") / "server.log"
    env = {**os.environ, **S3_CREDENTIALS, "MLFLOW_S3_ENDPOINT_URL": s3_endpoint}
    with open(log, "w") as out:
        proc = subprocess.Popen([str(BIN / "mlflow"), "server", "--backend-store-uri", backend,
                                 "--artifacts-destination", f"{bucket}/artifacts",
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            assert time.time() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
    yield url, backend, bucket
    proc.terminate()
    proc.wait(timeout=30)


def s3_keys(endpoint: str, bucket: str) -> list[str]:
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket.removeprefix("s3://"))
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def stages_run(log: str) -> set[str]:
    return {line.split("'")[1] for line in log.splitlines() if line.startswith("Running stage '")}


# ---- the team's workflow: tables on S3, runs on one MLflow server ------------------------------
@pytest.mark.slow
def test_tables_pushed_to_s3_pull_byte_identical_and_runs_land_on_the_team_server(
        tmp_path, s3_endpoint, mlflow_server):
    """The GPU machine builds the tables and pushes them to the team's S3 remote; a fresh clone
    pulls them byte for byte, and its `dvc repro` runs only the training and the report, logging
    to the team's MLflow server (PostgreSQL + S3): training runs with their datasets, models in
    S3 and the registry, a sweep's trials, and the report's links read back from the server."""
    from mlflow.tracking import MlflowClient

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

    server, _, artifacts = mlflow_server
    ran = stages_run(run("dvc", "repro", cwd=laptop, MLFLOW_TRACKING_URI=server))
    assert ran, "dvc repro ran nothing"
    assert all(s.startswith(("train@", "report")) for s in ran), sorted(ran)
    assert any(s.startswith("train@") for s in ran)
    assert not (laptop / "mlruns" / "mlflow.db").exists()  # nothing in a local store

    # ---- what the server holds: runs, their inputs, models in S3, the registry ----
    client = MlflowClient(server)
    exp = client.get_experiment_by_name("fgpo")
    every = client.search_runs([exp.experiment_id], "attributes.status = 'FINISHED'")
    runs = [r for r in every if r.data.tags.get("kind") != "report"]  # the report's own run
    assert "report" in {r.data.tags.get("kind") for r in every}
    assert sorted(r.data.tags["method"] for r in runs) == ["fgpo", "grpo"]
    for r in runs:
        sources = {d.dataset.name for d in r.inputs.dataset_inputs}
        assert any("careful_expert" in n and "genomeqa" in n for n in sources), sources
    keys = s3_keys(s3_endpoint, artifacts)
    assert any(k.endswith("MLmodel") for k in keys), keys[:20]
    registered = client.search_registered_models()
    assert [m.name for m in registered] == ["fgpo-careful_expert-genomeqa"]
    # the report's links point at the server's UI and name these runs
    links = (laptop / "reports" / "mlflow_runs.md").read_text()
    linked = set(re.findall(r"/runs/([0-9a-f]{32})", links))
    assert linked == {r.info.run_id for r in runs}
    assert f"{server}/#/experiments/{exp.experiment_id}/runs/" in links

    # ---- a sweep on the same server ----
    params = yaml.safe_load((laptop / "params.yaml").read_text())
    params["sweep"]["space"]["batch_size"]["choices"] = [4]  # the shrunken split has 14 questions
    (laptop / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run("fgpo", "sweep", "--method", "grpo", "--reasoner", "careful_expert", "--benchmark",
        "genomeqa", "--n-trials", "2", "--storage", f"sqlite:///{tmp_path / 'optuna.db'}",
        cwd=laptop, MLFLOW_TRACKING_URI=server)
    sweeps = client.get_experiment_by_name("fgpo-sweeps")
    trials = client.search_runs([sweeps.experiment_id], "tags.kind = 'trial'")
    states = {t.data.tags["optuna_state"]: t.data.tags.get("error") for t in trials}
    assert len(trials) == 2 and set(states) <= {"COMPLETE", "PRUNED"}, states


# ---- N sweep workers on one study ------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["journal", "postgresql"])
def test_workers_started_together_share_one_study_without_duplicates(
        kind, tiny_backbone, tmp_path, request, mlflow_server):
    """Two workers started at the same instant on one new study: exactly one sets it up (one
    MLflow parent run; params.yaml's values enqueued as trial 0), the trials are spread over
    both, no two trials share their params (no seed race), and every trial is in MLflow."""
    import optuna
    from mlflow.tracking import MlflowClient

    from sweep_worker import sweep_config
    from test_training import tiny_cfg
    from fgpo.sweep.study import default_trial

    name = f"{kind}-{os.getpid()}"
    if kind == "journal":
        storage = str(tmp_path / "optuna.log")  # a file: Optuna's JournalStorage
    else:
        # a new database: the workers also race to create Optuna's tables in it
        storage = new_database(request.getfixturevalue("postgres_url"),
                               f"fgpo_optuna_{os.getpid()}")
    server = mlflow_server[0]
    # every trial a random startup trial: workers seeded alike would draw the same ones
    env = {**os.environ, "MLFLOW_TRACKING_URI": server, "FGPO_TEST_STUDY": name,
           "FGPO_TEST_STARTUP_TRIALS": "10"}
    procs = [subprocess.Popen([sys.executable, str(WORKER), tiny_backbone, storage, "3"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()[-3000:]

    if kind == "journal":
        from optuna.storages.journal import JournalFileBackend
        storage = optuna.storages.JournalStorage(JournalFileBackend(storage))
    trials = optuna.load_study(study_name=name, storage=storage).trials
    assert sorted(t.number for t in trials) == list(range(6))  # none lost, none duplicated
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) == 2
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(params)) == 6, params
    first = default_trial(sweep_config().dimensions("grpo"), tiny_cfg(tiny_backbone))
    assert trials[0].params == first

    client = MlflowClient(server)
    exp = client.get_experiment_by_name("fgpo-sweeps")
    parents = client.search_runs([exp.experiment_id], f"tags.study = '{name}' and "
                                 "tags.kind = 'study'")
    assert len(parents) == 1
    runs = client.search_runs([exp.experiment_id], f"tags.study = '{name}' and "
                              "tags.kind = 'trial'")
    assert sorted(int(r.data.tags["trial"]) for r in runs) == list(range(6))
    by_trial = {int(r.data.tags["trial"]): r for r in runs}
    for t in trials:
        run = by_trial[t.number]
        assert run.info.run_id == t.user_attrs["mlflow_run_id"]
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.data.tags["optuna_state"] == t.state.name
        assert float(run.data.params["learning_rate"]) == pytest.approx(
            t.params["learning_rate"])


# ---- a table built across N servers as DVC stages --------------------------------------------
@pytest.mark.slow
def test_dvc_repro_builds_a_table_in_shards_on_two_servers_and_merges_it(tmp_path):
    """reward_table.sharded with two OpenAI-compatible servers (local fakes): `dvc repro` runs
    one reward_shard stage per server, each asking only its share of the questions, and a
    reward_merge stage; the merged table equals a one-process build, and nothing is left to
    `dvc commit` by hand."""
    import threading
    from http.server import ThreadingHTTPServer

    import pandas as pd

    from test_reasoner_openai import FakeServer, Handler

    fakes, httpds = [], []
    for _ in range(2):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        fake = FakeServer()
        fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        httpd.fake = fake
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        fakes.append(fake)
        httpds.append(httpd)
    try:
        work = tmp_path / "repo"
        params = _one_setting_project(work)
        rt = params["reward_table"]
        rt["reasoners"]["served"] = {"backend": "openai", "model": "m", "base_url": fakes[0].url,
                                     "api_key_env": "FGPO_TEST_KEY", "concurrency": 8}
        rt.update(build=["careful_expert", "served"], unsharded=["careful_expert"],
                  sharded={"reasoners": ["served"], "shards": [0, 1],
                           "base_urls": [f.url for f in fakes]})
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        key = {"FGPO_TEST_KEY": "sk-test"}
        # the README's commands: upstream once, the shards side by side, then the merge
        assert stages_run(run("dvc", "repro", "tools", cwd=work, **key)) == {
            "prepare@genomeqa", "tools@genomeqa"}
        env = {**os.environ, **key, "PATH": f"{BIN}:{os.environ['PATH']}"}
        env.pop("MLFLOW_TRACKING_URI", None)
        shards = [subprocess.Popen(["dvc", "repro", "--single-item",
                                    f"reward_shard@served-genomeqa-{i}"], cwd=work, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for i in range(2)]
        for i, p in enumerate(shards):
            out = p.communicate(timeout=600)[0]
            assert p.returncode == 0, out[-3000:]
            assert stages_run(out) == {f"reward_shard@served-genomeqa-{i}"}
        assert min(f.peak for f in fakes) >= 1
        ran = stages_run(run("dvc", "repro", "reward_merge", cwd=work, **key))
        assert ran == {"reward_merge@served-genomeqa"}
        assert "up to date" in run("dvc", "status", "reward_merge", cwd=work, **key)

        n_q = len(pd.read_parquet(work / "data/benchmarks/genomeqa.parquet"))
        n_sub = 2 ** len(params["tools"]["names"])
        asked = [{b["messages"][-1]["content"] for b in f.bodies} for f in fakes]
        # shard i asks the questions with index % 2 == i, every subset once, on its own server
        assert [len(f.bodies) for f in fakes] == [(n_q + 1) // 2 * n_sub, n_q // 2 * n_sub]
        assert not asked[0] & asked[1]

        merged = pd.read_parquet(work / "data/reward_tables/served/genomeqa.parquet")
        alone = tmp_path / "alone"
        shutil.copytree(work / "data", alone, ignore=shutil.ignore_patterns("reward_tables"))
        run("fgpo", "reward-table", "served", "genomeqa", "--data", str(alone), "--no-mlflow",
            cwd=work, **key)
        single = pd.read_parquet(alone / "reward_tables/served/genomeqa.parquet")
        pd.testing.assert_frame_equal(merged, single)
        assert "up to date" in run("dvc", "status", "reward_merge", cwd=work, **key)
    finally:
        for httpd in httpds:
            httpd.shutdown()
            httpd.server_close()
