"""MLflow tracking and credentials: redaction, resumed runs, orphaned runs, the storage URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from fgpo.errors import InputError
from fgpo.redact import redact, redact_text, redact_url, url_with_password_from_env
from fgpo.sweep.study import STORAGE_ENV, SweepConfig, resolve_storage
from fgpo.tracking import Tracker, end_if_running, open_client, sigterm_as_exit

PLANT = "pl4nted-S3cret"


# ---- redaction: hand-written expectations -----------------------------------------------------
@pytest.mark.parametrize("url, expected", [
    ("postgresql://fgpo:pw@127.0.0.1:5432/db", "postgresql://fgpo:***@127.0.0.1:5432/db"),
    ("postgresql+psycopg2://u:p%40ss@h/db?sslmode=require",
     "postgresql+psycopg2://u:***@h/db?sslmode=require"),
    ("postgresql://fgpo@host/db", "postgresql://fgpo@host/db"),  # no password: unchanged
    ("https://api.example/v1?api_key=abc&x=1", "https://api.example/v1?api_key=***&x=1"),
    ("sqlite:///sweeps/optuna.db", "sqlite:///sweeps/optuna.db"),
    ("not a url", "not a url"),
])
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_config_and_text() -> None:
    cfg = {"sweep": {"storage": f"postgresql://u:{PLANT}@h/db", "storage_password_env": "PW",
                     "n_trials": 3},
           "reasoner": {"api_key": PLANT, "api_key_env": "OPENAI_API_KEY",
                        "base_url": f"http://u:{PLANT}@h/v1"}, "list": [f"mysql://a:{PLANT}@b"]}
    out = redact(cfg)
    assert PLANT not in repr(out)
    assert out["sweep"]["storage"] == "postgresql://u:***@h/db"
    assert out["sweep"]["storage_password_env"] == "PW"  # names a variable, not a secret
    assert out["reasoner"]["api_key"] == "***" and out["sweep"]["n_trials"] == 3
    assert redact_text(f"cannot connect to postgresql://u:{PLANT}@h/db: refused") == \
        "cannot connect to postgresql://u:***@h/db: refused"


def test_storage_url_precedence_and_password_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = SweepConfig(storage="sqlite:///a.db")
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert resolve_storage(None, cfg) == "sqlite:///a.db"
    monkeypatch.setenv(STORAGE_ENV, "postgresql://u@h/env")
    assert resolve_storage(None, cfg) == "postgresql://u@h/env"
    assert resolve_storage("postgresql://u@h/cli", cfg) == "postgresql://u@h/cli"
    cfg = SweepConfig(storage="postgresql://fgpo@h:1/db", storage_password_env="FGPO_TEST_PW")
    monkeypatch.delenv(STORAGE_ENV)
    with pytest.raises(InputError, match="FGPO_TEST_PW"):
        resolve_storage(None, cfg)
    monkeypatch.setenv("FGPO_TEST_PW", "p@ss/word")
    assert resolve_storage(None, cfg) == "postgresql://fgpo:p%40ss%2Fword@h:1/db"
    with pytest.raises(InputError, match="needs a user"):
        url_with_password_from_env("postgresql://h/db", "FGPO_TEST_PW")


# ---- the MLflow store --------------------------------------------------------------------------
@pytest.fixture
def uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"


def test_credentials_never_reach_the_mlflow_store(uri: str, tmp_path: Path) -> None:
    t = Tracker("exp", "run", {"storage": f"postgresql://u:{PLANT}@h/db"},
                {"sweep": {"storage": f"postgresql://u:{PLANT}@h/db"}, "token": PLANT},
                uri=uri, root=tmp_path / "mlruns")
    t.set_tags({"error": f"OperationalError at postgresql://u:{PLANT}@h/db"})
    t.end()
    assert PLANT not in repr(t)
    run = MlflowClient(uri).get_run(t.run_id)
    assert run.data.params["sweep.storage"] == "postgresql://u:***@h/db"
    assert run.data.params["token"] == "***"
    for path in tmp_path.rglob("*"):  # the whole store: the database and any artifact
        if path.is_file():
            assert PLANT.encode() not in path.read_bytes(), path


def test_resumed_run_does_not_log_a_metric_point_twice(uri: str, tmp_path: Path) -> None:
    t = Tracker("exp", "run", {}, {}, uri=uri, root=tmp_path / "mlruns")
    for step in range(1, 7):  # killed after step 6, last checkpoint at step 4
        t.log_metrics({"train/loss": 1.0 / step}, step)
        if step == 4:
            t.flush()  # what the training loop does before saving a checkpoint
    resumed = Tracker("exp", "run", {}, {}, uri=uri, run_id=t.run_id, root=tmp_path / "mlruns")
    for step in range(5, 11):
        resumed.log_metrics({"train/loss": 1.0 / step, "val/accuracy": 0.5}, step)
    resumed.end()
    client = MlflowClient(uri)
    steps = sorted(m.step for m in client.get_metric_history(t.run_id, "train/loss"))
    assert steps == list(range(1, 11))
    assert len(client.get_metric_history(t.run_id, "val/accuracy")) == 6


def test_an_orphaned_run_is_ended_once(uri: str, tmp_path: Path) -> None:
    t = Tracker("exp", "run", {}, {}, uri=uri, root=tmp_path / "mlruns")  # its process "died"
    assert end_if_running(t.run_id, "KILLED", uri) is True
    run = MlflowClient(uri).get_run(t.run_id)
    assert run.info.status == "KILLED" and "orphaned" in run.data.tags
    assert end_if_running(t.run_id, "FAILED", uri) is False  # already ended: left alone
    assert MlflowClient(uri).get_run(t.run_id).info.status == "KILLED"
    assert end_if_running("0" * 32, "KILLED", uri) is False  # unknown run


def test_open_client_creates_a_fresh_store(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    client = open_client(uri)
    assert (tmp_path / "new" / "mlflow.db").exists()
    assert client.search_experiments()[0].name == "Default"


def test_sigterm_becomes_system_exit() -> None:
    with pytest.raises(SystemExit) as info, sigterm_as_exit():
        os.kill(os.getpid(), signal.SIGTERM)  # delivered before the next bytecode
        signal.pause()  # never reached when the handler raises
    assert info.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the old handler is back


def _python(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter (signals and the unraisable hook are process-wide)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60)


def test_a_second_sigterm_does_not_cut_the_ending_short() -> None:
    """A worker's parent-death signal comes again as each thread of the dying parent exits: the
    ending (the MLflow run set KILLED) runs to its end all the same."""
    out = _python("""
        import os, signal, time
        from fgpo.tracking import sigterm_as_exit
        try:
            with sigterm_as_exit():
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(30)
                except SystemExit:
                    os.kill(os.getpid(), signal.SIGTERM)  # the second one, while ending
                    time.sleep(0.3)
                    print("ended", flush=True)
                    raise
        except SystemExit as exc:
            print("exit", exc.code)
    """)
    assert out.stdout.split() == ["ended", "exit", "143"], out.stderr


def test_a_sigterm_python_drops_in_a_finaliser_is_sent_again() -> None:
    """Python drops an exception raised in `__del__` or a weakref callback (tqdm's `__del__` was
    caught so): the signal is sent again and ends the process's work as if it had landed
    anywhere else, instead of being lost."""
    out = _python("""
        import os, signal, time
        from fgpo.tracking import sigterm_as_exit

        class Finaliser:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGTERM)  # the handler runs in here
                sum(range(1000))

        try:
            with sigterm_as_exit():
                item = Finaliser()
                del item
                time.sleep(30)
                print("lost")
        except SystemExit as exc:
            print("exit", exc.code)
    """)
    assert "Exception ignored" in out.stderr  # the drop happened, as in the wild
    assert out.stdout.split() == ["exit", "143"], out.stderr


def test_a_sigterm_while_mlflow_creates_the_run_ends_that_run_killed(tmp_path: Path) -> None:
    """The signal lands inside MLflow's `create_run`, after the run row exists and before the
    caller holds its id: the run is ended KILLED (it was left RUNNING, its id known to nobody)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = _python(f"""
        import os, signal, time
        from pathlib import Path
        from mlflow.tracking import MlflowClient
        from fgpo.tracking import Tracker, sigterm_as_exit

        create = MlflowClient.create_run

        def create_then_signal(self, *args, **kwargs):
            run = create(self, *args, **kwargs)  # the row is written
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            return run

        MlflowClient.create_run = create_then_signal
        try:
            with sigterm_as_exit():
                Tracker("exp", "run", {{}}, {{"lr": 1}}, uri={uri!r}, root=Path({str(tmp_path)!r}))
                print("lost")
        except SystemExit as exc:
            print("exit", exc.code)
    """)
    assert out.stdout.split() == ["exit", "143"], out.stderr
    run = _only_run(uri)
    assert run.info.status == "KILLED"


