"""One MLflow run per training run.

Default store: `sqlite:///mlruns/mlflow.db` with artifacts under `mlruns/artifacts` (MLflow 3
refuses the old file store unless forced); `MLFLOW_TRACKING_URI` switches to a tracking server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import mlflow
from mlflow.tracking import MlflowClient

MLRUNS = Path("mlruns")


def default_tracking_uri(root: Path = MLRUNS) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{root.resolve() / 'mlflow.db'}"


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


class Tracker:
    """A thin wrapper: start (or resume) a run, log batched metrics, artifacts, end."""

    def __init__(self, experiment: str, run_name: str, tags: dict[str, str],
                 params: dict[str, Any], uri: str | None = None, run_id: str | None = None,
                 root: Path = MLRUNS, parent_run_id: str | None = None) -> None:
        self.uri = uri or default_tracking_uri(root)
        if self.uri.startswith("sqlite:///"):
            Path(self.uri[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(self.uri)
        exp_id = self._experiment_id(experiment, root)
        if run_id is None:
            all_tags = dict(tags)
            if parent_run_id:
                all_tags["mlflow.parentRunId"] = parent_run_id
            run = self.client.create_run(exp_id, run_name=run_name, tags=all_tags)
            run_id = run.info.run_id
            flat = flatten(params)
            items = [mlflow.entities.Param(k, str(v)[:6000]) for k, v in flat.items()]
            for i in range(0, len(items), 100):
                self.client.log_batch(run_id, params=items[i:i + 100])
        else:
            self.client.update_run(run_id, status="RUNNING")
        self.run_id = run_id

    def _experiment_id(self, name: str, root: Path) -> str:
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            return exp.experiment_id
        artifacts = (root.resolve() / "artifacts").as_uri() if self.uri.startswith("sqlite") \
            else None
        try:
            return self.client.create_experiment(name, artifact_location=artifacts)
        except mlflow.exceptions.MlflowException:  # another worker created it meanwhile
            return self.client.get_experiment_by_name(name).experiment_id

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        import time
        ts = int(time.time() * 1000)
        items = [mlflow.entities.Metric(k, float(v), ts, step) for k, v in metrics.items()]
        for i in range(0, len(items), 500):
            self.client.log_batch(self.run_id, metrics=items[i:i + 500])

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        if Path(path).is_dir():
            self.client.log_artifacts(self.run_id, str(path), artifact_path)
        else:
            self.client.log_artifact(self.run_id, str(path), artifact_path)

    def set_tags(self, tags: dict[str, str]) -> None:
        for k, v in tags.items():
            self.client.set_tag(self.run_id, k, v)

    def end(self, status: str = "FINISHED") -> None:
        self.client.set_terminated(self.run_id, status=status)
