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

from fgpo.benchmarks.importer import import_csv, import_fasta_pair
from fgpo.config import load_section
from fgpo.errors import InputError
from fgpo.question import from_frame
from fgpo.seqio import (atomic_write_parquet, normalise_sequence, read_fasta,
                        read_labelled_csv, read_parquet_metadata)
from fgpo.tools.toolset import ToolsConfig



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


def test_import_ecoli_pair(real_data: Path) -> None:
    pos, neg = plain_fasta(real_data / "Ecoli_prom.fa"), plain_fasta(real_data / "Ecoli_non_prom.fa")
    assert (len(pos), len(neg)) == (839, 3000)
    df = import_fasta_pair(real_data / "Ecoli_prom.fa", real_data / "Ecoli_non_prom.fa", name="ecoli",
                           family="promoter", organism="E. coli")
    # n = 3839: train round(2303.4) = 2303, val round(767.8) = 768, test 768
    assert Counter(df.split) == {"train": 2303, "val": 768, "test": 768}
    assert (df.answer == "A").sum() == 839
    check_import(df, pos, neg, 81)
    assert df.question.iloc[0] == "Is this 81 bp E. coli sequence a promoter?"


def numbered_ids(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Independent renaming: the k-th record (k >= 2) with an id becomes id#k."""
    seen: Counter = Counter()
    out = []
    for rid, seq in pairs:
        seen[rid] += 1
        out.append((rid if seen[rid] == 1 else f"{rid}#{seen[rid]}", seq))
    assert len({rid for rid, _ in out}) == len(out)  # no clash with an id already in the file
    return out


def test_import_bacillus_pair(real_data: Path) -> None:
    pos, neg = plain_fasta(real_data / "Bacillus_prom.fa"), plain_fasta(real_data / "Bacillus_non_prom.fa")
    assert (len(pos), len(neg)) == (373, 1000)
    # 25 ids occur twice or more in Bacillus_prom.fa (one of them three times): 26 later records,
    # each with its own sequence, are kept and renamed id#2 / id#3
    repeats = Counter(rid for rid, _ in pos)
    assert sum(1 for c in repeats.values() if c > 1) == 25
    assert sum(c - 1 for c in repeats.values()) == 26
    with pytest.warns(UserWarning, match="26 record"):
        df = import_fasta_pair(real_data / "Bacillus_prom.fa", real_data / "Bacillus_non_prom.fa",
                               name="bsub", family="promoter")
    check_import(df, numbered_ids(pos), neg, 81)
    assert df.id.is_unique and len({q.meta["source_id"] for q in from_frame(df)}) == 1373


def test_import_human_csv(real_data: Path) -> None:
    path = real_data / "human_nontata_promoters_test.csv"
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


def test_import_max_per_class_balanced_and_seeded(real_data: Path) -> None:
    pos, neg = real_data / "Ecoli_prom.fa", real_data / "Ecoli_non_prom.fa"
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
    with pytest.warns(UserWarning, match="26 record"):  # Bacillus_prom.fa's repeated ids
        d = import_fasta_pair(real_data / "Bacillus_prom.fa", real_data / "Bacillus_non_prom.fa", name="b",
                              family="promoter", max_per_class=500)
    assert (d.answer == "A").sum() == 373 and (d.answer == "B").sum() == 500
    h = import_csv(real_data / "human_nontata_promoters_test.csv", name="h", family="promoter",
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


def test_cli_import_and_corrupt_fasta(real_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "ecoli.parquet"
    r = cli("--name", "ecoli", "--family", "promoter", "--out", str(out),
            "--positives", str(real_data / "Ecoli_prom.fa"), "--negatives",
            str(real_data / "Ecoli_non_prom.fa"), "--max-per-class", "50", "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert "100 questions (50 positive)" in r.stdout
    qs = from_frame(pd.read_parquet(out), source=str(out))
    assert len(qs) == 100 and sum(q.meta["label"] for q in qs) == 50
    assert read_parquet_metadata(out) == {"benchmark": "ecoli", "imported": True}

    bad = tmp_path / "corrupt.fa"
    bad.write_text(">ok\nACGT\n>broken\nACGT-JUNK\n")
    out2 = tmp_path / "bad.parquet"
    r = cli("--name", "x", "--family", "promoter", "--out", str(out2), "--positives", str(bad),
            "--negatives", str(real_data / "Ecoli_non_prom.fa"))
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


def test_config_errors_name_the_params_file_actually_read(tmp_path: Path) -> None:
    """Issue 10, item 11: errors said "file params.yaml" whatever --params named."""
    from fgpo.benchmarks.config import load_prepare
    from fgpo.report.config import ReportConfig
    from fgpo.train.config import TrainConfig

    p = tmp_path / "other.yaml"
    p.write_text("tools:\n  names: []\n"
                 "train:\n  evals_per_epoch: 0\n  policy:\n    kind: rnn\n"
                 "prepare:\n  genomeqa:\n    kind: generated\n"
                 "    source: src/fgpo/benchmarks/genomeqa.py\n    n_questions: 0\n"
                 "report:\n  level: 1.5\n")
    for load, field in [(lambda: load_section(ToolsConfig, "tools", p), "tools.names"),
                        (lambda: load_section(TrainConfig, "train", p), "train.policy.kind"),
                        (lambda: load_prepare(p), "prepare.genomeqa.n_questions"),
                        (lambda: load_section(ReportConfig, "report", p), "report.level")]:
        with pytest.raises(InputError) as exc:
            load()
        msg = str(exc.value)
        assert exc.value.file == str(p) and "params.yaml" not in msg, msg
        assert exc.value.field == field and f"'{field}'" in msg, msg  # full path, no doubling


def test_unknown_reasoner_backend_names_the_reasoner(tmp_path: Path) -> None:
    from fgpo.rewards.build import RewardTableConfig

    p = tmp_path / "other.yaml"
    p.write_text("reward_table:\n  reasoners:\n    my_llm:\n      backend: gpt\n")
    with pytest.raises(InputError) as exc:
        load_section(RewardTableConfig, "reward_table", p)
    assert exc.value.field == "reward_table.reasoners.my_llm.backend"
    assert str(p) in str(exc.value) and "'gpt'" in str(exc.value)


# ---- a truncated or corrupt parquet is a clear error naming the file -------------

def _truncated_parquet(path: Path) -> Path:
    atomic_write_parquet(pd.DataFrame({"a": list(range(100)), "b": ["x"] * 100}), path,
                         metadata={"v": 1})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy cut off half-way
    return path


def test_read_parquet_truncated_names_file(tmp_path: Path) -> None:
    from fgpo.seqio import read_parquet
    bad = _truncated_parquet(tmp_path / "cut.parquet")
    for read in (lambda: read_parquet(bad, rebuild="`dvc repro tools`"),
                 lambda: read_parquet_metadata(bad, rebuild="`dvc repro tools`")):
        with pytest.raises(InputError) as exc:
            read()
        msg = str(exc.value)
        assert exc.value.file == str(bad) and str(bad) in msg
        assert "not a readable parquet file (truncated or corrupt?)" in msg
        assert "rebuild it with `dvc repro tools`" in msg
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 this is not a parquet file at all PAR1")
    with pytest.raises(InputError, match="truncated or corrupt"):
        read_parquet(junk)
    # a good file still reads, columns and all
    good = tmp_path / "good.parquet"
    atomic_write_parquet(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), good)
    assert read_parquet(good, columns=["b"]).b.tolist() == ["x", "y"]


def test_stage_loaders_name_a_corrupt_file(tmp_path: Path) -> None:
    from fgpo.rewards.table import load_reward_table
    from fgpo.tools.outputs import load_tool_outputs
    bad = _truncated_parquet(tmp_path / "t.parquet")
    for load, tools in ((load_tool_outputs, ToolsConfig()),
                        (load_reward_table, ToolsConfig().names)):
        with pytest.raises(InputError) as exc:
            load(bad, tools)
        assert str(bad) in str(exc.value) and "truncated or corrupt" in str(exc.value)


def test_cli_corrupt_benchmark_parquet_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    bad = _truncated_parquet(tmp_path / "bench" / "b.parquet")
    params = tmp_path / "params.yaml"
    params.write_text("tools:\n  names: [composition]\n")
    r = subprocess.run([sys.executable, "-m", "fgpo.cli", "tools", "b", "--params", str(params),
                        "--bench-dir", str(tmp_path / "bench"), "--out-dir", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "ArrowInvalid" not in r.stderr
    assert str(bad) in r.stderr and "truncated or corrupt" in r.stderr


# ---- `fgpo import` on awkward input ---------------------------------------------

BINARY = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # not UTF-8


@pytest.mark.parametrize("reader", [read_fasta, read_labelled_csv])
def test_binary_file_is_a_clear_error(tmp_path: Path, reader) -> None:
    p = tmp_path / "image.png"
    p.write_bytes(BINARY)
    with pytest.raises(InputError) as exc:
        reader(p)
    assert exc.value.file == str(p) and "binary file" in str(exc.value)


@pytest.mark.parametrize("reader", [read_fasta, read_labelled_csv])
def test_directory_is_a_clear_error(tmp_path: Path, reader) -> None:
    with pytest.raises(InputError) as exc:
        reader(tmp_path)
    assert exc.value.file == str(tmp_path) and "directory" in str(exc.value)


def test_csv_field_over_128_kib_imports_like_fasta(tmp_path: Path) -> None:
    long = "ACGT" * 50_000  # 200,000 bp > the csv module's default 131,072-character field limit
    c = tmp_path / "long.csv"
    c.write_text(f"seq,label\n{long},1\nACGT,0\n")
    assert read_labelled_csv(c) == [("row1", long, 1), ("row2", "ACGT", 0)]
    f = tmp_path / "long.fa"
    f.write_text(f">big\n{long}\n")
    assert read_fasta(f) == [("big", long)]


def test_gzipped_fasta_and_csv_read_transparently(tmp_path: Path) -> None:
    import gzip
    fa_text, csv_text = ">r1 d\nacgt\nNNac\n>r2\nGGCC\n", "seq,label\nacgt,1\nGGNN,0\n"
    fa, cs = tmp_path / "x.fa.gz", tmp_path / "x.csv.gz"
    fa.write_bytes(gzip.compress(fa_text.encode()))
    cs.write_bytes(gzip.compress(csv_text.encode()))
    assert read_fasta(fa) == [("r1", "ACGTNNAC"), ("r2", "GGCC")]
    assert read_labelled_csv(cs) == [("row1", "ACGT", 1), ("row2", "GGNN", 0)]
    # detected by content, not by name
    odd = tmp_path / "named_plain.fa"
    odd.write_bytes(gzip.compress(fa_text.encode()))
    assert read_fasta(odd) == [("r1", "ACGTNNAC"), ("r2", "GGCC")]
    cut = tmp_path / "cut.fa.gz"
    cut.write_bytes(gzip.compress(fa_text.encode() * 50)[:30])  # truncated gzip
    with pytest.raises(InputError) as exc:
        read_fasta(cut)
    assert exc.value.file == str(cut)


def test_utf8_bom_header_accepted(tmp_path: Path) -> None:
    c = tmp_path / "bom.csv"
    c.write_bytes(b"\xef\xbb\xbfseq,label\r\nacgt,1\r\nGGNN,0\r\n")  # as Excel saves it
    assert read_labelled_csv(c) == [("row1", "ACGT", 1), ("row2", "GGNN", 0)]
    f = tmp_path / "bom.fa"
    f.write_bytes(b"\xef\xbb\xbf>r1\nACGT\n")
    assert read_fasta(f) == [("r1", "ACGT")]


@pytest.mark.parametrize("template, expect", [("Is {x} ok", "{x}"), ("Is {0} ok", "{0}"),
                                              ("{n} bp {organism} {kind}?", "{kind}"),
                                              ("Is {n ok", "template"), ("Is n} ok", "template")])
def test_question_template_checked_up_front(tmp_path: Path, template: str, expect: str) -> None:
    p = tmp_path / "x.csv"
    p.write_text("seq,label\nACGT,1\nACGA,0\n")
    with pytest.raises(InputError) as exc:
        import_csv(p, name="x", family="promoter", question=template)
    assert exc.value.field == "--question" and "field '--question'" in str(exc.value)
    assert expect in str(exc.value) and "{n}" in str(exc.value)  # names what is allowed
    ok = import_csv(p, name="x", family="promoter", question="{organism}: {n} bp, {{literal}}?")
    assert ok.question.tolist() == ["genomic: 4 bp, {literal}?"] * 2


@pytest.mark.parametrize("value", [0, -1])
def test_max_per_class_must_be_positive(tmp_path: Path, value: int) -> None:
    from typer.testing import CliRunner

    from fgpo.cli import app
    p = tmp_path / "x.csv"
    p.write_text("seq,label\nACGT,1\nACGA,0\n")
    with pytest.raises(InputError) as exc:
        import_csv(p, name="x", family="promoter", max_per_class=value)
    assert exc.value.field == "--max-per-class" and "at least 1" in str(exc.value)
    out = tmp_path / "o.parquet"
    r = CliRunner().invoke(app, ["import", "--name", "x", "--family", "promoter", "--out",
                                 str(out), "--csv", str(p), "--max-per-class", str(value)])
    assert r.exit_code == 2  # the CLI's own bound: a usage error, not a traceback (exit 1)
    assert "--max-per-class" in r.stderr and "greater than or equal" in r.stderr
    assert not out.exists()


def test_max_per_class_has_help_text() -> None:
    from typer.testing import CliRunner

    from fgpo.cli import app
    r = CliRunner().invoke(app, ["import", "--help"])
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if "--max-per-class" in x)
    assert "[x>=1]" in line  # the bound, shown in the help
    assert "keep at most" in line.split("[x>=1]", 1)[1]  # the help column is not empty


def _fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{rid}\n{seq}\n" for rid, seq in records))
    return path


def _imported(df: pd.DataFrame) -> list[tuple[str, str, int]]:
    return [(q.meta["source_id"], q.sequences["seq"], q.meta["label"]) for q in from_frame(df)]


def test_duplicate_sequences_within_a_class_dropped(tmp_path: Path) -> None:
    pos = _fasta(tmp_path / "p.fa", [("p1", "AAAA"), ("p2", "CCCC"), ("p3", "AAAA"),
                                     ("p2", "CCCC"), ("p4", "GGGG")])
    neg = _fasta(tmp_path / "n.fa", [("n1", "TTTT"), ("n2", "ACAC"), ("n3", "TTTT")])
    # by hand: p3 (AAAA again), the second p2 (CCCC again) and n3 (TTTT again) -> 3 dropped
    with pytest.warns(UserWarning, match=r"dropped 3 duplicate sequence") as rec:
        df = import_fasta_pair(pos, neg, name="d", family="promoter")
    assert str(pos) in str(rec[0].message)
    assert _imported(df) == [("p1", "AAAA", 1), ("p2", "CCCC", 1), ("p4", "GGGG", 1),
                             ("n1", "TTTT", 0), ("n2", "ACAC", 0)]


def test_sequence_in_both_classes_dropped_or_refused(tmp_path: Path) -> None:
    pos = _fasta(tmp_path / "p.fa", [("p1", "AAAA"), ("p2", "CCCC"), ("p3", "GGGG")])
    neg = _fasta(tmp_path / "n.fa", [("n1", "TTTT"), ("n2", "CCCC"), ("n3", "ACAC")])
    # CCCC is labelled both ways: p2 and n2 go, 1 conflict of a smaller class of 3 (<= 1.5)
    with pytest.warns(UserWarning, match=r"dropped 1 sequence\(s\) labelled both .*\(2 records\)"):
        df = import_fasta_pair(pos, neg, name="b", family="promoter")
    assert _imported(df) == [("p1", "AAAA", 1), ("p3", "GGGG", 1), ("n1", "TTTT", 0),
                             ("n3", "ACAC", 0)]
    # the same file as both classes: 3 conflicts > 3 / 2 -> refused
    with pytest.raises(InputError, match="3 sequence"):
        import_fasta_pair(pos, pos, name="b", family="promoter")
    # a CSV with two of four sequences labelled both ways: 2 conflicts > smaller class 3 / 2
    c = tmp_path / "c.csv"
    c.write_text("seq,label\nAAAA,1\nCCCC,1\nGGGG,1\nAAAA,0\nCCCC,0\nTTTT,0\n")
    with pytest.raises(InputError) as exc:
        import_csv(c, name="c", family="promoter")
    assert exc.value.file == str(c) and "2 sequence" in str(exc.value)


def test_cli_same_file_as_both_classes_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from fgpo.cli import app
    x = _fasta(tmp_path / "x.fa", [("a", "AAAA"), ("b", "CCCC")])
    out = tmp_path / "o.parquet"
    r = CliRunner().invoke(app, ["import", "--name", "x", "--family", "promoter", "--out",
                                 str(out), "--positives", str(x), "--negatives", str(x)])
    assert r.exit_code == 2 and "labelled both positive and negative" in r.stderr
    assert not out.exists()
    # a duplicate is a warning line on stderr, and the import goes on
    y = _fasta(tmp_path / "y.fa", [("c", "GGGG"), ("d", "GGGG")])
    r = CliRunner().invoke(app, ["import", "--name", "x", "--family", "promoter", "--out",
                                 str(out), "--positives", str(x), "--negatives", str(y)])
    assert r.exit_code == 0, r.stderr
    assert "warning:" in r.stderr and "dropped 1 duplicate sequence" in r.stderr
    assert "3 questions (2 positive)" in r.stdout


def test_repeated_ids_with_different_sequences_renamed(tmp_path: Path) -> None:
    pos = _fasta(tmp_path / "p.fa", [("r1", "AAAA"), ("r1", "CCCC"), ("r2", "GGGG"),
                                     ("r1", "GGCC"), ("r1#2x", "ACGT")])
    neg = _fasta(tmp_path / "n.fa", [("r2", "TTTT"), ("n1", "ACAC")])
    # by hand: r1 x3 -> r1, r1#2, r1#3; r2 (in both files, different sequences) -> r2, r2#2
    with pytest.warns(UserWarning, match=r"3 record\(s\) reuse an earlier record's id"):
        df = import_fasta_pair(pos, neg, name="i", family="promoter")
    assert _imported(df) == [("r1", "AAAA", 1), ("r1#2", "CCCC", 1), ("r2", "GGGG", 1),
                             ("r1#3", "GGCC", 1), ("r1#2x", "ACGT", 1), ("r2#2", "TTTT", 0),
                             ("n1", "ACAC", 0)]


def test_html_escaped_and_doubled_header_markers(tmp_path: Path) -> None:
    p = tmp_path / "h.fa"
    p.write_text(">&gt;FP000123 some promoter\nACGT\n>>FP000456\nGGCC\n>a&amp;b\nTTAA\n")
    assert read_fasta(p) == [("FP000123", "ACGT"), ("FP000456", "GGCC"), ("a&b", "TTAA")]


# ---- written files get the usual umask permissions -----------------------------

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_atomic_writes_use_umask_permissions(tmp_path: Path, umask: int, mode: int) -> None:
    from fgpo.seqio import atomic_write_text
    old = os.umask(umask)
    try:
        t = atomic_write_text("hello\n", tmp_path / "a.txt")
        q = atomic_write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "a.parquet")
    finally:
        os.umask(old)
    for path in (t, q):
        assert path.stat().st_mode & 0o777 == mode, oct(path.stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["a.parquet", "a.txt"]
