"""Tier 4: each stage run as a user runs it (the CLI in a subprocess), and the DVC pipeline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import yaml
from processes import run_or_explain

from fgpo.benchmarks.config import BenchmarkConfig, load_prepare
from fgpo.errors import InputError
from fgpo.question import from_frame
from fgpo.seqio import read_parquet_metadata
from fgpo.tools.toolset import ToolsConfig, tool_fingerprint
from fgpo.tracking.provenance import file_md5

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BENCHMARKS = [name for name, b in load_prepare(REPO / "params.yaml").benchmarks.items()
              if isinstance(b, BenchmarkConfig)]  # the generated benchmarks the repo declares


def small_params(tmp: Path, n: int = 24) -> Path:
    """The repo's params.yaml shrunk so each stage runs its real code paths in seconds: n
    questions per benchmark (a few per family), one reasoner, one epoch in batches of 4."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for name in BENCHMARKS:
        params["prepare"][name]["n_questions"] = n
    params["tools"]["workers"] = 2
    params["tools"]["chunk_size"] = 8
    params["reward_table"]["build"] = ["careful_expert"]
    params["reward_table"]["unsharded"] = ["careful_expert"]  # built by one stage, as in build
    params["train"].update(epochs=1, evals_per_epoch=2, checkpoint_every=1, batch_size=4,
                           seeds=[0],  # one run per method: the code paths, not statistics
                           # a few questions per family: val is too small for the noise check
                           allow_degenerate_table=True)
    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _env(**extra: str) -> dict[str, str]:
    """The test's environment: the venv first on PATH, MLflow in ./mlruns unless `extra` says."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return {**env, "PATH": f"{BIN}:{os.environ['PATH']}", **extra}


def fgpo(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "fgpo"), *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(**env))


def test_prepare_and_tools_stages_via_cli(tmp_path):
    params = small_params(tmp_path)
    for name in BENCHMARKS:
        r = fgpo("prepare", name, "--params", str(params), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        r = fgpo("tools", name, "--params", str(params), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        qs = from_frame(pd.read_parquet(tmp_path / f"data/benchmarks/{name}.parquet"))
        assert len(qs) == 24
        out = pd.read_parquet(tmp_path / f"data/tool_outputs/{name}.parquet")
        cfg = ToolsConfig()
        assert len(out) == 24 * len(cfg.names)
        assert set(out.tool) == set(cfg.names)
        assert read_parquet_metadata(tmp_path / f"data/tool_outputs/{name}.parquet")[
            "fingerprint"] == tool_fingerprint(cfg)
    assert not list(tmp_path.rglob("*.tmp"))


def test_unknown_tool_name_in_params_is_a_clear_error(tmp_path):
    params = small_params(tmp_path)
    data = yaml.safe_load(params.read_text())
    data["tools"]["names"] = ["composition", "gc_magic"]
    params.write_text(yaml.safe_dump(data))
    assert fgpo("prepare", "seqcalc", "--params", str(params), cwd=tmp_path).returncode == 0
    r = fgpo("tools", "seqcalc", "--params", str(params), cwd=tmp_path)
    assert r.returncode == 2
    assert "gc_magic" in r.stderr and "tools.names" in r.stderr and "params.yaml" in r.stderr
    assert not (tmp_path / "data/tool_outputs/seqcalc.parquet").exists()


def test_unknown_params_key_fails_loudly(tmp_path):
    params = small_params(tmp_path)
    data = yaml.safe_load(params.read_text())
    data["prepare"]["genomeqa"]["n_question"] = 5  # typo
    params.write_text(yaml.safe_dump(data))
    r = fgpo("prepare", "genomeqa", "--params", str(params), cwd=tmp_path)
    assert r.returncode == 2 and "n_question" in r.stderr and "prepare.genomeqa" in r.stderr


@pytest.mark.parametrize("args, option", [
    (["reward-shard", "careful_expert", "genomeqa", "-1"], "index"),
    (["import", "--name", "x", "--family", "promoter", "--out", "x.parquet", "--csv", "x.csv",
      "--max-per-class", "0"], "--max-per-class"),
    (["sweep", "--method", "fgpo", "--reasoner", "r", "--benchmark", "b", "--n-trials", "0"],
     "--n-trials"),
])
def test_command_line_counts_are_bounds_checked(tmp_path, args, option):
    r = fgpo(*args, cwd=tmp_path)
    assert r.returncode == 2 and option in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_a_negative_tool_cost_reaches_the_params_check_not_the_option_parser(tmp_path):
    """dvc repro runs `fgpo cost-table r b -0.05` for a cost in ablation.tool_costs: the
    command must read -0.05 as the cost and refuse it by the params field, not as an option."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["ablation"]["tool_costs"] = [-0.05, 0.01]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    for cmd in ("cost-table", "ablate"):
        r = fgpo(cmd, "careful_expert", "genomeqa", "-0.05", cwd=tmp_path)
        assert r.returncode == 2 and "No such option" not in r.stderr
        assert "field 'ablation.tool_costs'" in r.stderr and ">= 0" in r.stderr


def _dvc(*args: str, cwd: Path, timeout: float = 900) -> str:
    """`dvc ARGS` in `cwd`; a run past `timeout` s (a few minutes is normal on the shrunken
    config) fails with the process tree and the fgpo processes' stacks."""
    r = run_or_explain([str(BIN / "dvc"), *args], cwd=cwd, timeout=timeout,
                       env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stdout
    return r.stdout


def _project_files(work: Path) -> None:
    """A copy of the project's pipeline in `work`: dvc.yaml (without the top-level plots, which
    name the full reasoner set), the code, the committed params files of train (sweeps/best.yaml,
    tune/) and the shrunken params."""
    work.mkdir()
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text())
    dvc_yaml.pop("plots", None)
    (work / "dvc.yaml").write_text(yaml.safe_dump(dvc_yaml, sort_keys=False))
    shutil.copytree(REPO / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "sweeps").mkdir()
    shutil.copy(REPO / "sweeps/best.yaml", work / "sweeps")
    shutil.copytree(REPO / "tune", work / "tune", ignore=shutil.ignore_patterns("optuna.db*"))
    small_params(work)


