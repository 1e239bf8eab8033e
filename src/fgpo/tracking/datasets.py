"""DVC-tracked files as MLflow datasets: the runs table's Dataset column names what a run read.

Each input is one split of one file: its name says the file and split, its digest is the md5
DVC records for the file in dvc.lock, its source is the path DVC knows it by (relative to the
project), and its context (the `mlflow.data.context` input tag) is the split it played:
train | validation | test. Nothing is copied: the file stays where DVC keeps it.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

from fgpo.tracking.provenance import file_md5

SPLIT_CONTEXT = {"train": "train", "val": "validation", "test": "test"}
"""The project's split names -> MLflow's dataset contexts."""


def dvc_dataset(path: Path, name: str, context: str, rows: int | None = None,
                md5: str | None = None) -> DatasetInput:
    """One dataset input: `path` (a DVC output), read in role `context` with `rows` rows."""
    source = {"uri": path.as_posix(), "tracked_by": "dvc"}
    profile = json.dumps({"num_rows": rows}) if rows is not None else None
    dataset = Dataset(name=name, digest=md5 or file_md5(path), source_type="local",
                      source=json.dumps(source), profile=profile)
    return DatasetInput(dataset, tags=[InputTag(MLFLOW_DATASET_CONTEXT, context)])


def split_inputs(path: Path, name: str, split_rows: dict[str, int],
                 md5: str | None = None) -> list[DatasetInput]:
    """One input per split of a file whose rows carry a split column (benchmarks, tables)."""
    md5 = md5 or file_md5(path)
    return [dvc_dataset(path, f"{name}:{SPLIT_CONTEXT.get(split, split)}",
                        SPLIT_CONTEXT.get(split, split), rows, md5)
            for split, rows in split_rows.items()]
