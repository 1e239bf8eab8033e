"""The files the train stage reads beside params.yaml, tune/tuned.yaml and sweeps/best.yaml, are
validated like params.yaml: a bad one stops the stage with exit 2 naming that file and the
field as written in it, never a traceback or a field of another file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fgpo.errors import InputError
from fgpo.train.config import TrainConfig
from fgpo.train.overrides import resolve

REPO = Path(__file__).resolve().parents[1]
GOOD_BEST = {"study": "grpo-r-b", "trial": 3, "value": 0.9, "params": {"learning_rate": 0.002}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """params.yaml (sweep.apply_best on), tune/tuned.yaml and sweeps/best.yaml in a folder."""
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["sweep"]["apply_best"] = True
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("tune", "sweeps"):
        (tmp_path / name).mkdir()
    (tmp_path / "tune/tuned.yaml").write_text(yaml.safe_dump({"grpo": {"beta": 0.02}}))
    (tmp_path / "sweeps/best.yaml").write_text(yaml.safe_dump({"grpo": {"r": {"b": GOOD_BEST}}}))
    return tmp_path


def _config(project: Path) -> TrainConfig:
    return resolve(TrainConfig(), "grpo", project / "params.yaml", "r", "b").config


def test_good_files_apply_tuned_then_best(project):
    cfg = _config(project)
    assert (cfg.beta, cfg.learning_rate) == (0.02, 0.002)


def test_resolve_says_where_each_value_came_from_and_stops_at_a_layer(project):
    """The one merge: the train stage takes every layer, a sweep starts from params + tuned (what
    its best is applied over), tuning from params alone; a later layer wins a shared path."""
    params = project / "params.yaml"
    (project / "sweeps/best.yaml").write_text(yaml.safe_dump({"grpo": {"r": {"b": {
        **GOOD_BEST, "params": {"learning_rate": 0.002, "beta": 0.05}}}}}))
    full = resolve(TrainConfig(), "grpo", params, "r", "b")
    assert (full.config.beta, full.config.learning_rate) == (0.05, 0.002)
    assert full.sources == {"beta": "sweep", "learning_rate": "sweep"}
    assert full.tuned == "tuned" and full.best["study"] == "grpo-r-b"
    sweep_start = resolve(TrainConfig(), "grpo", params, upto="tuned")
    assert (sweep_start.config.beta, sweep_start.config.learning_rate) == (
        0.02, TrainConfig().learning_rate)
    assert sweep_start.sources == {"beta": "tuned"} and sweep_start.best is None
    tune_start = resolve(TrainConfig(), "grpo", params, upto="params")
    assert tune_start.config == TrainConfig() and tune_start.sources == {}
    untuned = resolve(TrainConfig(), "fgpo", params, "r", "b")  # nothing for fgpo in either file
    assert untuned.config == TrainConfig() and untuned.tuned == "untuned"
    with pytest.raises(ValueError, match="reasoner and benchmark"):
        resolve(TrainConfig(), "grpo", params)


@pytest.mark.parametrize("file, content, field, words", [
    ("tune/tuned.yaml", {"grpo": {"learning_rat": 0.003}}, "grpo.learning_rat",
     "unknown train setting"),
    ("tune/tuned.yaml", {"grpo": {"grpo.groupsize": 4}}, "grpo.grpo.groupsize", "group_size"),
    ("tune/tuned.yaml", {"grpo": {"learning_rate": "fast"}}, "grpo.learning_rate",
     "must be a number"),
    ("tune/tuned.yaml", {"grpo": {"learning_rate": -1.0}}, "grpo.learning_rate", "learning"),
    ("tune/tuned.yaml", {"gpro": {"beta": 0.1}}, "gpro", "unknown method"),
    ("tune/tuned.yaml", {"grpo": [0.1]}, "grpo", "dotted train path"),
    ("sweeps/best.yaml", {"grpo": {"r": {"b": {**GOOD_BEST, "params": {"lr": 1e-3}}}}},
     "grpo.r.b.params.lr", "unknown train setting"),
    ("sweeps/best.yaml", {"grpo": {"r": {"b": {**GOOD_BEST, "params": {"beta": "high"}}}}},
     "grpo.r.b.params.beta", "must be a number"),
    ("sweeps/best.yaml", {"grpo": {"r": {"b": 0.9}}}, "grpo.r.b", "best trial"),
])
def test_a_bad_value_names_its_file_and_field(project, file, content, field, words):
    (project / file).write_text(yaml.safe_dump(content))
    with pytest.raises(InputError, match=words) as info:
        _config(project)
    assert Path(info.value.file).name == Path(file).name and info.value.field == field


@pytest.mark.parametrize("file", ["tune/tuned.yaml", "sweeps/best.yaml"])
@pytest.mark.parametrize("text, words", [("grpo: {beta: [0.1\n", "not valid YAML"),
                                         ("grpo: {}\ngrpo: {}\n", "declared twice"),
                                         ("- a list\n", "mapping")])
def test_a_file_that_is_no_yaml_mapping_names_the_file(project, file, text, words):
    (project / file).write_text(text)
    with pytest.raises(InputError, match=words) as info:
        _config(project)
    assert Path(info.value.file).name == Path(file).name


def test_a_device_the_machine_lacks_names_params_yaml(project, monkeypatch):
    import torch

    from fgpo.stages import train

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["train"]["device"] = "cuda"
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(InputError, match="sees no CUDA GPU") as info:
        train.main("careful_expert", "genomeqa", params=project / "params.yaml",
                   data=project / "data", tracking=False)
    assert info.value.file == str(project / "params.yaml")
    assert info.value.field == "train.device"