def test_a_sigterm_inside_a_metrics_write_lands_after_it_and_the_run_ends_killed(
        tmp_path: Path) -> None:
    """The signal lands inside MLflow's write transaction of a metrics batch (seen in CI: a
    worker's parent-death signal during a flush): the batch is written whole, the SystemExit
    comes after it, and the run ends KILLED. Raised inside, it cut the transaction: the points
    were lost, and in CI the cut transaction kept the SQLite store locked, so that neither
    worker could end its run ("database is locked") and both stayed RUNNING."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = _python(f"""
        import os, signal, time
        from pathlib import Path
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
        from fgpo.tracking import Tracker, sigterm_as_exit

        latest = SqlAlchemyStore._update_latest_metrics_if_necessary

        def signal_mid_transaction(self, *args, **kwargs):  # the points are inserted by now
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            return latest(self, *args, **kwargs)

        try:
            with sigterm_as_exit():
                t = Tracker("exp", "run", {{}}, {{}}, uri={uri!r}, root=Path({str(tmp_path)!r}))
                t.log_metrics({{"train/loss": 0.5}}, step=1)
                SqlAlchemyStore._update_latest_metrics_if_necessary = signal_mid_transaction
                try:
                    t.flush()
                    print("lost")
                except SystemExit:
                    SqlAlchemyStore._update_latest_metrics_if_necessary = latest
                    t.end("KILLED")
                    raise
        except SystemExit as exc:
            print("exit", exc.code)
    """)
    assert out.stdout.split() == ["exit", "143"], out.stderr
    run = _only_run(uri)
    assert run.info.status == "KILLED"
    assert run.data.metrics == {"train/loss": 0.5}


def _only_run(uri: str):
    """The one run of experiment "exp" in the store at `uri`."""
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("exp").experiment_id])
    return run


# ---- MLflow's own concepts: experiment kind, DVC experiment tags, UI links --------------------
def test_experiments_are_model_training_and_runs_carry_the_dvc_experiment(tmp_path, monkeypatch):
    """A new experiment, and one a store held from before, are marked model training; under
    `dvc exp run` (DVC sets the env) runs carry the experiment's name and baseline, and the store
    is the project's ($DVC_ROOT), not the temporary copy the stage runs in."""
    from fgpo.tracking.mlflow_run import default_tracking_uri

    project, copy = tmp_path / "project", tmp_path / "project/.dvc/tmp/exps/tmpabc"
    copy.mkdir(parents=True)
    monkeypatch.chdir(copy)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("DVC_ROOT", str(project))
    monkeypatch.setenv("DVC_EXP_NAME", "lr-up")
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "a" * 40)
    assert default_tracking_uri() == f"sqlite:///{project / 'mlruns' / 'mlflow.db'}"
    client = open_client(default_tracking_uri())
    old = client.create_experiment("old")  # created before the kind was set
    run = Tracker("old", "r", {"method": "fgpo"}, {})
    run.end()
    assert client.get_experiment(old).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    tags = client.get_run(run.run_id).data.tags
    assert tags["dvc.exp_name"] == "lr-up" and tags["dvc.baseline_rev"] == "a" * 40
    assert tags["mlflow.source.type"] == "LOCAL" and "mlflow.user" in tags
    assert not (copy / "mlruns").exists()


