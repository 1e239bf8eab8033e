"""MLflow tracking: one run per training run, on the repo's SQLite store by default."""

from fgpo.tracking.mlflow_run import (Tracker, default_tracking_uri, end_if_running,  # noqa: F401
                                      open_client, sigterm_as_exit)
