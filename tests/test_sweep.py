"""Optuna sweeps: the search space, a study with nested MLflow runs, failures, mismatches,
resume after a killed worker, parallel workers' seeds (two workers started at once on one
study: tests/test_team.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from fgpo.errors import InputError
from fgpo.sweep.space import parse_space
from fgpo.sweep.engine import TrialSeededTPE
from fgpo.sweep.storage import open_storage
from fgpo.sweep.study import SweepConfig, TrialTracker, best_of, default_trial, run_sweep
from fgpo.train.config import TrainConfig
from fgpo.train.overrides import apply

sys.path.insert(0, str(Path(__file__).parent))
from sweep_worker import SPACE, sweep_config  # noqa: E402
from test_training import synthetic_data, tiny_backbone, tiny_cfg  # noqa: E402,F401

REPO = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).parent / "sweep_worker.py"


# ---- the search space ------------------------------------------------------------------------
def test_space_from_params_yaml_parses_and_splits_by_method():
    import yaml
    raw = yaml.safe_load((REPO / "params.yaml").read_text())["sweep"]
    cfg = SweepConfig(**raw)
    fgpo, grpo = {d.name for d in cfg.dimensions("fgpo")}, {d.name for d in cfg.dimensions("grpo")}
    assert {"policy.lora_r", "policy.lora_alpha", "policy.lora_dropout", "learning_rate",
            "weight_decay", "warmup_ratio", "batch_size", "beta", "entropy_coef",
            "policy.lora_target_modules"} <= fgpo
    assert grpo - fgpo == {"grpo.group_size", "grpo.clip_eps", "grpo.inner_epochs",
                           "grpo.temperature"}
    cfg2 = apply(TrainConfig(), {"policy.lora_r": 16, "grpo.clip_eps": 0.3, "learning_rate": 1e-4,
                                 "policy.lora_target_modules": "query,key,value"})
    assert (cfg2.policy.lora_r, cfg2.grpo.clip_eps, cfg2.learning_rate) == (16, 0.3, 1e-4)
    assert cfg2.policy.lora_target_modules == ["query", "key", "value"]


@pytest.mark.parametrize("space, match", [
    ({"lora_rank": {"type": "int", "low": 1, "high": 4}}, "unknown parameter 'lora_rank'"),
    ({"policy.lora_rr": {"type": "int", "low": 1, "high": 4}}, "policy.lora_rr"),
    ({"learning_rate": {"type": "float", "low": 1e-3, "high": 1e-3}}, "empty range"),
    ({"learning_rate": {"type": "float", "low": 0.0, "high": 1e-3, "log": True}}, "low > 0"),
    ({"batch_size": {"type": "categorical", "choices": []}}, "empty choices"),
    ({"batch_size": {"type": "uniform", "low": 1, "high": 2}}, "type must be"),
    ({"grpo": {"type": "int", "low": 1, "high": 2}}, "section"),
    ({}, "empty search space"),
])
def test_bad_search_spaces_are_refused(space, match):
    with pytest.raises(InputError, match=match):
        parse_space(space)


def test_trial_tracker_prunes_on_the_pruners_word():
    class FakeTrial:
        reported: list = []
        def report(self, value, step):
            self.reported.append((step, value))
        def should_prune(self):
            return len(self.reported) >= 2

    t = TrialTracker(FakeTrial(), None, prune=True)
    t.log_metrics({"val/accuracy": 0.5}, 0)      # the step-0 uniform point is not reported
    t.log_metrics({"train/loss": 1.0}, 1)
    t.log_metrics({"val/accuracy": 0.6}, 2)
    with pytest.raises(optuna.TrialPruned):
        t.log_metrics({"val/accuracy": 0.4}, 4)
    assert FakeTrial.reported == [(2, 0.6), (4, 0.4)]


# ---- a study in-process ------------------------------------------------------------------------
@pytest.fixture
def mlflow_uri(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.chdir(tmp_path)
    return uri


def _runs(uri: str) -> list:
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("fgpo-sweeps")
    return client.search_runs([exp.experiment_id], max_results=1000)


def test_study_logs_parent_and_nested_trials_and_writes_best(tiny_backbone, mlflow_uri, tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(tiny_backbone), sweep_config(),
                      synthetic_data(), 5, storage, "s")
    assert len(study.trials) == 5
    # the first trial is params.yaml's own setting (each value inside its range), enqueued
    base = tiny_cfg(tiny_backbone)
    first = default_trial(sweep_config().dimensions("grpo"), base)
    assert first == {"learning_rate": base.learning_rate, "policy.lora_r": base.policy.lora_r,
                     "grpo.clip_eps": base.grpo.clip_eps}
    assert study.trials[0].params == first
    runs = _runs(mlflow_uri)
    parents = [r for r in runs if r.data.tags["kind"] == "study"]
    trials = [r for r in runs if r.data.tags["kind"] == "trial"]
    assert len(parents) == 1 and len(trials) == 5
    for r in trials:
        assert r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        t = study.trials[int(r.data.tags["trial"])]
        assert r.data.tags["optuna_state"] == t.state.name
        assert r.info.status == {"COMPLETE": "FINISHED", "PRUNED": "KILLED"}[t.state.name]
        assert float(r.data.params["learning_rate"]) == pytest.approx(t.params["learning_rate"])
        assert "val/accuracy" in r.data.metrics
    best = best_of(study)
    assert best["trial"] == study.best_trial.number
    assert best["params"] == study.best_trial.params
    assert parents[0].data.tags["best_trial"] == str(study.best_trial.number)
    assert json.loads(parents[0].data.tags["best_params"]) == best["params"]
    assert not (tmp_path / "sweeps").exists()  # run_sweep writes no file: the stage hands off


def test_default_trial_keeps_only_values_inside_the_space():
    dims = parse_space({"learning_rate": {"type": "float", "low": 1e-3, "high": 1e-2},
                        "batch_size": {"type": "categorical", "choices": [8, 16]},
                        "policy.lora_target_modules": {"type": "categorical",
                                                       "choices": ["query,value", "key"]}})
    cfg = apply(TrainConfig(), {"learning_rate": 5e-3, "batch_size": 32,
                                "policy.lora_target_modules": "query,value"})
    # batch_size 32 is not a choice: Optuna samples it; the list is compared in its YAML form
    assert default_trial(dims, cfg) == {"learning_rate": 5e-3,
                                        "policy.lora_target_modules": "query,value"}


def _proposals(sampler_factory, workers: int, n: int) -> list[dict]:
    """Params of trials asked in turn by `workers` processes (simulated: each its own study
    handle and sampler, as each worker builds them) on one in-memory storage."""
    storage = optuna.storages.InMemoryStorage()
    optuna.create_study(study_name="s", storage=storage, sampler=sampler_factory())
    handles = [optuna.load_study(study_name="s", storage=storage, sampler=sampler_factory())
               for _ in range(workers)]
    out = []
    for i in range(n):
        trial = handles[i % workers].ask()
        out.append({"x": trial.suggest_float("x", 0, 1), "k": trial.suggest_int("k", 0, 10**6)})
    return out


def test_workers_sharing_a_seed_propose_distinct_reproducible_trials():
    """Plain TPE seeded alike in two workers proposes the same startup trials (the race the
    seed offset had when workers started together); seeding trial n with seed + n does not,
    and gives the same trials again for the same seed, however the trials were spread."""
    plain = _proposals(lambda: optuna.samplers.TPESampler(seed=0, n_startup_trials=10), 2, 4)
    assert plain[0] == plain[1] and plain[2] == plain[3]  # the bug, shown
    seeded = _proposals(lambda: TrialSeededTPE(0, n_startup_trials=10), 2, 6)
    assert len({json.dumps(p, sort_keys=True) for p in seeded}) == 6
    assert _proposals(lambda: TrialSeededTPE(0, n_startup_trials=10), 3, 6) == seeded
    assert _proposals(lambda: TrialSeededTPE(1, n_startup_trials=10), 1, 6) != seeded
    assert TrialSeededTPE(0, 10)._constant_liar


def test_a_file_path_is_a_journal_storage(tmp_path):
    storage = open_storage(str(tmp_path / "j" / "optuna.log"), "sweep.storage")
    assert isinstance(storage, optuna.storages.JournalStorage)
    with pytest.raises(InputError, match="a file, not a folder"):
        open_storage(str(tmp_path), "sweep.storage")


def _open_together(url: str, barrier, results) -> None:
    barrier.wait()  # all at once, as forked study workers start
    try:
        open_storage(url, "tune.storage")
        results.put("ok")
    except InputError as exc:
        results.put(str(exc))


def test_processes_opening_a_new_sqlite_storage_together_all_get_it(tmp_path):
    """`tune.workers` study processes open one new SQLite file at the same moment: each would
    create Optuna's tables and all but one fail (`table alembic_version already exists`, seen
    in CI; 8 of 10 such starts without the lock); one creates them, under a lock, the others
    find them."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for attempt in range(3):  # a race: three fresh files, six processes each
        url = f"sqlite:///{tmp_path / str(attempt) / 'optuna.db'}"
        barrier, results = ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_open_together, args=(url, barrier, results))
                 for _ in range(6)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(120)
        assert [results.get(timeout=5) for _ in procs] == ["ok"] * 6


