"""Sequence input, atomic writes, the importer on real collections, the CLI and config loading.

Expected values come from hand counts (see comments) or from an independent reading of the
files (a plain line-by-line FASTA parse, pandas for the CSV), never from the code under test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from fgpo.benchmarks.base import from_frame
from fgpo.benchmarks.importer import import_csv, import_fasta_pair
from fgpo.config import load_section
from fgpo.errors import InputError
from fgpo.seqio import (atomic_write_parquet, normalise_sequence, read_fasta,
                        read_labelled_csv, read_parquet_metadata)
from fgpo.tools import ToolsConfig

REAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real"


@pytest.fixture(scope="module")
def real() -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real data folder {REAL.resolve()} absent (shared/ not beside the repo)")
    return REAL


def plain_fasta(path: Path) -> list[tuple[str, str]]:
    """Independent FASTA reading: header lines start with '>', the rest is concatenated."""
    out: list[tuple[str, list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            out.append((line[1:].strip().split()[0], []))
        elif line.strip():
            out[-1][1].append(line.strip().upper())
    return [(rid, "".join(parts)) for rid, parts in out]


# ---- normalise_sequence ----------------------------------------------------------------------

def test_normalise_upper_whitespace_and_iupac() -> None:
    assert normalise_sequence("acgt") == "ACGT"
    assert normalise_sequence("  ac gt\nAC\r\n\tgt \n") == "ACGTACGT"
    assert normalise_sequence("ACGTNNRYSWKMBDHV") == "ACGTNNRYSWKMBDHV"  # IUPAC codes kept
    assert normalise_sequence("nnnacg") == "NNNACG"


@pytest.mark.parametrize("raw, what", [("ACGU", "'U'"), ("ACG-T", "'-'"), ("ACGX", "'X'"),
                                       ("AC1G", "'1'"), ("", "empty"), ("  \n ", "empty")])
def test_normalise_refuses_naming_file_record_field(raw: str, what: str) -> None:
    with pytest.raises(InputError) as exc:
        normalise_sequence(raw, file="in/ecoli.fa", record="7 (seqA)", field="sequence")
    msg = str(exc.value)
    assert "in/ecoli.fa" in msg and "record 7 (seqA)" in msg and "field 'sequence'" in msg
    assert what in msg
    assert exc.value.file == "in/ecoli.fa" and exc.value.record == "7 (seqA)"


def test_normalise_reports_first_bad_position() -> None:
    # ACGTU-X: U at 4, - at 5, X at 6 -> the first one is at position 4
    with pytest.raises(InputError, match="first at position 4"):
        normalise_sequence("acgtu-x")


# ---- read_fasta / read_labelled_csv --------------------------------------------------------------

def test_read_fasta_good(tmp_path: Path) -> None:
    p = tmp_path / "ok.fa"
    p.write_text(">r1 description here\nacgt\nNNac\n\n>r2\nGGCC\n")
    assert read_fasta(p) == [("r1", "ACGTNNAC"), ("r2", "GGCC")]


@pytest.mark.parametrize("text, expect", [
    ("", ["empty file"]),
    ("\n  \n", ["empty file"]),
    ("ACGT\nACGT\n", ["record 1", "'>'"]),
    (">r1\nACGT\n>r2 second\nACGTZ\n>r3\nAC\n", ["record 2 (r2)", "'Z'"]),
    (">r1\nACGT\n>r2\nAC\n>r3\nACGU\n", ["record 3 (r3)", "'U'"]),
    (">r1\n\n>r2\nACGT\n", ["record 1 (r1)", "empty sequence"]),
    (">r1\nACGT\n>\nACGT\n", ["record 2", "header"]),
])
def test_read_fasta_malformed_names_file_and_record(tmp_path: Path, text: str, expect: list) -> None:
    p = tmp_path / "bad.fa"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        read_fasta(p)
    msg = str(exc.value)
    assert str(p) in msg
    for e in expect:
        assert e in msg


def test_read_fasta_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_fasta(tmp_path / "nope.fa")


def test_read_labelled_csv_good(tmp_path: Path) -> None:
    p = tmp_path / "ok.csv"
    p.write_text("seq,label\nacgt,1\nGGNN,0\n")
    assert read_labelled_csv(p) == [("row1", "ACGT", 1), ("row2", "GGNN", 0)]


@pytest.mark.parametrize("text, expect", [
    ("sequence,label\nACGT,1\n", ["missing column 'seq'", "field 'seq'"]),
    ("seq,y\nACGT,1\n", ["missing column 'label'", "field 'label'"]),
    ("seq,label\nACGT,1\nACGT,0\nACGT,2\n", ["record line 4", "field 'label'", "'2'"]),
    ("seq,label\nACGT,1\nACGT,yes\n", ["record line 3", "field 'label'"]),
    ("seq,label\nACGT,1\nACGT,0\nACGT,1\nACGUT,0\n", ["record line 5", "field 'seq'", "'U'"]),
    ("seq,label\nACGT,1\n,0\n", ["record line 3", "empty sequence"]),
    ("seq,label\nACGT,1,extra\n", ["record line 2", "wrong number of fields"]),
    ("seq,label\n", ["no data rows"]),
    ("", ["empty file"]),
])
def test_read_labelled_csv_malformed_names_line(tmp_path: Path, text: str, expect: list) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(InputError) as exc:
        read_labelled_csv(p)
    msg = str(exc.value)
    assert str(p) in msg
    for e in expect:
        assert e in msg


def test_read_labelled_csv_line_number_after_blank_line(tmp_path: Path) -> None:
    p = tmp_path / "blank.csv"
    p.write_text("seq,label\nACGT,1\n\nACGX,0\n")  # the bad row is physical line 4
    with pytest.raises(InputError) as exc:
        read_labelled_csv(p)
    assert "record line 4" in str(exc.value)


# ---- atomic_write_parquet ------------------------------------------------------------------------

def _failing_write(table, where, *args, **kwargs):
    with open(where, "wb") as fh:
        fh.write(b"PAR1 half a parquet")  # partial bytes, then the disk "fills up"
    raise OSError("No space left on device")


def test_atomic_write_failure_keeps_existing_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "out.parquet"
    good = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    atomic_write_parquet(good, target, metadata={"v": 1})
    before = target.read_bytes()

    monkeypatch.setattr(pq, "write_table", _failing_write)
    with pytest.raises(OSError, match="No space"):
        atomic_write_parquet(pd.DataFrame({"a": [9]}), target, metadata={"v": 2})
    monkeypatch.undo()

    assert sorted(os.listdir(tmp_path)) == ["out.parquet"]  # no temp file left behind
    assert target.read_bytes() == before
    pd.testing.assert_frame_equal(pd.read_parquet(target), good)
    assert read_parquet_metadata(target) == {"v": 1}


def test_atomic_write_failure_leaves_no_target(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "sub" / "new.parquet"
    monkeypatch.setattr(pq, "write_table", _failing_write)
    with pytest.raises(OSError):
        atomic_write_parquet(pd.DataFrame({"a": [1]}), target)
    assert not target.exists()
    assert os.listdir(target.parent) == []


# ---- the importer on real collections -------------------------------------------------------------

def check_import(df: pd.DataFrame, pos: list[tuple[str, str]], neg: list[tuple[str, str]],
                 length: int) -> None:
    n = len(pos) + len(neg)
    assert len(df) == n and df.id.is_unique
    qs = from_frame(df)
    labels = [q.meta["label"] for q in qs]
    # positives are labelled 1 and answered 'yes'; negatives 0 and 'no'
    assert labels.count(1) == len(pos) and labels.count(0) == len(neg)
    for q in qs:
        assert q.options == ["yes", "no"]
        assert q.options[q.answer] == ("yes" if q.meta["label"] == 1 else "no")
        assert len(q.sequences["seq"]) == length
        assert f"{length} bp" in q.question
    # the same records, in file order, as an independent parse of the files
    assert [(q.meta["source_id"], q.sequences["seq"]) for q in qs] == pos + neg
    # splits: round(0.6 n) train, round(0.2 n) val, the rest test (stratified by family only)
    n_train, n_val = round(0.6 * n), round(0.2 * n)
    assert Counter(df.split) == {"train": n_train, "val": n_val, "test": n - n_train - n_val}
    for label in (0, 1):  # a random permutation: each class close to 60/20/20 too
        sub = [q.split for q in qs if q.meta["label"] == label]
        assert abs(sub.count("train") / len(sub) - 0.6) < 0.06


def test_import_ecoli_pair(real: Path) -> None:
    pos, neg = plain_fasta(real / "Ecoli_prom.fa"), plain_fasta(real / "Ecoli_non_prom.fa")
    assert (len(pos), len(neg)) == (839, 3000)
    df = import_fasta_pair(real / "Ecoli_prom.fa", real / "Ecoli_non_prom.fa", name="ecoli",
                           family="promoter", organism="E. coli")
    # n = 3839: train round(2303.4) = 2303, val round(767.8) = 768, test 768
    assert Counter(df.split) == {"train": 2303, "val": 768, "test": 768}
    assert (df.answer == "A").sum() == 839
    check_import(df, pos, neg, 81)
    assert df.question.iloc[0] == "Is this 81 bp E. coli sequence a promoter?"


def test_import_bacillus_pair(real: Path) -> None:
    pos, neg = plain_fasta(real / "Bacillus_prom.fa"), plain_fasta(real / "Bacillus_non_prom.fa")
    assert (len(pos), len(neg)) == (373, 1000)
    df = import_fasta_pair(real / "Bacillus_prom.fa", real / "Bacillus_non_prom.fa",
                           name="bsub", family="promoter")
    check_import(df, pos, neg, 81)


def test_import_human_csv(real: Path) -> None:
    path = real / "human_nontata_promoters_test.csv"
    raw = pd.read_csv(path)
    df = import_csv(path, name="human", family="promoter")
    assert len(df) == len(raw) == 9034
    assert (df.answer == "A").sum() == int((raw.label == 1).sum()) == 4915
    assert (df.answer_index == 1).sum() == 4119
    qs = from_frame(df)
    assert {len(q.sequences["seq"]) for q in qs} == {251}
    assert [q.sequences["seq"] for q in qs] == raw.seq.str.upper().tolist()
    assert [q.meta["label"] for q in qs] == raw.label.tolist()
    # n = 9034: train round(5420.4) = 5420, val round(1806.8) = 1807, test 1807
    assert Counter(df.split) == {"train": 5420, "val": 1807, "test": 1807}


def test_import_max_per_class_balanced_and_seeded(real: Path) -> None:
    pos, neg = real / "Ecoli_prom.fa", real / "Ecoli_non_prom.fa"
    kw = dict(name="ecoli", family="promoter", max_per_class=100)
    a = import_fasta_pair(pos, neg, seed=5, **kw)
    b = import_fasta_pair(pos, neg, seed=5, **kw)
    c = import_fasta_pair(pos, neg, seed=6, **kw)
    assert len(a) == 200 and (a.answer == "A").sum() == 100 and (a.answer == "B").sum() == 100
    pd.testing.assert_frame_equal(a, b)  # same seed, same questions and splits
    ids = lambda df: {from_frame(df)[i].meta["source_id"] for i in range(len(df))}  # noqa: E731
    assert ids(a) != ids(c)
    assert Counter(a.split) == {"train": 120, "val": 40, "test": 40}
    # a class smaller than the cap is kept whole
    d = import_fasta_pair(real / "Bacillus_prom.fa", real / "Bacillus_non_prom.fa", name="b",
                          family="promoter", max_per_class=500)
    assert (d.answer == "A").sum() == 373 and (d.answer == "B").sum() == 500
    h = import_csv(real / "human_nontata_promoters_test.csv", name="h", family="promoter",
                   max_per_class=100, seed=1)
    assert len(h) == 200 and (h.answer == "A").sum() == 100


def test_import_unknown_family_names_field(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("seq,label\nACGT,1\nACGA,0\n")
    with pytest.raises(InputError, match="family"):
        import_csv(p, name="x", family="nonsense")
    df = import_csv(p, name="x", family="nonsense", question="Odd {n} bp {organism}?")
    assert df.question.tolist() == ["Odd 4 bp genomic?"] * 2


# ---- the CLI ------------------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fgpo.cli", "import", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_import_and_corrupt_fasta(real: Path, tmp_path: Path) -> None:
    out = tmp_path / "ecoli.parquet"
    r = cli("--name", "ecoli", "--family", "promoter", "--out", str(out),
            "--positives", str(real / "Ecoli_prom.fa"), "--negatives",
            str(real / "Ecoli_non_prom.fa"), "--max-per-class", "50", "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert "100 questions (50 positive)" in r.stdout
    qs = from_frame(pd.read_parquet(out), source=str(out))
    assert len(qs) == 100 and sum(q.meta["label"] for q in qs) == 50
    assert read_parquet_metadata(out) == {"benchmark": "ecoli", "imported": True}

    bad = tmp_path / "corrupt.fa"
    bad.write_text(">ok\nACGT\n>broken\nACGT-JUNK\n")
    out2 = tmp_path / "bad.parquet"
    r = cli("--name", "x", "--family", "promoter", "--out", str(out2), "--positives", str(bad),
            "--negatives", str(real / "Ecoli_non_prom.fa"))
    assert r.returncode != 0
    assert str(bad) in r.stderr and "record 2 (broken)" in r.stderr
    assert not out2.exists()


def test_cli_needs_one_input_kind(tmp_path: Path) -> None:
    r = cli("--name", "x", "--family", "promoter", "--out", str(tmp_path / "o.parquet"))
    assert r.returncode != 0 and "--csv" in r.stderr


# ---- config loading -------------------------------------------------------------------------------

def test_load_section_good_and_unknown_key(tmp_path: Path) -> None:
    p = tmp_path / "params.yaml"
    p.write_text("tools:\n  names: [composition, orf_finder]\n  orf_min_aa: 30\n")
    cfg = load_section(ToolsConfig, "tools", p)
    assert cfg.names == ["composition", "orf_finder"] and cfg.orf_min_aa == 30
    assert cfg.motif_fpr == ToolsConfig().motif_fpr  # unspecified keys keep defaults

    p.write_text("tools:\n  names: [composition]\n  motif_fdr: 0.01\n")
    with pytest.raises(InputError) as exc:
        load_section(ToolsConfig, "tools", p)
    msg = str(exc.value)
    assert "motif_fdr" in msg and "field 'tools'" in msg and str(p) in msg


def test_load_section_missing_section_and_file(tmp_path: Path) -> None:
    p = tmp_path / "params.yaml"
    p.write_text("prepare:\n  genomeqa: {}\n")
    with pytest.raises(InputError) as exc:
        load_section(ToolsConfig, "tools", p)
    assert str(p) in str(exc.value) and "'tools'" in str(exc.value)
    with pytest.raises(InputError, match="not found"):
        load_section(ToolsConfig, "tools", tmp_path / "absent.yaml")


def test_load_section_invalid_value_names_file(tmp_path: Path) -> None:
    p = tmp_path / "params.yaml"
    p.write_text("tools:\n  names: []\n")  # K = 0
    with pytest.raises(InputError) as exc:
        load_section(ToolsConfig, "tools", p)
    assert "tools.names" in str(exc.value)
