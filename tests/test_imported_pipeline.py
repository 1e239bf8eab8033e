"""An imported real-data collection, declared in params.yaml only, runs through `dvc repro`.

The "must show" of bringing real data into the pipeline: the E. coli promoter FASTA pair from
../shared/data/real, declared under `prepare:`, goes through every stage (prepare, tools, reward
table, table stats, train, report) of the repository's dvc.yaml unchanged, shows up in the
report and the README tables, never reaches `git add -A`, and DVC tracks its source files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from processes import run_or_explain
from test_stages_smoke import BIN, REPO, _dvc, small_params

NAME = "ecoli_promoters"
PAIR = ("Ecoli_prom.fa", "Ecoli_non_prom.fa")


def _records(path: Path) -> list[tuple[str, str]]:
    """(header line, sequence) of each FASTA record."""
    out = []
    for block in path.read_text().split(">")[1:]:
        header, *lines = block.splitlines()
        out.append((header, "".join(lines)))
    return out


def _write_fasta(path: Path, records: list[tuple[str, str]]) -> None:
    path.write_text("".join(f">{h}\n{s}\n" for h, s in records))


def _dvc_rc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`dvc ARGS` (stdout and stderr in one stream); a hang fails with the process tree."""
    return run_or_explain([str(BIN / "dvc"), *args], cwd=cwd, timeout=900,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})