def test_a_trial_that_raises_is_recorded_failed_and_the_study_goes_on(tiny_backbone, mlflow_uri,
                                                                      tmp_path):
    cfg = sweep_config(space={**SPACE, "batch_size": {"type": "categorical", "choices": [0]}})
    study = run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(tiny_backbone), cfg,
                      synthetic_data(), 3, f"sqlite:///{tmp_path / 'o.db'}", "fails")
    assert [t.state.name for t in study.trials] == ["FAIL"] * 3
    errors = {r.data.tags.get("error", "") for r in _runs(mlflow_uri)
              if r.data.tags["kind"] == "trial"}
    assert len(errors) == 1 and "batch_size" in errors.pop()


def test_study_with_another_direction_or_space_is_refused(tiny_backbone, mlflow_uri, tmp_path):
    storage = f"sqlite:///{tmp_path / 'o.db'}"
    run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(tiny_backbone), sweep_config(),
              synthetic_data(), 1, storage, "s", tracking=False)
    with pytest.raises(InputError, match="directions") as exc:
        run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(tiny_backbone),
                  sweep_config(multi_objective=True), synthetic_data(), 1, storage, "s",
                  tracking=False)
    assert exc.value.field == "sweep.multi_objective"
    other = {"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True}}
    with pytest.raises(InputError, match="another search space"):
        run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(tiny_backbone),
                  sweep_config(space=other), synthetic_data(), 1, storage, "s", tracking=False)


