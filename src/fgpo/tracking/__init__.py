"""MLflow tracking: one run per training run, on the repo's SQLite store by default."""

from fgpo.tracking.mlflow_run import Tracker, default_tracking_uri  # noqa: F401
