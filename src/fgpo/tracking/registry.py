"""The MLflow model registry: each setting's best training run as a version of model
`fgpo-<reasoner>-<benchmark>`, and the `champion` alias on the best version so far."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHAMPION = "champion"
"""The registry alias of each setting's best version so far on the validation criterion: what
`models:/fgpo-<reasoner>-<benchmark>@champion` loads. A new version takes it only by beating it."""


@dataclass
class Candidate:
    """A finished training run that may be registered."""

    method: str
    seed: int
    final: dict[str, float]
    run_id: str | None
    model_uri: str | None


def validation_score(final: dict[str, float]) -> tuple[float, float]:
    """The registry's criterion: val/accuracy, then val/expected_reward (never test)."""
    return final.get("val/accuracy", float("-inf")), final.get("val/expected_reward",
                                                               float("-inf"))


def _version_score(version: Any) -> tuple[float, float]:
    tags = version.tags or {}
    return (float(tags.get("val/accuracy", "-inf")),
            float(tags.get("val/expected_reward", "-inf")))


def register_best(candidates: list[Candidate], reasoner: str, benchmark: str,
                  table_md5: str = "") -> str | None:
    """Register the setting's best run's policy (chosen on validation: `validation_score`) as a
    version of model `fgpo-<reasoner>-<benchmark>`, unless that run's model is registered
    already, and move the `champion` alias to it only when it beats the current champion
    (strictly: a tie keeps the earlier one). Returns the model name, or None."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from fgpo.tracking.mlflow_run import default_tracking_uri

    ranked = [(validation_score(c.final), c) for c in candidates if c.model_uri]
    if not ranked:
        return None
    score, best = max(ranked, key=lambda t: t[0])
    name = f"fgpo-{reasoner}-{benchmark}"
    client = MlflowClient(default_tracking_uri())
    found = client.search_model_versions(f"name = '{name}' and run_id = '{best.run_id}'")
    if found:
        version = found[0]
    else:
        mlflow.set_tracking_uri(default_tracking_uri())
        version = mlflow.register_model(best.model_uri, name, tags={
            "method": best.method, "seed": str(best.seed), "setting": f"{reasoner}/{benchmark}",
            # repr: exact floats, so the champion comparison reads back what was measured
            "val/accuracy": repr(score[0]), "val/expected_reward": repr(score[1]),
            "table_md5": table_md5,
            "chosen_by": "val/accuracy, then val/expected_reward"})
    try:
        champion = client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:  # no champion yet
        champion = None
    if champion is None or score > _version_score(champion):
        client.set_registered_model_alias(name, CHAMPION, version.version)
    return name