def test_unreachable_storage_is_a_clear_error():
    t0 = time.time()
    with pytest.raises(InputError, match="cannot open study storage") as exc:
        open_storage("postgresql://fgpo:secret@127.0.0.1:1/none", "sweep.storage")
    assert "sweep.storage" in str(exc.value) and "secret" not in str(exc.value)
    assert time.time() - t0 < 30


def _stage_params(tmp_path: Path, backbone: str, space: dict) -> Path:
    """The repo's params with the tiny synthetic training and the small sweep of sweep_worker."""
    import yaml

    from dataclasses import asdict
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["train"] = json.loads(json.dumps(asdict(tiny_cfg(backbone))))
    params["sweep"] = {**params["sweep"], "epochs": 2, "evals_per_epoch": 2, "n_startup_trials": 1,
                       "n_warmup_steps": 0, "space": space,
                       "storage": f"sqlite:///{tmp_path / 'optuna.db'}"}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def test_best_params_are_kept_per_study(tiny_backbone, mlflow_uri, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from fgpo.cli import app
    from fgpo.stages import sweep as stage
    from fgpo.train.overrides import resolve
    from fgpo.train.overrides import read_best

    monkeypatch.setattr(stage, "load_run_data", lambda *a, **k: synthetic_data())
    params = _stage_params(tmp_path, tiny_backbone, SPACE)
    args = ["sweep", "--method", "grpo", "--reasoner", "synthetic", "--benchmark", "synthetic",
            "--n-trials", "1", "--params", str(params)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    handoff = tmp_path / "sweeps/best.yaml"  # the one hand-off, read by the train stage
    first = read_best("grpo", "synthetic", "synthetic", handoff)
    assert first["study"] == "grpo-synthetic-synthetic" and "-> sweeps/best.yaml" in r.output
    handed = handoff.read_bytes()
    r = CliRunner().invoke(app, [*args, "--study-name", "s2"])
    assert r.exit_code == 0, r.output
    assert handoff.read_bytes() == handed  # a side study never hands its params to training
    assert "a side study" in r.output
    # a study whose only trial fails: no best, and it says so instead of another study's best
    failing = {**SPACE, "batch_size": {"type": "categorical", "choices": [10_000]}}
    params = _stage_params(tmp_path, tiny_backbone, failing)
    r = CliRunner().invoke(app, [*args[:-1], str(params), "--study-name", "s3"])
    assert r.exit_code == 0, r.output
    assert "no trial completed" in r.output and "best trial" not in r.output
    assert handoff.read_bytes() == handed
    assert sorted(p.name for p in (tmp_path / "sweeps").iterdir()) == ["best.yaml",
                                                                       "best.yaml.lock"]
    parents = [x for x in _runs(mlflow_uri) if x.data.tags["kind"] == "study"]
    assert {x.data.tags["study"]: x.info.status for x in parents} == {
        "grpo-synthetic-synthetic": "FINISHED", "s2": "FINISHED", "s3": "FAILED"}
    assert not [x for x in _runs(mlflow_uri) if x.info.status == "RUNNING"]
    import yaml
    data = yaml.safe_load(params.read_text())
    data["sweep"]["apply_best"] = True
    params.write_text(yaml.safe_dump(data))
    assert resolve(TrainConfig(), "grpo", params, "synthetic", "synthetic").best == first


# ---- worker processes ---------------------------------------------------------------------------
def _worker(backbone: str, storage: str, n: int, env: dict, grace: int = 120,
            hold: bool = False) -> subprocess.Popen:
    args = [sys.executable, str(WORKER), backbone, storage, str(n), str(grace)]
    return subprocess.Popen(args + (["hold"] if hold else []), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["same-host", "other-host"])
def test_killed_worker_trial_is_retried_by_the_restarted_worker(tiny_backbone, tmp_path, where):
    """Killed mid-trial and restarted, a worker fails the dead worker's trial, retries it with
    the same params first, and leaves no Optuna trial or MLflow run RUNNING.

    same-host: one worker, the default grace period (120 s); the restarted worker sees the
    trial's worker pid is gone and retries at once. other-host: the trial looks as if it ran
    elsewhere, so only its stale heartbeat (grace 2 s here) can tell; Optuna's check fails it."""
    storage = f"sqlite:///{tmp_path / 'o.db'}"
    mlflow_db = f"sqlite:///{tmp_path / 'm.db'}"
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_db}
    grace = 120 if where == "same-host" else 2
    proc = _worker(tiny_backbone, storage, 3, env, grace=grace, hold=True)  # its trial waits
    deadline = time.time() + 300
    while time.time() < deadline:  # kill it while a trial runs
        time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read()
        try:
            trials = optuna.load_study(study_name="grpo-synthetic", storage=storage).trials
        except KeyError:
            continue
        if any(t.state.name == "RUNNING" and "mlflow_run_id" in t.user_attrs for t in trials):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = [t for t in optuna.load_study(study_name="grpo-synthetic", storage=storage).trials
              if t.state.name == "RUNNING"]
    assert len(killed) == 1
    at_kill = {r.info.run_id: r.info.status for r in _runs(mlflow_db)}
    killed_run = killed[0].user_attrs["mlflow_run_id"]
    assert at_kill[killed_run] == "RUNNING"  # killed inside training, its run still open
    if where == "other-host":
        rdb = optuna.storages.RDBStorage(storage)
        trial_id = rdb.get_trial_id_from_study_id_trial_number(
            rdb.get_study_id_from_name("grpo-synthetic"), killed[0].number)
        rdb.set_trial_user_attr(trial_id, "worker", "elsewhere:1")
        time.sleep(grace + 1)  # its heartbeat is stale now
    start = time.time()
    resumed = _worker(tiny_backbone, storage, 2, env, grace=grace)
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    assert time.time() - start < 120  # did not wait out the grace period
    trials = optuna.load_study(study_name="grpo-synthetic", storage=storage).trials
    failed = [t for t in trials if t.state.name == "FAIL"]
    assert [t.number for t in failed] == [killed[0].number]
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == failed[0].number]
    assert len(retried) == 1 and retried[0].params == failed[0].params
    assert retried[0].state.name in ("COMPLETE", "PRUNED")
    assert not [t for t in trials if t.state.name == "RUNNING"]
    runs = _runs(mlflow_db)
    assert not [r.info.run_name for r in runs if r.info.status == "RUNNING"]
    by_id = {r.info.run_id: r for r in runs}
    assert failed[0].user_attrs["mlflow_run_id"] == killed_run
    assert by_id[killed_run].info.status == "FAILED"  # the restarted worker ended it


