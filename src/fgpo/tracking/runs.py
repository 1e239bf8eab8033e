"""Lookups in the tracking store: the experiment, and the finished runs of one setting."""

from __future__ import annotations

from mlflow.entities import Experiment
from mlflow.tracking import MlflowClient

from fgpo.tracking.mlflow_run import MLRUNS, open_client


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