def _ran(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


def _dvc_yaml_without_plots() -> str:
    """The repository's dvc.yaml, byte for byte, minus its top-level `plots:` (which names the
    full reasoner set): the stages are not touched."""
    text = (REPO / "dvc.yaml").read_text()
    cut = text.find("\nplots:\n")
    if cut < 0:
        return text
    head, tail = text[:cut + 1], text[cut + 1:]
    assert set(yaml.safe_load(tail)) == {"plots"}, "dvc.yaml has sections after `plots:`"
    assert yaml.safe_load(head)["stages"] == yaml.safe_load(text)["stages"]
    return head


def test_declared_collection_is_valid_with_the_split_used_below(real_data):
    """max_per_class 12 with split 0.5/0.25/0.25: 24 questions, every split non-empty."""
    from fgpo.benchmarks.config import ImportConfig
    from fgpo.benchmarks.importer import import_declared

    cfg = ImportConfig(source=str(real_data), positives=PAIR[0], negatives=PAIR[1], family="promoter",
                       organism="E. coli", seed=0, max_per_class=12, split=[0.5, 0.25, 0.25])
    qs = import_declared(NAME, cfg)
    assert len(qs) == 24 and sorted(q.meta["label"] for q in qs) == [0] * 12 + [1] * 12
    splits = [q.split for q in qs]
    assert {s: splits.count(s) for s in ("train", "val", "test")} == {
        "train": 12, "val": 6, "test": 6}


@pytest.mark.slow
def test_imported_collection_runs_through_dvc_repro_unchanged(tmp_path, real_data):
    if not all((real_data / f).is_file() for f in PAIR):
        pytest.skip(f"the E. coli promoter FASTA pair is not in {real_data}")
    # the real data stays outside the repository (a subset of it, in tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    for f in PAIR:
        _write_fasta(real / f, _records(real_data / f)[:60])
    real_seqs = {s for f in PAIR for _, s in _records(real / f)}

    work = tmp_path / "repo"
    work.mkdir()
    (work / "dvc.yaml").write_text(_dvc_yaml_without_plots())
    shutil.copytree(REPO / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    (work / "sweeps").mkdir()
    shutil.copy(REPO / "sweeps/best.yaml", work / "sweeps")
    shutil.copytree(REPO / "tune", work / "tune",  # committed: the tuned values the train stage reads
                    ignore=shutil.ignore_patterns("optuna.db*"))
    shutil.copy(REPO / ".gitignore", work / ".gitignore")
    shutil.copy(REPO / "README.md", work / "README.md")
    small_params(work)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["prepare"] = {
        "genomeqa": {**params["prepare"]["genomeqa"], "n_questions": 24},
        NAME: {"kind": "imported", "source": "../real", "positives": PAIR[0],
               "negatives": PAIR[1], "family": "promoter", "organism": "E. coli", "seed": 0,
               "max_per_class": 12, "split": [0.5, 0.25, 0.25]},
    }
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    _dvc("init", "-q", cwd=work)

    first = _dvc("repro", cwd=work)
    ran = _ran(first)
    r = "careful_expert"
    for stage in (f"prepare@{NAME}", f"tools@{NAME}", f"reward_table@{r}-{NAME}",
                  f"table_stats@{r}-{NAME}", f"train@{r}-{NAME}",  # both methods, one stage
                  "prepare@genomeqa", f"train@{r}-genomeqa", "report"):
        assert stage in ran, (stage, sorted(ran))
    assert not any("seqcalc" in s or "variant" in s for s in ran)

    # the report: a row for the imported setting, and the collection in "What ran"
    summary = (work / "reports/summary.md").read_text()
    assert f"| {r} | {NAME} |" in summary and f"| {r} | genomeqa |" in summary
    from fgpo.report.markdown import sections
    what_ran = sections(summary)["What ran"]
    assert "Imported collections" in what_ran
    assert f"{NAME} (24 E. coli promoter questions from `../real`" in what_ran
    assert json.loads((work / "metrics/summary.json").read_text())["overall/settings"] == 2

    # the README tables, regenerated from the declared list
    rd = subprocess.run([str(BIN / "fgpo"), "readme"], cwd=work, capture_output=True, text=True,
                        env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"})
    assert rd.returncode == 0, rd.stdout + rd.stderr
    readme = (work / "README.md").read_text()

    def block(name: str) -> str:
        return readme.split(f"<!-- fgpo:{name} -->")[1].split(f"<!-- /fgpo:{name} -->")[0]

    assert f"| {NAME} | promoter | 24 | 12 / 6 / 6 | 2 | (imported" in block("benchmarks")
    assert f"| {r} | {NAME} |" in block("reward_tables")
    assert f"| {r} | genomeqa |" in block("reward_tables")
    assert f"| {r} | {NAME} |" in block("results")

    # git safety: nothing derived from the real data is staged by `git add -A`
    subprocess.run(["git", "add", "-A"], cwd=work, check=True)
    staged = subprocess.run(["git", "ls-files"], cwd=work, capture_output=True, text=True,
                            check=True).stdout.split()
    assert "dvc.lock" in staged and "reports/summary.md" in staged
    assert not [p for p in staged if p.startswith("data/") and p.endswith(".parquet")]
    assert not [p for p in staged if NAME in p], [p for p in staged if NAME in p]
    assert "metrics/train/careful_expert/genomeqa/fgpo.json" in staged  # generated: versioned
    for p in staged:  # and no real sequence in any staged file
        text = (work / p).read_bytes().decode("utf-8", "replace")
        assert not any(s in text for s in real_seqs), p

    # nothing changed: nothing runs
    assert not _ran(_dvc("repro", cwd=work))
    assert "up to date" in _dvc("status", cwd=work)

    # a changed source sequence makes the imported collection's prepare stale, and only it
    pos = real / PAIR[0]
    original = pos.read_bytes()
    recs = _records(pos)
    h, s = recs[0]
    recs[0] = (h, ("A" if s[0] != "A" else "C") + s[1:])
    _write_fasta(pos, recs)
    status = _dvc("status", cwd=work)
    assert f"prepare@{NAME}" in status and "prepare@genomeqa" not in status, status
    # a missing source file fails the stage, naming the file
    pos.unlink()
    failed = _dvc_rc("repro", f"prepare@{NAME}", cwd=work)
    out = failed.stdout + failed.stderr
    assert failed.returncode != 0, out
    assert "../real/Ecoli_prom.fa" in out and "not found" in out, out
    # restored: up to date again once `dvc checkout` brings back the output DVC removed before
    # running the failed command (it is still in the cache, and dvc.lock was not changed)
    pos.write_bytes(original)
    stale = _dvc("status", cwd=work)
    assert f"data/benchmarks/{NAME}.parquet" in stale and "deleted" in stale, stale
    assert "genomeqa" not in stale, stale
    _dvc("checkout", cwd=work)
    assert "up to date" in _dvc("status", cwd=work)
    assert not _ran(_dvc("repro", cwd=work))