def test_train_stage_reads_the_best_params_when_asked(tmp_path, monkeypatch):
    import yaml

    from fgpo.train.overrides import resolve
    from fgpo.train.overrides import apply, record_best

    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    best = {"study": "grpo-r-b", "trial": 3, "value": 0.9,
            "params": {"learning_rate": 0.002, "grpo.clip_eps": 0.25, "policy.lora_r": 4}}
    record_best(best, "grpo", "r", "b")  # as `fgpo sweep` does, into sweeps/best.yaml
    assert resolve(TrainConfig(), "grpo", path, "r", "b").best is None  # apply_best is off
    params["sweep"]["apply_best"] = True
    path.write_text(yaml.safe_dump(params))
    assert resolve(TrainConfig(), "grpo", path, "r", "b").best == best
    assert resolve(TrainConfig(), "fgpo", path, "r", "b").best is None  # no study for it
    cfg = apply(TrainConfig(), best["params"])
    assert (cfg.learning_rate, cfg.grpo.clip_eps, cfg.policy.lora_r) == (0.002, 0.25, 4)


@pytest.mark.parametrize("change, field", [
    ({"n_trials": 0}, "sweep.n_trials"), ({"n_trials": "2"}, "sweep.n_trials"),
    ({"epochs": 0}, "sweep.epochs"), ({"seed": -1}, "sweep.seed"),
    ({"n_warmup_steps": 1.5}, "sweep.n_warmup_steps"),
])
def test_bad_sweep_counts_are_refused_with_the_field(change, field):
    with pytest.raises(InputError) as exc:
        sweep_config(**change)
    assert exc.value.field == field, str(exc.value)


