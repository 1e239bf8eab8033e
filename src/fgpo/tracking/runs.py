"""Lookups in the tracking store: the experiment, the finished runs of one setting, and links
to them in the MLflow UI."""

from __future__ import annotations

import json
from urllib.parse import quote

from mlflow.entities import Experiment
from mlflow.tracking import MlflowClient

from fgpo.tracking.mlflow_run import MLRUNS, open_client


ML_VIEW = "workflowType=machine_learning"
"""MLflow 3.17's UI opens in its GenAI view (a per-browser choice it remembers) and then shows
an experiment's traces overview, whatever the experiment's kind; this URL parameter opens the
model-training view: runs table, run pages with datasets and models, the compare view."""


def local_store_missing(uri: str) -> bool:
    """True when `uri` is the default SQLite store and nothing has created it yet."""
    return uri.startswith("sqlite:///") and not (MLRUNS / "mlflow.db").exists()


def open_experiment(name: str, uri: str) -> tuple[MlflowClient, Experiment | None]:
    """A client on `uri` and the experiment called `name` (None when no run logged to it)."""
    client = open_client(uri)
    return client, client.get_experiment_by_name(name)


def latest_finished_runs(client: MlflowClient, experiment_id: str, tags: dict[str, str]
                         ) -> list[str]:
    """Run ids of the newest FINISHED run of every seed whose tags all match, in seed order."""
    match = " and ".join(f"tags.{k} = '{v}'" for k, v in tags.items())
    runs = client.search_runs([experiment_id], order_by=["attributes.start_time DESC"],
                              filter_string=f"{match} and attributes.status = 'FINISHED'")
    latest: dict[str, str] = {}
    for run in runs:  # newest first: the first run seen of a seed is its latest
        latest.setdefault(run.data.tags.get("seed", "?"), run.info.run_id)
    return [latest[s] for s in sorted(latest)]



def run_links(client: MlflowClient, experiment_id: str, ui: str, methods: list[str],
              tags: dict[str, str]) -> str:
    """Markdown links to the MLflow UI: each method's latest finished run per seed (matching
    `tags` and `method`) and one compare view of them all; 'no finished run' when none."""
    ui = ui.rstrip("/")
    ids = {m: latest_finished_runs(client, experiment_id, {"method": m, **tags}) for m in methods}
    parts = [f"[{m.upper()} s{i}]({ui}/#/experiments/{experiment_id}/runs/{rid}?{ML_VIEW})"
             for m in methods for i, rid in enumerate(ids[m])]
    every = [rid for m in methods for rid in ids[m]]
    if every:
        q = quote(json.dumps(every, separators=(",", ":")))
        e = quote(json.dumps([experiment_id]))
        parts.append(f"[compare]({ui}/#/compare-runs?runs={q}&experiments={e}&{ML_VIEW})")
    return " · ".join(parts) or "no finished run"
