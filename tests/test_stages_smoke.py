"""Tier 4: each stage run as a user runs it (the CLI in a subprocess), and the DVC pipeline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fgpo.benchmarks import BENCHMARKS
from fgpo.benchmarks.base import from_frame
from fgpo.seqio import read_parquet_metadata
from fgpo.tools import ToolsConfig, tool_fingerprint

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def small_params(tmp: Path, n: int = 24) -> Path:
    """The repo's params.yaml shrunk so each stage runs its real code paths in seconds: n
    questions per benchmark (a few per family), one reasoner, 2 training steps."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for name in BENCHMARKS:
        params["prepare"][name]["n_questions"] = n
    params["tools"]["workers"] = 2
    params["tools"]["chunk_size"] = 8
    params["reward_table"]["build"] = ["careful_expert"]
    params["train"].update(steps=2, eval_every=1, checkpoint_every=1, batch_size=4)
    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def fgpo(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "fgpo"), *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})


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


def _dvc(*args: str, cwd: Path) -> str:
    r = subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


@pytest.mark.slow
def test_dvc_repro_is_incremental(tmp_path):
    """dvc repro builds everything; a second run does nothing; a changed benchmark parameter
    rebuilds only that benchmark and what depends on it (its tool outputs and tables)."""
    work = tmp_path / "repo"
    work.mkdir()
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text())
    dvc_yaml.pop("plots", None)  # the top-level plots name the full reasoner set
    (work / "dvc.yaml").write_text(yaml.safe_dump(dvc_yaml, sort_keys=False))
    shutil.copytree(REPO / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    small_params(work)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)
    first = _dvc("repro", cwd=work)
    for name in BENCHMARKS:
        assert f"Running stage 'prepare@{name}'" in first
        assert f"Running stage 'tools@{name}'" in first
    # the report stage closes the pipeline: summary, figures, metrics and MLflow run links
    summary = (work / "reports/summary.md").read_text()
    assert "FGPO wins" in summary and "| careful_expert | seqcalc |" in summary
    for name in ("accuracy_vs_reward_evals", "zero_signal_vs_step", "family_accuracy",
                 "subset_choice"):
        assert (work / f"reports/figures/{name}.png").stat().st_size > 5000, name
    assert json.loads((work / "metrics/summary.json").read_text())["overall/settings"] == 3
    assert "compare-runs" in (work / "reports/mlflow_runs.md").read_text()
    second = _dvc("repro", cwd=work)
    assert "Running stage" not in second
    assert "up to date" in _dvc("status", cwd=work)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["prepare"]["seqcalc"]["seed"] = 99
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    third = _dvc("repro", cwd=work)
    ran = {line.split("'")[1] for line in third.splitlines() if line.startswith("Running stage")}
    reasoners = params["reward_table"]["build"]
    assert ran == {"prepare@seqcalc", "tools@seqcalc"} | {
        f"{stage}@{r}-seqcalc" for r in reasoners for stage in ("reward_table", "table_stats")
    } | {f"train@{m}-{r}-seqcalc" for m in params["train"]["methods"] for r in reasoners} | {
        "report"}

def test_train_stage_logs_a_complete_mlflow_run(tmp_path):
    """`fgpo train` as DVC calls it: MLflow run with tags, params, step and final metrics and
    artifacts; the metrics JSON and plot CSV that DVC reads."""
    from mlflow.tracking import MlflowClient

    params = small_params(tmp_path)
    for cmd in (["prepare", "genomeqa"], ["tools", "genomeqa"],
                ["reward-table", "careful_expert", "genomeqa"]):
        r = fgpo(*cmd, "--params", str(params), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    for method in ("fgpo", "grpo"):
        r = fgpo("train", method, "careful_expert", "genomeqa", "--params", str(params),
                 cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("fgpo")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(run.data.tags["method"] for run in runs) == ["fgpo", "grpo"]
    for run in runs:
        tags, metrics = run.data.tags, run.data.metrics
        assert run.info.status == "FINISHED"
        assert tags["reasoner"] == "careful_expert" and tags["benchmark"] == "genomeqa"
        assert tags["seed"] == "0" and len(tags["table_md5"]) == 32 and tags["git_commit"]
        assert run.data.params["train.steps"] == "2"
        for key in ("train/expected_reward", "train/loss", "train/kl", "train/entropy",
                    "train/zero_signal_frac", "train/reward_evals", "val/accuracy",
                    "val/tools_per_question", "test/accuracy", "test/expected_accuracy",
                    "test/tools_per_question", "budget/reward_evals", "budget/table_cells"):
            assert key in metrics, key
        history = client.get_metric_history(run.info.run_id, "train/loss")
        assert [m.step for m in history] == [1, 2]
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"adapter", "test_selections.parquet", "learning_curve.png"} <= artifacts
        m = json.loads((tmp_path / f"metrics/train/{tags['method']}/careful_expert/genomeqa.json")
                       .read_text())
        assert m["test/accuracy"] == pytest.approx(metrics["test/accuracy"])
    grpo = [r for r in runs if r.data.tags["method"] == "grpo"][0].data.metrics
    fgpo_m = [r for r in runs if r.data.tags["method"] == "fgpo"][0].data.metrics
    assert fgpo_m["budget/reward_evals"] == fgpo_m["budget/table_cells_train"]
    assert grpo["budget/reward_evals"] == 1 * 4 * 8  # one sampled batch of 4 questions x G=8
    curve = pd.read_csv(tmp_path / "plots/train/grpo/careful_expert/genomeqa.csv")
    assert {"step", "train_reward_evals", "val_accuracy", "train_zero_signal_frac",
            "train_questions_seen"} <= set(curve)
    sel = pd.read_parquet(tmp_path / "data/selections/fgpo/careful_expert/genomeqa.parquet")
    bench = pd.read_parquet(tmp_path / "data/benchmarks/genomeqa.parquet")
    assert sorted(sel.question_id) == sorted(bench.loc[bench.split == "test", "id"])
    assert {"family", "mask", "tools", "n_tools", "correct", "reward", "seed"} <= set(sel)


def test_train_refuses_a_missing_table_before_training(tmp_path):
    params = small_params(tmp_path)
    fgpo("prepare", "genomeqa", "--params", str(params), cwd=tmp_path)
    r = fgpo("train", "fgpo", "careful_expert", "genomeqa", "--params", str(params), cwd=tmp_path)
    assert r.returncode == 2 and "reward table not found" in r.stderr
    assert not (tmp_path / "mlruns").exists()