@pytest.mark.slow
def test_dvc_repro_is_incremental(tmp_path):
    """dvc repro builds everything; a second run does nothing; a changed benchmark parameter
    rebuilds only that benchmark and what depends on it (its tool outputs and tables)."""
    work = tmp_path / "repo"
    _project_files(work)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)
    first = _dvc("repro", cwd=work)
    for name in BENCHMARKS:
        assert f"Running stage 'prepare@{name}'" in first
        assert f"Running stage 'tools@{name}'" in first
    # the report stage closes the pipeline: summary, figures, metrics and MLflow run links
    summary = (work / "reports/summary.md").read_text()
    assert "significantly higher (paired 95% interval" in summary
    assert "| careful_expert | seqcalc |" in summary
    for name in ("validation_curves", "accuracy_vs_reward_evals", "zero_signal_vs_step",
                 "family_accuracy", "subset_choice"):
        assert (work / f"reports/figures/{name}.png").stat().st_size > 5000, name
    assert json.loads((work / "metrics/summary.json").read_text())["overall/settings"] == 3
    assert "compare-runs" in (work / "reports/mlflow_runs.md").read_text()
    second = _dvc("repro", cwd=work)
    assert "Running stage" not in second
    assert "up to date" in _dvc("status", cwd=work)
    # a password written into each storage URL by hand (past fgpo's own refusal): no stage
    # declares a storage, so `dvc commit` records none of it in dvc.lock
    clean = (work / "params.yaml").read_text()
    planted = yaml.safe_load(clean)
    for section in ("sweep", "tune"):
        planted[section]["storage"] = f"postgresql://u:hunter2-{section}@127.0.0.1/db"
    (work / "params.yaml").write_text(yaml.safe_dump(planted, sort_keys=False))
    assert "up to date" in _dvc("status", cwd=work)
    _dvc("commit", "-f", cwd=work)
    assert "hunter2" not in (work / "dvc.lock").read_text()
    (work / "params.yaml").write_text(clean)
    # a changed tuned file (what `make tune` writes) makes every train stage, and only those
    # and the report, stale
    tuned = (work / "tune/tuned.yaml").read_text()
    values = yaml.safe_load(tuned)
    values["grpo"] = {**(values.get("grpo") or {}), "beta": 0.0123}   # another choice
    (work / "tune/tuned.yaml").write_text(yaml.safe_dump(values))
    stale = _dvc("status", cwd=work)
    reasoners = yaml.safe_load((work / "params.yaml").read_text())["reward_table"]["build"]
    for r in reasoners:
        assert f"train@{r}-seqcalc:" in stale
    assert "reward_table@" not in stale and "report:" in stale
    (work / "tune/tuned.yaml").write_text(tuned)
    assert "up to date" in _dvc("status", cwd=work)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["prepare"]["seqcalc"]["seed"] = 99
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    third = _dvc("repro", cwd=work)
    ran = {line.split("'")[1] for line in third.splitlines() if line.startswith("Running stage")}
    reasoners = params["reward_table"]["build"]
    assert ran == {"prepare@seqcalc", "tools@seqcalc"} | {
        f"{stage}@{r}-seqcalc" for r in reasoners for stage in ("reward_table", "table_stats")
    } | {f"train@{r}-seqcalc" for r in reasoners} | {"report"}  # one train stage per setting
    # a params error fails the stage but leaves its last good (uncached) metrics and plots
    kept = {p: p.read_bytes() for p in [*(work / "metrics/train").rglob("*.json"),
                                        *(work / "plots/train").rglob("*.csv")]}
    assert kept
    params["train"]["learning_rate"] = -0.01
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    r = subprocess.run([str(BIN / "dvc"), "repro"], cwd=work, capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert r.returncode != 0 and "train.learning_rate" in r.stdout + r.stderr
    assert {p: p.read_bytes() for p in kept if p.exists()} == kept


def _side_pipeline(tmp_path: Path, name: str, **section) -> tuple[Path, dict]:
    """A project copy with the pipeline <name>/dvc.yaml beside the main one, one benchmark
    (genomeqa), and `section` set in params.yaml's <name>: section."""
    work = tmp_path / "repo"
    _project_files(work)
    (work / name).mkdir()
    shutil.copy(REPO / name / "dvc.yaml", work / name)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["prepare"] = {"genomeqa": params["prepare"]["genomeqa"]}  # one benchmark
    params[name].update(section)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return work, params


@pytest.mark.slow
def test_ablation_pipeline_runs_beside_the_main_one(tmp_path):
    """ablation/dvc.yaml on the shrunken config (one setting, two tool costs; why: the code
    paths in minutes): `dvc repro` leaves it alone; `dvc repro ablation/dvc.yaml` derives the
    cost tables without a reasoner call, trains every estimator, reuses the main pipeline's
    fgpo and grpo runs at the main cost, tags every MLflow run, writes the report; a second
    repro does nothing."""
    from mlflow.tracking import MlflowClient

    work, params = _side_pipeline(tmp_path, "ablation", reasoners=["careful_expert"],
                                  benchmarks=["genomeqa"], tool_costs=[0.0, 0.01],
                                  cost_estimators=["fgpo", "dr_grpo"])
    from fgpo.train.estimators import ESTIMATORS
    estimators = list(ESTIMATORS)  # ablation.estimators left out: every registered one
    assert "estimators" not in params["ablation"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)

    main = _dvc("repro", cwd=work)
    assert "train@careful_expert-genomeqa" in main and "ablat" not in main and "cost_" not in main
    abl = _dvc("repro", "ablation/dvc.yaml", cwd=work)
    ran = {line.split("'")[1] for line in abl.splitlines() if line.startswith("Running stage")}
    assert ran == {f"ablation/dvc.yaml:{stage}@careful_expert-genomeqa-{c}"
                   for stage in ("cost_table", "ablate") for c in ("0.0", "0.01")} | {
        "ablation/dvc.yaml:ablation_report"}  # no reward_table stage: no reasoner call
    tables = work / "data/ablation/reward_tables"
    free = pd.read_parquet(tables / "cost0.0/careful_expert/genomeqa.parquet")
    assert (free.reward == free.correct).all()
    assert (tables / "cost0.01/careful_expert/genomeqa.parquet").read_bytes() == (
        work / "data/reward_tables/careful_expert/genomeqa.parquet").read_bytes()
    # every estimator at the main cost, the cost estimators at the other; each run tagged
    client = MlflowClient(f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("fgpo").experiment_id])
    tagged = sorted((r.data.tags["estimator"], r.data.tags["tool_cost"]) for r in runs
                    if r.data.tags.get("kind") != "report")  # the main report's own run
    assert tagged == sorted([(m, "0.01") for m in estimators]
                            + [("fgpo", "0.0"), ("dr_grpo", "0.0")])  # fgpo, grpo at 0.01 once
    dr = json.loads((work / "metrics/ablation/cost0.01/careful_expert/genomeqa/dr_grpo.json")
                    .read_text())
    assert dr["tuned"] == "tuned"  # every estimator has its own study (tune.methods)
    report = (work / "reports/ablation.md").read_text()
    for heading in ("## Estimators at tool cost 0.01", "## Decomposition of the FGPO - GRPO gap",
                    "## Accuracy vs tools across tool costs"):
        assert heading in report
    for m in estimators:
        assert f"| careful_expert/genomeqa | {m} |" in report
    assert "dr_grpo: tuned" in report and "fgpo_std: tuned" in report
    assert "no term below carries a borrowed step size" in report
    summary = json.loads((work / "metrics/ablation_summary.json").read_text())
    assert {"ablation/fgpo-grpo/accuracy", "ablation/fgpo-fgpo_std/accuracy",
            "ablation/fgpo_std-grpo/accuracy"} <= set(summary)
    for name in ("frontier", "decomposition"):
        assert (work / f"reports/ablation_figures/{name}.png").stat().st_size > 5000
    assert "Running stage" not in _dvc("repro", "ablation/dvc.yaml", cwd=work)
    assert "up to date" in _dvc("status", cwd=work)  # both pipelines