@pytest.mark.parametrize("args", [["--n-trials", "0"], ["--n-trials", "-1"]])
def test_fgpo_sweep_refuses_a_trial_count_below_one_before_any_work(tmp_path, args):
    """0 used to mean "the default" (8 trials) and -1 ran none and rewrote sweeps/best.yaml."""
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps/best.yaml").write_text("{}\n")
    r = subprocess.run([str(Path(sys.executable).parent / "fgpo"), "sweep", "--method", "grpo",
                        "--reasoner", "careful_expert", "--benchmark", "genomeqa", *args,
                        "--params", str(REPO / "params.yaml"), "--no-mlflow"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2 and "--n-trials" in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "sweeps/best.yaml").read_text() == "{}\n"
    assert not (tmp_path / "sweeps/optuna.db").exists()


def test_the_sweep_stage_treats_zero_trials_as_zero_not_the_default(tmp_path):
    from fgpo.stages import sweep as stage

    with pytest.raises(InputError) as exc:
        stage.main("grpo", "careful_expert", "genomeqa", n_trials=0,
                   params=REPO / "params.yaml", data=tmp_path / "data", tracking=False)
    assert exc.value.field == "--n-trials"


def test_a_sweep_starts_from_the_values_training_applies_its_best_over(tmp_path, monkeypatch):
    """The train stage applies a sweep's best over params + tuned values, so the sweep's trials
    train from params + tuned values too (`resolve(..., upto="tuned")`), not params alone."""
    import yaml

    from fgpo.stages import sweep as stage

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "params.yaml"
    path.write_text((REPO / "params.yaml").read_text())
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune/tuned.yaml").write_text(yaml.safe_dump({"grpo": {"beta": 0.02}}))
    monkeypatch.setattr(stage, "load_run_data", lambda *a, **k: synthetic_data())
    monkeypatch.setattr(stage, "require_trainable", lambda *a, **k: None)
    seen = {}

    class Stop(Exception):
        pass

    def run_sweep(method, reasoner, benchmark, train_cfg, *args, **kwargs):
        seen["cfg"] = train_cfg
        raise Stop

    monkeypatch.setattr(stage, "run_sweep", run_sweep)
    with pytest.raises(Stop):
        stage.main("grpo", "r", "b", n_trials=1, storage=f"sqlite:///{tmp_path / 's.db'}",
                   params=path, tracking=False)
    assert seen["cfg"].beta == 0.02
    assert seen["cfg"].learning_rate == yaml.safe_load(path.read_text())["train"]["learning_rate"]