def test_run_links_open_the_model_training_view(tmp_path):
    """The report's links: each method's latest finished run per seed and a compare view of
    them all, each with the URL parameter that opens MLflow's model-training view."""
    from fgpo.tracking.runs import run_links

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ids = {}
    for method in ("fgpo", "grpo"):
        run = Tracker("fgpo", method, {"method": method, "seed": "0", "setting": "a/b"}, {},
                      uri=uri, root=tmp_path)
        run.end()
        ids[method] = run.run_id
    client = open_client(uri)
    exp = client.get_experiment_by_name("fgpo").experiment_id
    md = run_links(client, exp, "http://ui:5000/", ["fgpo", "grpo"], {"setting": "a/b"})
    assert f"[FGPO s0](http://ui:5000/#/experiments/{exp}/runs/{ids['fgpo']}" \
           f"?workflowType=machine_learning)" in md
    compare = md.split("[compare](")[1].rstrip(")")
    assert compare.endswith("&workflowType=machine_learning")
    assert json.loads(unquote(compare.split("runs=")[1].split("&")[0])) == \
        [ids["fgpo"], ids["grpo"]]


def test_a_tag_lost_to_a_concurrent_insert_is_set_again(uri: str, tmp_path: Path, monkeypatch
                                                        ) -> None:
    """Two sweep workers tagging their shared parent run at once on a PostgreSQL-backed server:
    one insert fails with a duplicate key (seen in CI); the tag is set on the retry. Any other
    error is raised at once."""
    import mlflow

    from fgpo.sweep.engine import tag_shared_run

    t = Tracker("exp", "run", {}, {}, uri=uri, root=tmp_path / "mlruns")
    real, calls = t.client.set_tag, []

    def flaky(run_id: str, key: str, value: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise mlflow.exceptions.RestException({"error_code": "BAD_REQUEST", "message":
                                                   'duplicate key value violates "tag_pk"'})
        real(run_id, key, value)

    monkeypatch.setattr(t.client, "set_tag", flaky)
    tag_shared_run(t, {"best_params": "{}"})
    assert calls == ["best_params"] * 2
    assert t.client.get_run(t.run_id).data.tags["best_params"] == "{}"
    monkeypatch.setattr(t.client, "set_tag", lambda *a: (_ for _ in ()).throw(
        mlflow.exceptions.MlflowException("RESOURCE_DOES_NOT_EXIST")))
    with pytest.raises(mlflow.exceptions.MlflowException, match="RESOURCE_DOES_NOT_EXIST"):
        tag_shared_run(t, {"k": "v"})


def test_a_dataset_lost_to_a_concurrent_insert_is_linked_on_the_retry(uri: str, tmp_path: Path,
                                                                     monkeypatch) -> None:
    """Two seeds of a setting logging the same new dataset at once on a PostgreSQL-backed
    server: the losing insert fails with a duplicate `dataset_pk` key (seen in CI); the retry
    finds the dataset and links it to the run. Any other error is raised at once."""
    import mlflow

    t = Tracker("exp", "run", {}, {}, uri=uri, root=tmp_path / "mlruns")
    data = mlflow.data.from_pandas(pd.DataFrame({"q": [1, 2]}), source="data/b.parquet",
                                   name="benchmark b:train")
    inputs = [mlflow.entities.DatasetInput(data._to_mlflow_entity())]
    other = Tracker("exp", "other", {}, {}, uri=uri, root=tmp_path / "mlruns")
    real, calls = t.client.log_inputs, []

    def lost_once(run_id: str, datasets: list) -> None:
        calls.append(run_id)
        if len(calls) == 1:  # the other worker's insert wins: the row exists, this one fails
            real(other.run_id, datasets=datasets)
            raise mlflow.exceptions.RestException({
                "error_code": "BAD_REQUEST", "message": "(psycopg.errors.UniqueViolation) "
                'duplicate key value violates unique constraint "dataset_pk"'})
        real(run_id, datasets=datasets)

    monkeypatch.setattr(t.client, "log_inputs", lost_once)
    t.log_inputs(inputs)
    assert calls == [t.run_id] * 2
    assert [d.dataset.name for d in t.client.get_run(t.run_id).inputs.dataset_inputs] == \
        ["benchmark b:train"]
    monkeypatch.setattr(t.client, "log_inputs", lambda *a, **k: (_ for _ in ()).throw(
        mlflow.exceptions.MlflowException("RESOURCE_DOES_NOT_EXIST")))
    with pytest.raises(mlflow.exceptions.MlflowException, match="RESOURCE_DOES_NOT_EXIST"):
        t.log_inputs(inputs)


# ---- the model registry: the champion alias only moves forward ---------------------------------
def test_the_champion_alias_moves_only_to_a_better_validation_score(tmp_path, monkeypatch):
    """Each training registers its setting's best run; `@champion` (what the README loads) moves
    only when the new one beats it on val/accuracy, then val/expected_reward: a worse (e.g. a
    shrunk one-epoch) run or an equal one is registered but never loaded by default."""
    import mlflow
    import mlflow.pyfunc

    from fgpo.tracking.registry import CHAMPION, Candidate, register_best

    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(uri)

    class Constant(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    def trained(acc: float, er: float, method: str = "fgpo", seed: int = 0) -> Candidate:
        with mlflow.start_run() as run:
            info = mlflow.pyfunc.log_model(name="policy", python_model=Constant())
        return Candidate(method, seed, {"val/accuracy": acc, "val/expected_reward": er},
                         run.info.run_id, info.model_uri)

    client = MlflowClient(uri)
    name = "fgpo-r-b"

    def champion() -> str:
        return str(client.get_model_version_by_alias(name, CHAMPION).version)

    first = trained(0.90, 0.85, "grpo")
    register_best([trained(0.70, 0.70), first], "r", "b", "md5a")
    assert champion() == "1"
    assert client.get_model_version(name, "1").run_id == first.run_id  # the process's best
    register_best([trained(0.80, 0.99)], "r", "b", "md5a")  # worse accuracy
    register_best([trained(0.90, 0.85)], "r", "b", "md5a")  # a tie
    assert champion() == "1"
    assert [v.version for v in client.search_model_versions(f"name = '{name}'")] != ["1"]
    better = trained(0.90, 0.86, seed=1)  # equal accuracy, higher expected reward
    register_best([better], "r", "b", "md5b")
    assert champion() == "4" and client.get_model_version(name, "4").run_id == better.run_id
    register_best([better], "r", "b", "md5b")  # registered already: no new version
    assert len(client.search_model_versions(f"name = '{name}'")) == 4
    loaded = mlflow.pyfunc.load_model(f"models:/{name}@{CHAMPION}")
    assert loaded.metadata.run_id == better.run_id
    mlflow.set_tracking_uri(None)


def test_a_copied_checkout_keeps_its_artifacts_in_its_own_tree(tmp_path, monkeypatch):
    """MLflow's SQLite store records absolute artifact locations: a copy of a checkout used to
    write its new runs' artifacts into the original tree. Opening the project's store from the
    copy re-roots them: old runs read their copied artifacts, new ones write beside the copy."""
    import shutil

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    original, copy = tmp_path / "original", tmp_path / "copy"
    original.mkdir()
    (tmp_path / "note.txt").write_text("evidence\n")
    monkeypatch.chdir(original)
    old = Tracker("fgpo", "first", {}, {})
    old.log_artifact(tmp_path / "note.txt")
    old.end()
    shutil.copytree(original, copy)
    monkeypatch.chdir(copy)
    new = Tracker("fgpo", "second", {}, {})
    new.log_artifact(tmp_path / "note.txt")
    new.end()
    client = MlflowClient(f"sqlite:///{copy / 'mlruns' / 'mlflow.db'}")
    for run_id in (old.run_id, new.run_id):
        uri = client.get_run(run_id).info.artifact_uri
        assert uri.startswith((copy / "mlruns" / "artifacts").as_uri()), uri
        assert Path(client.download_artifacts(run_id, "note.txt", str(tmp_path / run_id))
                    ).read_text() == "evidence\n"
    experiment = client.get_experiment_by_name("fgpo")
    assert experiment.artifact_location == (copy / "mlruns" / "artifacts").as_uri()
    # nothing of the copy's new run went into the original tree
    assert not list((original / "mlruns" / "artifacts").rglob(new.run_id))
    assert list((copy / "mlruns" / "artifacts").rglob(f"{new.run_id}/artifacts/note.txt"))
    # the original, opened again, still points at itself
    monkeypatch.chdir(original)
    Tracker("fgpo", "third", {}, {}).end()
    assert MlflowClient(f"sqlite:///{original / 'mlruns' / 'mlflow.db'}").get_experiment_by_name(
        "fgpo").artifact_location == (original / "mlruns" / "artifacts").as_uri()


def test_a_model_left_pending_by_a_killed_attempt_is_marked_failed(uri: str, tmp_path: Path):
    """A kill while the policy was being logged left its logged model PENDING for good; the
    resumed run's logging marks it FAILED before logging the model anew."""
    from mlflow.entities import LoggedModelStatus

    from fgpo.policy.pyfunc import fail_pending_models

    t = Tracker("exp", "run", {}, {}, uri=uri, root=tmp_path / "mlruns")
    client = MlflowClient(uri)
    exp = client.get_run(t.run_id).info.experiment_id
    dead = client.create_logged_model(exp, name="policy", source_run_id=t.run_id)
    done = client.create_logged_model(exp, name="policy", source_run_id=t.run_id)
    client.finalize_logged_model(done.model_id, LoggedModelStatus.READY)
    other = Tracker("exp", "other", {}, {}, uri=uri, root=tmp_path / "mlruns")
    elsewhere = client.create_logged_model(exp, name="policy", source_run_id=other.run_id)
    assert fail_pending_models(client, t.run_id) == [dead.model_id]
    status = {m: client.get_logged_model(m).status for m in
              (dead.model_id, done.model_id, elsewhere.model_id)}
    assert status == {dead.model_id: LoggedModelStatus.FAILED,
                      done.model_id: LoggedModelStatus.READY,
                      elsewhere.model_id: LoggedModelStatus.PENDING}  # another run's: left
    t.end()
    other.end()
