"""Secrets never sit in a params file: params.yaml is committed, and DVC copies every value a
stage declares into dvc.lock. A storage URL carries its user only; the password comes from the
environment variable its section names."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fgpo.config import read_params
from fgpo.errors import InputError
from fgpo.redact import find_secret, url_with_password_from_env

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PLANTED = "hunter2-PW"
# every params field that holds a URL: the storages of sweep and tune, an endpoint, a shard's
URL_FIELDS = {
    ("sweep", "storage"): f"postgresql://u:{PLANTED}@127.0.0.1/sweeps",
    ("tune", "storage"): f"postgresql://u:{PLANTED}@127.0.0.1/tune",
    ("reward_table", "reasoners", "qwen3_8b_server", "base_url"):
        f"http://u:{PLANTED}@127.0.0.1:8000/v1",
    ("reward_table", "sharded", "base_urls"): [f"http://u:{PLANTED}@127.0.0.1:8000/v1"],
}


def _set(data: dict, path: tuple[str, ...], value) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def _with_passwords() -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for path, value in URL_FIELDS.items():
        _set(params, path, value)
    return params


def _declared_params(work: Path) -> dict[str, dict]:
    """stage -> {params file -> the values DVC records in dvc.lock for it}, for every stage of
    dvc.yaml (the matrix and foreach stages expanded by DVC itself)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    out: dict[str, dict] = {}
    with Repo(str(work)) as repo:
        for stage in repo.index.stages:
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    out.setdefault(stage.name, {})[dep.def_path] = dep.read_params()
    return out


def _dvc_project(work: Path, params: dict) -> None:
    work.mkdir()
    shutil.copy(REPO / "dvc.yaml", work)
    for name in ("sweeps/best.yaml", "tune/tuned.yaml"):
        (work / name).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / name, work / name)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run([str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=work, check=True)


@pytest.mark.parametrize("path", list(URL_FIELDS), ids=".".join)
def test_a_password_in_any_url_field_is_refused_naming_it(tmp_path: Path, path) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    _set(params, path, URL_FIELDS[path])
    file = tmp_path / "params.yaml"
    file.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError) as info:
        read_params(file)
    where = ".".join(path) + ("[0]" if path[-1] == "base_urls" else "")
    assert info.value.field == where and info.value.file == str(file)
    assert PLANTED not in str(info.value) and "environment variable" in str(info.value)


def test_every_section_dvc_declares_is_checked_for_secrets(tmp_path: Path) -> None:
    """Whatever key a stage declares, a password put under it stops every stage at load."""
    work = tmp_path / "repo"
    _dvc_project(work, yaml.safe_load((REPO / "params.yaml").read_text()))
    keys = {key for files in _declared_params(work).values()
            for key in files.get("params.yaml", {})}
    assert {"train", "tune.apply", "tools.names", "reward_table.tool_cost"} <= keys
    for key in sorted(keys):
        params = yaml.safe_load((REPO / "params.yaml").read_text())
        parts = key.split(".")
        _set(params, tuple(parts), {"secret_url": f"postgresql://u:{PLANTED}@h/db"})
        file = tmp_path / "params.yaml"
        file.write_text(yaml.safe_dump(params))
        with pytest.raises(InputError, match="password or secret") as info:
            read_params(file)
        assert info.value.field == f"{key}.secret_url"


def test_no_declared_param_carries_a_storage_password_into_dvc_lock(tmp_path: Path) -> None:
    """With a password in every URL field (written there by hand, past fgpo's own check), the
    values DVC records for every stage hold none: the storages are not declared. (An endpoint
    that a stage declares, a sharded table's base_urls, is kept out by fgpo's refusal at load:
    the stage fails, so DVC records nothing.)"""
    work = tmp_path / "repo"
    _dvc_project(work, _with_passwords())
    recorded = _declared_params(work)
    assert "report" in recorded and any(k.startswith("train@") for k in recorded)
    for stage, files in recorded.items():
        assert PLANTED not in repr(files), stage
        assert find_secret(files) is None, stage


def test_tune_storage_password_comes_from_the_environment(monkeypatch) -> None:
    url = "postgresql://fgpo@127.0.0.1/tune"
    monkeypatch.setenv("FGPO_TEST_TUNE_PW", "s3cr/et")
    assert url_with_password_from_env(url, "FGPO_TEST_TUNE_PW", "tune") == \
        "postgresql://fgpo:s3cr%2Fet@127.0.0.1/tune"
    monkeypatch.delenv("FGPO_TEST_TUNE_PW")
    with pytest.raises(InputError) as info:
        url_with_password_from_env(url, "FGPO_TEST_TUNE_PW", "tune")
    assert info.value.field == "tune.storage_password_env"


def test_fgpo_tune_refuses_a_password_in_params_and_prints_none(tmp_path: Path) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["tune"]["storage"] = URL_FIELDS[("tune", "storage")]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    r = subprocess.run([str(BIN / "fgpo"), "tune", "--no-mlflow"], cwd=tmp_path,
                       capture_output=True, text=True, env={**os.environ, "PATH":
                                                            f"{BIN}:{os.environ['PATH']}"})
    assert r.returncode == 2 and "field 'tune.storage'" in r.stderr
    assert PLANTED not in r.stdout + r.stderr