@pytest.mark.slow
def test_frontier_pipeline_runs_beside_the_main_one(tmp_path):
    """frontier/dvc.yaml on the shrunken config (one setting, K = 4 and the main 6, two sub-table
    fractions, one sampled estimator; why: the code paths in minutes): `dvc repro` leaves it
    alone; `dvc repro frontier/dvc.yaml` copies the main K's tool outputs and table byte for
    byte and builds K = 4's, reads back the train stage's runs at the main K on the whole split,
    trains the rest, writes the validation points and the report; a second repro does nothing."""
    from mlflow.tracking import MlflowClient

    work, params = _side_pipeline(tmp_path, "frontier", ks=[4, 6], benchmarks=["genomeqa"],
                                  fractions=[0.5, 1.0], sampled=["grpo"], seeds=[0], budgets=6)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)

    main = _dvc("repro", cwd=work)
    assert "train@careful_expert-genomeqa" in main and "frontier" not in main
    out = _dvc("repro", "frontier/dvc.yaml", cwd=work)
    ran = {line.split("'")[1] for line in out.splitlines() if line.startswith("Running stage")}
    s = "careful_expert-genomeqa"
    assert ran == {f"frontier/dvc.yaml:frontier_tools@{k}-genomeqa" for k in (4, 6)} | {
        f"frontier/dvc.yaml:{stage}@{k}-{s}" for stage in ("frontier_table", "frontier_train")
        for k in (4, 6)} | {"frontier/dvc.yaml:frontier_report"}
    frontier = work / "data/frontier"
    assert (frontier / "K6/reward_tables/careful_expert/genomeqa.parquet").read_bytes() == (
        work / "data/reward_tables/careful_expert/genomeqa.parquet").read_bytes()
    k4 = read_parquet_metadata(frontier / "K4/reward_tables/careful_expert/genomeqa.parquet")
    assert k4["tools"] == params["frontier"]["tool_order"][:4] and k4["K"] == 4
    # every run tagged with its K and fraction; at K = 6 on the whole split: the main runs
    client = MlflowClient(f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("fgpo").experiment_id])
    tags = sorted((r.data.tags["method"], r.data.tags["K"], r.data.tags["budget_fraction"])
                  for r in runs if r.data.tags.get("kind") != "report")
    assert tags == sorted([("fgpo", "6", "1.0"), ("grpo", "6", "1.0"),   # make run's, reused
                           ("fgpo", "6", "0.5"), ("fgpo", "4", "0.5"), ("fgpo", "4", "1.0"),
                           ("grpo", "4", "1.0")])
    for k in (4, 6):
        folder = frontier / f"train/K{k}/careful_expert/genomeqa"
        points = pd.read_parquet(folder / "points.parquet")
        choices = pd.read_parquet(folder / "choices.parquet")
        assert set(zip(points.method, points.fraction)) == {("fgpo", .5), ("fgpo", 1.), ("grpo", 1.)}
        assert len(choices) == len(points) * choices.question_id.nunique()
        # the sub-table run reads at most its half of the train questions' cells
        half = points[(points.method == "fgpo") & (points.fraction == .5)]
        whole = points[(points.method == "fgpo") & (points.fraction == 1.)]
        assert half.reward_evals_unique.max() <= whole.reward_evals_unique.max() / 2 + 2 ** k
    # the main K's whole-split points are the train stage's own
    main_points = pd.read_parquet(work / "data/selections/careful_expert/genomeqa/fgpo.points.parquet")
    k6 = pd.read_parquet(frontier / "train/K6/careful_expert/genomeqa/points.parquet")
    k6 = k6[(k6.method == "fgpo") & (k6.fraction == 1.0)].drop(columns=["method", "fraction"])
    pd.testing.assert_frame_equal(k6.reset_index(drop=True), main_points[k6.columns])
    report = (work / "reports/frontier.md").read_text()
    for heading in ("## What is measured", "## Crossover", "## K = 4", "## K = 6"):
        assert heading in report
    assert "| 4 | careful_expert/genomeqa | grpo: " in report
    for name in ("K4", "K6", "summary"):
        assert (work / f"reports/frontier_figures/{name}.png").stat().st_size > 5000
    summary = json.loads((work / "metrics/frontier_summary.json").read_text())
    assert "frontier/K4/careful_expert/genomeqa/sampled_peak_accuracy" in summary
    assert "Running stage" not in _dvc("repro", "frontier/dvc.yaml", cwd=work)
    assert "up to date" in _dvc("status", "frontier/dvc.yaml", cwd=work)


def test_train_stage_logs_a_complete_mlflow_run(tmp_path, request):
    """`fgpo train` as DVC calls it (both methods in one process): an MLflow run per method
    with tags, params, step and final metrics and artifacts; the metrics JSON and plot CSV
    that DVC reads, one per method."""
    from mlflow.tracking import MlflowClient

    params = small_params(tmp_path)
    raw = yaml.safe_load(params.read_text())
    # the last checkpoint is tested, so the logged model's step is not MLflow's default 0
    raw["train"]["checkpoint_rule"] = "last"
    params.write_text(yaml.safe_dump(raw, sort_keys=False))
    for cmd in (["prepare", "genomeqa"], ["tools", "genomeqa"],
                ["reward-table", "careful_expert", "genomeqa"]):
        r = fgpo(*cmd, "--params", str(params), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    r = fgpo("train", "careful_expert", "genomeqa", "--params", str(params), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "[fgpo]" in r.stdout and "[grpo]" in r.stdout
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("fgpo")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(run.data.tags["method"] for run in runs) == ["fgpo", "grpo"]
    for run in runs:
        tags, metrics = run.data.tags, run.data.metrics
        assert run.info.status == "FINISHED"
        assert tags["reasoner"] == "careful_expert" and tags["benchmark"] == "genomeqa"
        assert tags["seed"] == "0" and len(tags["table_md5"]) == 32 and tags["git_commit"]
        assert tags["device"] == "cpu"  # the resolved train.device (auto here: no GPU)
        assert tags["budget_fraction"] == "1.0" and tags["K"] == str(len(raw["tools"]["names"]))
        assert run.data.params["train.epochs"] == "1"
        for key in ("train/expected_reward", "train/loss", "train/kl", "train/entropy",
                    "train/zero_signal_frac", "train/reward_evals", "val/accuracy",
                    "val/tools_per_question", "test/accuracy", "test/expected_accuracy",
                    "test/tools_per_question", "budget/reward_evals", "budget/table_cells"):
            assert key in metrics, key
        history = client.get_metric_history(run.info.run_id, "train/loss")
        total = int(metrics["budget/optimizer_steps"])  # one epoch: FGPO 1, GRPO mu per batch
        assert [m.step for m in history] == list(range(1, total + 1))
        assert metrics["checkpoint/step"] <= total
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"test_selections.parquet", "learning_curve.png"} <= artifacts
        # the datasets it read: each split of the benchmark and of the table, DVC md5 as digest
        inputs = {i.dataset.name: i for i in run.inputs.dataset_inputs}
        table = inputs["reward table careful_expert/genomeqa:train"]
        table_file = tmp_path / "data/reward_tables/careful_expert/genomeqa.parquet"
        assert table.dataset.digest == file_md5(table_file) == tags["table_md5"]
        assert json.loads(table.dataset.source)["uri"] == \
            "data/reward_tables/careful_expert/genomeqa.parquet"
        assert {t.key: t.value for t in table.tags}["mlflow.data.context"] == "train"
        assert {"benchmark genomeqa:train", "benchmark genomeqa:validation",
                "benchmark genomeqa:test", "reward table careful_expert/genomeqa:test"} <= \
            set(inputs)
        assert inputs["benchmark genomeqa:test"].dataset.digest == \
            file_md5(tmp_path / "data/benchmarks/genomeqa.parquet")
        m = json.loads((tmp_path / f"metrics/train/careful_expert/genomeqa/{tags['method']}.json")
                       .read_text())
        assert m["test/accuracy"] == pytest.approx(metrics["test/accuracy"])
    grpo = [r for r in runs if r.data.tags["method"] == "grpo"][0].data.metrics
    fgpo_m = [r for r in runs if r.data.tags["method"] == "fgpo"][0].data.metrics
    assert fgpo_m["budget/reward_evals_unique"] == fgpo_m["budget/table_cells_train"]
    subsets = fgpo_m["budget/table_cells_train"] / fgpo_m["budget/questions_seen"]  # 2^K
    assert fgpo_m["budget/reward_evals"] == fgpo_m["budget/question_visits"] * subsets
    # one epoch: every train question once, G = 8 subsets each; mu optimiser steps per batch
    mu = yaml.safe_load(params.read_text())["train"]["grpo"]["inner_epochs"]
    assert grpo["budget/reward_evals"] == grpo["budget/question_visits"] * 8
    assert grpo["budget/question_visits"] == fgpo_m["budget/question_visits"]
    assert grpo["budget/optimizer_steps"] == mu * fgpo_m["budget/optimizer_steps"]
    curve = pd.read_csv(tmp_path / "plots/train/careful_expert/genomeqa/grpo.csv")
    assert {"step", "train_reward_evals", "val_accuracy", "train_zero_signal_frac",
            "train_questions_seen"} <= set(curve)
    sel = pd.read_parquet(tmp_path / "data/selections/careful_expert/genomeqa/fgpo.parquet")
    bench = pd.read_parquet(tmp_path / "data/benchmarks/genomeqa.parquet")
    assert sorted(sel.question_id) == sorted(bench.loc[bench.split == "test", "id"])
    assert {"family", "mask", "tools", "n_tools", "correct", "reward", "seed"} <= set(sel)
    # every validation point's weights, tested after training: the point at the checkpoint
    # (the last step here) has the run's own test numbers, computed from the other weights copy
    folder = tmp_path / "data/selections/careful_expert/genomeqa"
    for method, final in (("fgpo", fgpo_m), ("grpo", grpo)):
        points = pd.read_parquet(folder / f"{method}.points.parquet")
        curve = pd.read_csv(tmp_path / f"plots/train/careful_expert/genomeqa/{method}.csv")
        assert list(points.step) == list(curve.step[curve.val_accuracy.notna()])
        assert (points.seed == 0).all() and points.reward_evals_unique.is_monotonic_increasing
        at = points[points.step == final["checkpoint/step"]]
        assert at["test/accuracy"].item() == pytest.approx(final["test/accuracy"])
        assert at["val/accuracy"].item() == pytest.approx(final["val/accuracy"])
        choices = pd.read_parquet(folder / f"{method}.point_choices.parquet")
        own = pd.read_parquet(folder / f"{method}.parquet").sort_values("question_id")
        assert len(choices) == len(points) * len(own)
        last = choices[choices.step == final["checkpoint/step"]].sort_values("question_id")
        assert list(last["mask"]) == list(own["mask"])

    # MLflow's own concepts: a model-training experiment; each run's policy a pyfunc model that
    # picks the same tools as the trained policy did in process; the setting's best registered
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    for run in runs:  # resolve_tags, what mlflow.start_run adds: the runs table's Source
        assert run.data.tags["mlflow.source.name"].endswith("fgpo")
        assert run.data.tags["mlflow.source.type"] == "LOCAL"
    test_q = bench[bench.split == "test"]
    frame = pd.DataFrame({"question": test_q.question,
                          "sequences": [json.dumps(dict(zip(lab, seq))) for lab, seq
                                        in zip(test_q.seq_labels, test_q.sequences)]})
    mlflow.set_tracking_uri(client.tracking_uri)  # for the fluent model API below
    request.addfinalizer(lambda: mlflow.set_tracking_uri(None))
    for run in runs:
        method = run.data.tags["method"]
        models = mlflow.search_logged_models(
            experiment_ids=[exp.experiment_id],
            filter_string=f"source_run_id = '{run.info.run_id}'", output_format="list")
        assert [m.name for m in models] == ["policy"]
        # the model's metrics: the run's at the selected checkpoint (what the policy is), and
        # its test metrics (its page's "Datasets used"), each measured on the reward table's
        # test split, named and digested as the run's input
        at = int(run.data.metrics["checkpoint/step"])
        assert at == run.data.metrics["budget/optimizer_steps"] > 0  # the last
        assert {m.key: m.value for m in models[0].metrics if m.dataset_name is None} == {
            k: h.value for k in run.data.metrics for h in client.get_metric_history(
                run.info.run_id, k) if h.step == at and not k.startswith("test/")}
        table_test = {i.dataset.name: i.dataset for i in run.inputs.dataset_inputs}[
            "reward table careful_expert/genomeqa:test"]
        linked = {m.key: m for m in models[0].metrics if m.dataset_name is not None}
        assert set(linked) == {k for k in run.data.metrics if k.startswith("test/")} != set()
        for key, m in linked.items():
            assert m.value == run.data.metrics[key] and m.run_id == run.info.run_id
            assert (m.dataset_name, m.dataset_digest) == (table_test.name, table_test.digest)
            assert m.dataset_digest == file_md5(table_file)
        model = mlflow.pyfunc.load_model(models[0].model_uri)
        assert model.metadata.get_input_schema().input_names() == ["question", "sequences"]
        got = model.predict(frame)
        sel = pd.read_parquet(tmp_path / f"data/selections/careful_expert/genomeqa/{method}.parquet")
        want = sel.set_index("question_id").loc[list(test_q.id)]
        assert list(got["mask"]) == list(want["mask"])
        assert list(got["tools"]) == list(want["tools"])
        assert np.allclose(got["p_selected"], want["p_selected"], atol=1e-5)
    # the loaded model refuses what no policy can read, naming the row and field
    from mlflow.exceptions import MlflowException
    for bad, needle in [(frame[["question"]], "sequences"),
                        (frame.assign(sequences='{"seq": "ACGTXZ!!"}'), "outside IUPAC DNA"),
                        (frame.assign(sequences=""), "sequences"),
                        (frame.assign(sequences="{}"), "non-empty"),
                        (frame.iloc[:0], "no rows")]:
        with pytest.raises((InputError, MlflowException), match=needle):
            model.predict(bad)
    # the reward-table build: a run of its own, its numbers those of the table it wrote
    tables = client.get_experiment_by_name("fgpo-reward-tables")
    assert tables.tags["mlflow.experimentKind"] == "custom_model_development"
    (build,) = client.search_runs([tables.experiment_id])
    meta = read_parquet_metadata(table_file)
    cells = meta["n_questions"] * 2 ** meta["K"]
    assert build.data.tags["reasoner"] == "careful_expert" and build.info.status == "FINISHED"
    assert build.data.metrics["table/cells"] == cells == len(pd.read_parquet(table_file))
    assert build.data.metrics["table/reasoner_calls"] == cells  # a fresh build asks every cell
    assert build.data.metrics["table/unparseable_frac"] == pytest.approx(
        meta["unparseable"] / cells)
    assert build.data.metrics["table/cells_per_s"] > 0
    assert {i.dataset.name for i in build.inputs.dataset_inputs} == {
        "genomeqa", "tool outputs genomeqa"}
    versions = client.search_model_versions("name = 'fgpo-careful_expert-genomeqa'")
    assert len(versions) == 1
    best = max(runs, key=lambda r: (r.data.metrics["val/accuracy"],
                                    r.data.metrics["val/expected_reward"]))
    assert versions[0].run_id == best.info.run_id
    assert versions[0].tags["method"] == best.data.tags["method"]
    # the README's `models:/fgpo-careful_expert-genomeqa@champion` is this version
    champion = client.get_model_version_by_alias("fgpo-careful_expert-genomeqa", "champion")
    assert champion.run_id == best.info.run_id


def test_train_refuses_a_missing_table_before_training(tmp_path):
    params = small_params(tmp_path)
    fgpo("prepare", "genomeqa", "--params", str(params), cwd=tmp_path)
    r = fgpo("train", "careful_expert", "genomeqa", "--params", str(params), cwd=tmp_path)
    assert r.returncode == 2 and "reward table not found" in r.stderr
    assert not (tmp_path / "mlruns").exists()


# ---- several processes, kills and credentials on one small built setting --------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """prepare, tools and the careful_expert table of the small genomeqa, built once for the
    tests below, which start training and sweep processes on it (`--data built/data`)."""
    root = tmp_path_factory.mktemp("built")
    params = small_params(root)
    for cmd in (["prepare", "genomeqa"], ["tools", "genomeqa"],
                ["reward-table", "careful_expert", "genomeqa"]):
        r = fgpo(*cmd, "--params", str(params), cwd=root)
        assert r.returncode == 0, r.stderr
    return root


def _train_cmd(built: Path, *methods: str, params: Path | None = None) -> list[str]:
    return [str(BIN / "fgpo"), "train", "careful_expert", "genomeqa",
            *[a for m in (methods or ("fgpo",)) for a in ("--method", m)],
            "--params", str(params or built / "params.yaml"), "--data", str(built / "data")]


def _runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("fgpo")
    return [] if exp is None else client.search_runs([exp.experiment_id])


def test_three_trainings_on_a_fresh_sqlite_store_all_finish(built, tmp_path):
    # MLflow's schema migration raced ("duplicate column name") when three processes opened a
    # store that did not exist yet; each process here works in its own directory
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    procs = []
    for i in range(3):
        (tmp_path / f"w{i}").mkdir()
        procs.append(subprocess.Popen(_train_cmd(built), cwd=tmp_path / f"w{i}",
                                      env=_env(MLFLOW_TRACKING_URI=uri), text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
    assert [r.info.status for r in _runs(uri)] == ["FINISHED"] * 3


def _wait_for_running_run(uri: str, proc: subprocess.Popen, method: str | None = None) -> None:
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
        try:
            if any(r.info.status == "RUNNING" and method in (None, r.data.tags.get("method"))
                   for r in _runs(uri)):
                return
        except Exception:  # noqa: BLE001 - the store is being created
            continue
    raise AssertionError("the training never started its MLflow run")


def test_killed_trainings_leave_no_running_mlflow_run(built, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ckpt = tmp_path / "runs/fgpo/careful_expert/genomeqa/seed0/checkpoint.pt"
    # SIGTERM (a scheduler, `kill`): the run ends KILLED at once
    proc = subprocess.Popen(_train_cmd(built), cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_running_run(uri, proc)
    proc.terminate()
    assert proc.wait(timeout=120) != 0
    assert [r.info.status for r in _runs(uri)] == ["KILLED"]
    # SIGKILL before the first checkpoint: nothing to resume, so the rerun starts a new run
    # and marks the dead one KILLED instead of leaving it RUNNING for good
    proc = subprocess.Popen(_train_cmd(built), cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_running_run(uri, proc)
    # the stage records the run id the moment the run exists (a kill in the instant between
    # the two is the one case it cannot end): wait for the record, as a busy machine may lag
    sidecar = ckpt.parent / "mlflow_run_id"
    deadline = time.time() + 60
    while not sidecar.exists() and time.time() < deadline:
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert not ckpt.exists()
    assert sidecar.read_text().strip() in {r.info.run_id for r in _runs(uri)
                                           if r.info.status == "RUNNING"}
    r = subprocess.run(_train_cmd(built), cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    runs = _runs(uri)
    assert sorted(r.info.status for r in runs) == ["FINISHED", "KILLED", "KILLED"]
    assert sum("orphaned" in r.data.tags for r in runs) == 1


def test_a_killed_setting_resumes_each_run_on_its_own(built, tmp_path):
    """Both methods in one process; killed while GRPO trains (FGPO finished): the rerun reads
    FGPO's finished run back (no new MLflow run, the same result) and trains only GRPO."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["train"].update(epochs=10, evals_per_epoch=1, checkpoint_every=1,  # GRPO: long enough
                           workers=1)  # one after another: FGPO has finished when GRPO runs
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    cmd = _train_cmd(built, "fgpo", "grpo", params=tmp_path / "params.yaml")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for_running_run(uri, proc, method="grpo")
    checkpoint = tmp_path / "runs/grpo/careful_expert/genomeqa/seed0/checkpoint.pt"
    deadline = time.time() + 120  # GRPO's first checkpoints (a fixed sleep was too short on a
    while not checkpoint.exists() and proc.poll() is None and time.time() < deadline:  # busy CI)
        time.sleep(0.1)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    done = tmp_path / "runs/fgpo/careful_expert/genomeqa/seed0/result.json"
    first = done.read_text()
    assert checkpoint.exists()
    r = subprocess.run(cmd, cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert done.read_text() == first  # read back, not retrained
    runs = _runs(uri)
    assert sorted((r.data.tags["method"], r.info.status) for r in runs) == [
        ("fgpo", "FINISHED"), ("grpo", "FINISHED")]  # GRPO's run resumed from its checkpoint
    grpo_run = [r for r in runs if r.data.tags["method"] == "grpo"][0]
    from mlflow.tracking import MlflowClient
    steps = [m.step for m in MlflowClient(uri).get_metric_history(grpo_run.info.run_id,
                                                                  "train/loss")]
    grpo_done = json.loads((tmp_path / "runs/grpo/careful_expert/genomeqa/seed0/result.json")
                           .read_text())
    assert sorted(set(steps)) == list(range(1, grpo_done["final"]["budget/optimizer_steps"] + 1))
    saved = json.loads(first)
    m = json.loads((tmp_path / "metrics/train/careful_expert/genomeqa/fgpo.json").read_text())
    assert m["test/accuracy"] == saved["final"]["test/accuracy"]


def test_a_killed_setting_takes_its_workers_with_it_and_resumes(built, tmp_path):
    """train.workers: 2, the stage's process SIGKILLed while both workers train: no worker
    outlives it (each ends its MLflow run KILLED, not RUNNING for good), and the rerun
    finishes every run."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["train"].update(epochs=10, evals_per_epoch=1, checkpoint_every=1, workers=2,
                           threads=1, seeds=[0, 1])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    cmd = _train_cmd(built, "grpo", params=tmp_path / "params.yaml")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    # both workers training: each run has logged a metric point (not merely been created: a
    # kill inside MLflow's create_run, before the worker holds the run's id, is not this test's)
    while time.time() < deadline and proc.poll() is None and sum(
            r.info.status == "RUNNING" and bool(r.data.metrics) for r in _safe_runs(uri)) < 2:
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    deadline = time.time() + 60  # the workers' SIGTERM: each ends its run, then exits
    while time.time() < deadline and (not _safe_runs(uri) or any(
            r.info.status == "RUNNING" for r in _safe_runs(uri))):
        time.sleep(0.5)
    assert sorted(r.info.status for r in _runs(uri)) == ["KILLED", "KILLED"]
    r = subprocess.run(cmd, cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    for seed in (0, 1):
        assert (tmp_path / f"runs/grpo/careful_expert/genomeqa/seed{seed}/result.json").exists()


def _safe_runs(uri: str) -> list:
    try:
        return _runs(uri)
    except Exception:  # noqa: BLE001 - the store is being created
        return []


def test_two_trainings_of_one_setting_at_once_train_and_register_once(built, tmp_path):
    """Two `fgpo train` of the same setting started together: the second waits for the first
    (saying so), then reads its finished runs back: one MLflow run per (method, seed), one
    registry version, the same metrics, no temporary file left behind."""
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    procs = [subprocess.Popen(_train_cmd(built, "fgpo", "grpo"), cwd=tmp_path,
                              env=_env(MLFLOW_TRACKING_URI=uri), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [proc.communicate(timeout=900) for proc in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-3000:]
    assert sum("being trained by another process" in err for _, err in outs) == 1
    assert outs[0][0] == outs[1][0]  # the same headline numbers printed by both
    runs = _runs(uri)
    assert sorted((r.data.tags["method"], r.info.status) for r in runs) == [
        ("fgpo", "FINISHED"), ("grpo", "FINISHED")]
    from mlflow.tracking import MlflowClient
    assert len(MlflowClient(uri).search_model_versions(
        "name = 'fgpo-careful_expert-genomeqa'")) == 1
    assert not list((tmp_path / "runs").rglob("*.tmp"))


def test_a_bad_tuned_file_stops_fgpo_train_with_exit_2_naming_it(built, tmp_path):
    shutil.copy(built / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune/tuned.yaml").write_text("fgpo: {learning_rat: 0.003}\n")
    r = subprocess.run(_train_cmd(built, params=tmp_path / "params.yaml") + ["--no-mlflow"],
                       cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "tune/tuned.yaml" in r.stderr and "field 'fgpo.learning_rat'" in r.stderr
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").rglob("*.json"))


def test_seeds_in_one_process_match_each_seed_trained_alone_and_workers_change_nothing(
        built, tmp_path):
    """The frozen-layer cache and the backbone are shared by the runs of a process; their
    numbers must not be: seed 1 after seed 0 (and after the other method) equals seed 1 alone.
    Two forked workers (train.workers, each run in one of them) give byte-identical outputs to
    one process, and every run still logs one finished MLflow run (two processes writing one
    SQLite store)."""
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["train"].update(epochs=1, evals_per_epoch=2, threads=1)
    curves, finals, outputs = {}, {}, {}
    for name, seeds, methods, workers in (("together", [0, 1], ("fgpo", "grpo"), 1),
                                          ("alone", [1], ("grpo",), 1),
                                          ("workers", [0, 1], ("fgpo", "grpo"), 2)):
        work = tmp_path / name
        work.mkdir()
        params["train"].update(seeds=seeds, workers=workers)
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        tracked = name == "workers"
        uri = f"sqlite:///{work / 'mlflow.db'}"
        r = subprocess.run(_train_cmd(built, *methods, params=work / "params.yaml")
                           + ([] if tracked else ["--no-mlflow"]), cwd=work,
                           env=_env(MLFLOW_TRACKING_URI=uri), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        curve = pd.read_csv(work / "plots/train/careful_expert/genomeqa/grpo.csv")
        curves[name] = curve[curve.seed == 1].reset_index(drop=True)
        finals[name] = json.loads((work / "runs/grpo/careful_expert/genomeqa/seed1/result.json")
                                  .read_text())["final"]
        outputs[name] = {p.relative_to(work): p.read_bytes() for root in ("metrics", "plots")
                         for p in sorted((work / root).rglob("*")) if p.is_file()}
        if tracked:
            runs = _runs(uri)
            assert sorted((r.data.tags["method"], r.data.tags["seed"]) for r in runs) == [
                ("fgpo", "0"), ("fgpo", "1"), ("grpo", "0"), ("grpo", "1")]
            assert {r.info.status for r in runs} == {"FINISHED"}
    assert len(curves["alone"]) == finals["alone"]["budget/optimizer_steps"] + 1  # step 0 on
    pd.testing.assert_frame_equal(curves["together"], curves["alone"], rtol=1e-6, atol=1e-7)
    assert finals["together"].keys() == finals["alone"].keys()
    for k, v in finals["alone"].items():  # test metrics too
        assert finals["together"][k] == pytest.approx(v, rel=1e-6, abs=1e-7), k
    assert len(outputs["workers"]) == 4 and outputs["workers"] == outputs["together"]


@pytest.mark.slow
def test_a_storage_password_is_never_logged_printed_or_written(built, tmp_path, postgres_url):
    """The password of a PostgreSQL study storage, given on the command line or through the
    environment, appears nowhere: not in the MLflow store, the output, or any written file.
    (The test server trusts local connections, so any password is accepted.)"""
    import optuna
    from mlflow.tracking import MlflowClient

    planted = "pl4nted-S3cret"
    url = postgres_url
    with_password = url.replace("://fgpo@", f"://fgpo:{planted}@", 1)
    assert planted in with_password
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["sweep"].update(epochs=1, evals_per_epoch=1, n_startup_trials=1, n_warmup_steps=0)
    params["sweep"]["space"].pop("batch_size")  # 8 or 16 > the small benchmark's train split
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    name = f"secret-{os.getpid()}-{int(time.time())}"
    args = ["sweep", "--method", "grpo", "--reasoner", "careful_expert", "--benchmark",
            "genomeqa", "--n-trials", "1", "--study-name", name, "--params",
            str(tmp_path / "params.yaml"), "--data", str(built / "data")]
    first = fgpo(*args, "--storage", with_password, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    # the same storage from the environment, the password from sweep.storage_password_env
    params["sweep"]["storage_password_env"] = "FGPO_TEST_STORAGE_PASSWORD"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    second = fgpo(*args, cwd=tmp_path, FGPO_OPTUNA_STORAGE=url,
                  FGPO_TEST_STORAGE_PASSWORD=planted)
    assert second.returncode == 0, second.stderr[-3000:]
    trials = optuna.load_study(study_name=name, storage=url).trials
    assert len(trials) == 2 and {t.state.name for t in trials} <= {"COMPLETE", "PRUNED"}
    for out in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert planted not in out
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert tmp_path / "mlruns" / "mlflow.db" in written
    for path in written:
        assert planted.encode() not in path.read_bytes(), path
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("fgpo-sweeps")
    parent = client.search_runs([exp.experiment_id], f"tags.study = '{name}' and tags.kind = 'study'")
    # the storage actually used (not the params default), with its password masked
    assert parent[0].data.params["sweep.storage"] == with_password.replace(planted, "***")


# ---- adding an estimator: one module and one registry line, nothing else -------------------
TOY = '''"""TOY: REINFORCE with one subset sampled per question and the batch-mean baseline. A test
estimator: it shows that a new method is this module plus one registry line."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fgpo.train.base import Batch, register


@dataclass
class ToyConfig:
    temperature: float = 1.0
    """Sampling temperature."""


def toy_loss(logp: torch.Tensor, rewards: torch.Tensor) -> torch.Tensor:
    """logp, rewards: [B] of the sampled subsets. -mean((r - mean r) log pi(S))."""
    return -((rewards - rewards.mean()).detach() * logp).mean()


@dataclass
class Sampled(Batch):
    masks: torch.Tensor  # [B, 1]


@register
class Toy:
    name, Config, steps_per_batch = "toy", ToyConfig, 1

    def __init__(self, cfg, own, rewards, n_train, generator):
        self.own, self.rewards, self.generator, self.evals = own, rewards, generator, 0

    def collect(self, step, policy, next_batch):
        idx = next_batch()
        with torch.no_grad():
            p = torch.softmax(policy.log_probs(idx) / self.own.temperature, -1).cpu()
        self.evals += len(idx)
        return Sampled(idx, torch.multinomial(p, 1, generator=self.generator).to(idx.device))

    def loss(self, policy, batch, ref_logp):
        logp = policy.log_probs(batch.idx)
        r = self.rewards[batch.idx].gather(1, batch.masks)[:, 0]
        loss = toy_loss(logp.gather(1, batch.masks)[:, 0], r)
        return loss, logp, {"zero_signal_frac": (r == r.mean()).float().mean()}

    reward_evals = property(lambda self: self.evals)
    reward_evals_unique = property(lambda self: self.evals)

    def state_dict(self):
        return {"evals": self.evals}

    def load_state_dict(self, state):
        self.evals = state["evals"]
'''


def test_a_toy_estimator_is_one_module_and_one_registry_line(built, tmp_path):
    """On a copy of the package: the toy module and one import line in the registry, and with
    no other file touched it trains beside FGPO and GRPO, runs a sweep trial over its own
    setting, and appears in the report beside the headline pair."""
    import filecmp

    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "fgpo", src / "fgpo",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (src / "fgpo/train/toy.py").write_text(TOY)
    registry = src / "fgpo/train/estimators.py"
    text = registry.read_text()
    line = "import fgpo.train.grpo  # noqa: F401"
    assert text.count(line) == 1
    registry.write_text(text.replace(line, "import fgpo.train.toy  # noqa: F401\n" + line))
    cmp = filecmp.dircmp(REPO / "src" / "fgpo", src / "fgpo", ignore=["__pycache__"])
    assert cmp.diff_files == [] and cmp.left_only == [] and cmp.right_only == []
    train_cmp = cmp.subdirs["train"]
    assert train_cmp.diff_files == ["estimators.py"] and train_cmp.right_only == ["toy.py"]
    assert all(not c.diff_files and not c.left_only and not c.right_only
               for name, c in cmp.subdirs.items() if name != "train")

    work = tmp_path / "work"
    shutil.copytree(built / "data", work / "data")
    params = yaml.safe_load((built / "params.yaml").read_text())
    params["prepare"] = {"genomeqa": params["prepare"]["genomeqa"]}  # the one built setting
    params["train"].update(methods=["fgpo", "grpo", "toy"], toy={"temperature": 1.5})
    params["sweep"].update(epochs=1, evals_per_epoch=1, n_startup_trials=1, n_warmup_steps=0,
                           storage=f"sqlite:///{tmp_path / 'optuna.db'}",
                           space={"learning_rate": {"type": "float", "low": 1e-3, "high": 1e-2},
                                  "toy.temperature": {"type": "float", "low": 0.5, "high": 2.0}})
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {"PYTHONPATH": str(src)}

    r = fgpo("list-methods", cwd=work, **env)
    assert r.returncode == 0 and "toy: TOY: REINFORCE" in r.stdout, r.stderr
    r = fgpo("train", "careful_expert", "genomeqa", "--no-mlflow", cwd=work, **env)
    assert r.returncode == 0, r.stderr[-3000:]
    toy = json.loads((work / "metrics/train/careful_expert/genomeqa/toy.json").read_text())
    # one sample per question visited: one epoch over the train split
    assert toy["budget/reward_evals"] == toy["budget/question_visits"] > 0
    assert 0.0 <= toy["test/accuracy"] <= 1.0
    r = fgpo("sweep", "--method", "toy", "--reasoner", "careful_expert", "--benchmark",
             "genomeqa", "--n-trials", "1", "--no-mlflow", cwd=work, **env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "{'COMPLETE': 1}" in r.stdout and "toy.temperature" in r.stdout
    assert fgpo("table-stats", "careful_expert", "genomeqa", cwd=work, **env).returncode == 0
    r = fgpo("report", "--no-mlflow", cwd=work, **env)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = (work / "reports/summary.md").read_text()
    assert "| reasoner | benchmark | FGPO | GRPO | TOY | FGPO − GRPO [95% CI] |" in summary
    assert (work / "reports/figures/subset_choice.png").stat().st_size > 0


def test_tune_cli_writes_the_tuned_file_and_a_rerun_trains_nothing(built, tmp_path):
    """`fgpo tune` as `make tune` calls it: each method's study, tune/trials.csv and
    tune/tuned.yaml; a second call finds both studies complete and runs no trial."""
    params = yaml.safe_load((built / "params.yaml").read_text())
    # two of the six estimators (the code paths; a seventh run of each would prove nothing),
    # in two processes side by side (tune.workers), one trial each
    params["tune"].update(settings=["careful_expert/genomeqa"], n_trials=1, epochs=1,
                          evals_per_epoch=1, n_startup_trials=1, methods=["fgpo", "grpo"],
                          workers=2, storage=f"sqlite:///{tmp_path / 'tune.db'}")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    args = ["tune", "--params", str(tmp_path / "params.yaml"), "--data", str(built / "data")]
    r = fgpo(*args, cwd=tmp_path, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert r.returncode == 0, r.stderr[-3000:]
    tuned = yaml.safe_load((tmp_path / "tune/tuned.yaml").read_text())
    assert set(tuned["fgpo"]) == set(tuned["grpo"]) == {"learning_rate", "head_lr_mult", "beta"}
    trials = pd.read_csv(tmp_path / "tune/trials.csv")
    assert trials.groupby("method").size().to_dict() == {"fgpo": 1, "grpo": 1}
    assert trials["question_visits"].nunique() == 1   # the same budget for both
    first = (tmp_path / "tune/trials.csv").read_text()
    again = fgpo(*args, cwd=tmp_path, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlruns.db'}")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "fgpo: 1 complete trials" in again.stdout
    assert (tmp_path / "tune/trials.csv").read_text() == first


def _one_setting_project(work: Path) -> dict:
    """A git + DVC project of the main pipeline on the shrunken config, one benchmark (why: a
    setting's full path in about a minute); returns its params."""
    _project_files(work)
    shutil.copy(REPO / ".gitignore", work / ".gitignore")
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["prepare"] = {"genomeqa": params["prepare"]["genomeqa"]}
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for cmd in (["init", "-q"], ["config", "user.email", "t@example.org"],
                ["config", "user.name", "test"]):
        subprocess.run(["git", *cmd], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)
    return params


def _dvc_json(*args: str, cwd: Path):
    r = subprocess.run([str(BIN / "dvc"), *args, "--json"], cwd=cwd, capture_output=True,
                       text=True, env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
def test_a_dvc_experiment_in_a_temporary_copy_logs_to_the_projects_mlflow_store(tmp_path):
    """`dvc exp run --temp -S ...` (a temporary copy of the project, set up as a queued
    experiment's is: DVC's stash queue sets $DVC_ROOT and $DVC_EXP_NAME for both): the
    experiment's training runs land in the project's MLflow store, tagged with the DVC
    experiment's name and baseline revision, with the experiment's params; `dvc exp show` lists
    its metrics beside the baseline's; `dvc plots diff` draws the validation curves on the
    x and y the train stage declares. Not `--queue` + `--run-all`: their Celery worker
    sometimes stalls for good (treeverse/dvc#10398, #10428; once in this project's CI, 30 min)."""
    from mlflow.tracking import MlflowClient

    work = tmp_path / "repo"
    _one_setting_project(work)
    _dvc("repro", cwd=work)
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    subprocess.run(["git", "commit", "-qm", "baseline"], cwd=work, check=True)
    baseline = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True,
                              capture_output=True, text=True).stdout.strip()
    # tune.apply=false: the tuned values would otherwise shadow train.learning_rate
    _dvc("exp", "run", "--temp", "-n", "lr-up", "-S", "tune.apply=false",
         "-S", "train.learning_rate=0.05", cwd=work)

    client = MlflowClient(f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    fgpo_exp = client.get_experiment_by_name("fgpo").experiment_id
    runs = client.search_runs([fgpo_exp], filter_string="tags.`dvc.exp_name` = 'lr-up'")
    assert sorted(r.data.tags["method"] for r in runs) == ["fgpo", "grpo"]
    for run in runs:
        assert run.data.tags["dvc.baseline_rev"] == baseline
        assert float(run.data.params["train.learning_rate"]) == 0.05
        assert run.info.status == "FINISHED"
    base_runs = client.search_runs([fgpo_exp], filter_string="tags.method = 'fgpo'")
    assert len(base_runs) == 2 and "dvc.exp_name" not in base_runs[-1].data.tags  # dvc repro's
    assert not list((work / ".dvc/tmp").rglob("mlflow.db"))  # nothing left in the copies

    shown = _dvc_json("exp", "show", cwd=work)
    (commit,) = [b for b in shown if b["rev"] == baseline]
    (exp,) = commit["experiments"]
    assert exp["name"] == "lr-up"
    metrics = {rev: r["data"]["metrics"]["metrics/train/careful_expert/genomeqa/fgpo.json"]
               ["data"] for rev, r in (("base", commit), ("exp", exp["revs"][0]))}
    assert metrics["exp"]["val/expected_reward"] != metrics["base"]["val/expected_reward"]
    assert exp["revs"][0]["data"]["params"]["params.yaml"]["data"]["train"][
        "learning_rate"] == 0.05

    diff = _dvc_json("plots", "diff", "HEAD", "lr-up", cwd=work)
    (spec,) = diff["data"]["plots/train/careful_expert/genomeqa/fgpo.csv"]
    assert spec["revisions"] == ["HEAD", "lr-up"]  # one curve per experiment
    assert spec["content"]["encoding"]["x"]["field"] == "step"
    assert '"y": {"field": "val_accuracy"' in json.dumps(spec["content"])
