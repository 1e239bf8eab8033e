"""The `prepare:` section of params.yaml: every benchmark declared once, generated or imported.

Expected values are written by hand (names, fields, line numbers, counts) or read independently
from the files (a plain FASTA parse, pandas for the CSV); the imported questions are compared
with what the existing `fgpo import` path (`importer.import_fasta_pair` / `import_csv`) gives.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fgpo.benchmarks import build_sample
from fgpo.benchmarks import importer
from fgpo.benchmarks.config import BenchmarkConfig, ImportConfig, load_prepare
from fgpo.errors import InputError
from fgpo.question import from_frame, to_frame
from fgpo.seqio import read_parquet_metadata
from fgpo.stages import prepare

REPO = Path(__file__).resolve().parents[1]
GENERATED = {"kind": "generated", "source": "src/fgpo/benchmarks/genomeqa.py"}


def write(tmp_path: Path, text: str, name: str = "my_params.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def declare(tmp_path: Path, prepare_section: dict) -> Path:
    p = tmp_path / "my_params.yaml"
    p.write_text(yaml.safe_dump({"prepare": prepare_section}, sort_keys=False))
    return p


def plain_fasta(path: Path) -> list[tuple[str, str]]:
    """Independent FASTA reading: '>' starts a record, the other lines are its sequence."""
    out: list[tuple[str, list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith(">"):
            out.append((line[1:].split()[0], []))
        elif line.strip():
            out[-1][1].append(line.strip().upper())
    return [(rid, "".join(parts)) for rid, parts in out]


def write_fasta(path: Path, records: list[tuple[str, str]]) -> None:
    path.write_text("".join(f">{rid}\n{seq}\n" for rid, seq in records))


# ---- 1. the repository's declarations -----------------------------------------------------------

def test_repo_declares_the_three_generated_benchmarks_in_order():
    prep = load_prepare(REPO / "params.yaml")
    assert prep.names == ["genomeqa", "seqcalc", "variant"]
    for name in prep.names:
        cfg = prep[name]
        assert isinstance(cfg, BenchmarkConfig) and cfg.kind == "generated", name
        assert cfg.source == f"src/fgpo/benchmarks/{name}.py"
        assert (REPO / cfg.source).is_file()


# ---- 2. a key declared twice ----------------------------------------------------------------------

TWICE_BENCHMARK = """\
    prepare:
      genomeqa:
        kind: generated
        source: src/fgpo/benchmarks/genomeqa.py
      seqcalc:
        kind: generated
        source: src/fgpo/benchmarks/seqcalc.py
      genomeqa:
        kind: generated
        source: src/fgpo/benchmarks/genomeqa.py
    """
TWICE_FIELD = """\
    prepare:
      genomeqa:
        kind: generated
        source: src/fgpo/benchmarks/genomeqa.py
        seed: 1
        n_questions: 10
        seed: 2
    """


@pytest.mark.parametrize("text, field, lines", [
    (TWICE_BENCHMARK, "prepare.genomeqa", "lines 2 and 8"),
    (TWICE_FIELD, "prepare.genomeqa.seed", "lines 5 and 7")])
def test_a_key_declared_twice_names_both_lines(tmp_path, text, field, lines):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        load_prepare(p)
    assert exc.value.file == str(p) and exc.value.field == field
    assert lines in exc.value.message, exc.value.message
    assert str(p) in str(exc.value)


# ---- 3. bad declarations name their field -------------------------------------------------------

IMPORTED = {"kind": "imported", "source": "data/ecoli", "positives": "p.fa",
            "negatives": "n.fa", "family": "promoter"}

BAD = [
    # (name, entry, field, a word the message must contain)
    ("genomeqa", dict(IMPORTED), "prepare.genomeqa", "generated"),
    ("mybench", {"kind": "generated", "source": "src/fgpo/benchmarks/mybench.py"},
     "prepare.mybench", "mybench"),
    ("ecoli", {k: v for k, v in IMPORTED.items() if k != "kind"}, "prepare.ecoli", "imported"),
    ("ecoli", {**IMPORTED, "kind": "importd"}, "prepare.ecoli.kind", "importd"),
    ("seqcalc", {"kind": "generated", "source": "src/fgpo/benchmarks/genomeqa.py"},
     "prepare.seqcalc.source", "src/fgpo/benchmarks/seqcalc.py"),
    ("seqcalc", {"kind": "generated"}, "prepare.seqcalc.source", "src/fgpo/benchmarks/seqcalc.py"),
    ("seqcalc", {**GENERATED, "source": "src/fgpo/benchmarks/seqcalc.py", "n_questions": 0},
     "prepare.seqcalc.n_questions", "n_questions"),
    ("ecoli", {**IMPORTED, "n_questions": 100}, "prepare.ecoli", "n_questions"),
    ("ecoli", {**IMPORTED, "negatives": ""}, "prepare.ecoli.negatives", "negatives"),
    ("ecoli", {**IMPORTED, "positives": ""}, "prepare.ecoli.positives", "positives"),
    ("ecoli", {**IMPORTED, "max_per_class": 0}, "prepare.ecoli.max_per_class", "max_per_class"),
    ("ecoli", {**IMPORTED, "max_per_class": 2.5}, "prepare.ecoli.max_per_class", "integer"),
    ("ecoli", {**IMPORTED, "source": ""}, "prepare.ecoli.source", "source"),
    ("ecoli", {**IMPORTED, "family": ""}, "prepare.ecoli.family", "family"),
    ("ecoli", {**IMPORTED, "split": [0.5, 0.5]}, "prepare.ecoli.split", "split"),
    ("bad name", dict(IMPORTED), "prepare.bad name", "letters"),
    ("ecoli", {**IMPORTED, "family": "promotor"}, "prepare.ecoli.family", "promotor"),
    ("ecoli", {**IMPORTED, "question": "Is {seq} a promoter?"}, "prepare.ecoli.question",
     "{seq}"),
    ("ecoli", {**IMPORTED, "seed": "abc"}, "prepare.ecoli.seed", "integer"),
    ("genomeqa", {**GENERATED, "source": "src/fgpo/benchmarks/genomeqa.py", "seed": "x"},
     "prepare.genomeqa.seed", "integer"),
]


@pytest.mark.parametrize("name, entry, field, word", BAD,
                         ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_declaration_names_its_field_and_the_params_file(tmp_path, name, entry, field, word):
    p = declare(tmp_path, {"variant": {"kind": "generated",
                                       "source": "src/fgpo/benchmarks/variant.py"},
                           name: entry})
    with pytest.raises(InputError) as exc:
        load_prepare(p)
    assert exc.value.file == str(p), str(exc.value)
    assert exc.value.field == field, str(exc.value)
    assert f"'{field}'" in str(exc.value) and word in exc.value.message, str(exc.value)


def test_a_good_imported_declaration_parses(tmp_path):
    """The control of the cases above: the same entries, fixed, are accepted."""
    p = declare(tmp_path, {"ecoli": {**IMPORTED, "max_per_class": 3},
                           "seqcalc": {"kind": "generated",
                                       "source": "src/fgpo/benchmarks/seqcalc.py"}})
    prep = load_prepare(p)
    assert prep.names == ["ecoli", "seqcalc"]
    assert isinstance(prep["ecoli"], ImportConfig) and prep["ecoli"].max_per_class == 3
    assert prep["ecoli"].files() == [Path("data/ecoli/p.fa"), Path("data/ecoli/n.fa")]


# ---- 4-5. prepare.main on imported collections ----------------------------------------------------

def _questions(path: Path):
    return from_frame(pd.read_parquet(path))


def _same_questions(df: pd.DataFrame, expected: pd.DataFrame) -> None:
    for col in ("id", "answer", "answer_index", "split", "question", "family", "benchmark"):
        assert df[col].tolist() == expected[col].tolist(), col
    assert [list(s) for s in df.sequences] == [list(s) for s in expected.sequences]
    pd.testing.assert_frame_equal(df, expected)


def test_prepare_imports_a_declared_fasta_pair(tmp_path, real_data, monkeypatch):
    folder = tmp_path / "ecoli_data"
    folder.mkdir()
    pos = plain_fasta(real_data / "Ecoli_prom.fa")[:200]
    neg = plain_fasta(real_data / "Ecoli_non_prom.fa")[:200]
    write_fasta(folder / "prom.fa", pos)
    write_fasta(folder / "non_prom.fa", neg)
    monkeypatch.chdir(tmp_path)  # paths relative to where `fgpo prepare` runs (the repo root)
    params = declare(tmp_path, {
        "genomeqa": {**GENERATED, "n_questions": 3},
        "ecoli": {"kind": "imported", "source": "ecoli_data", "positives": "prom.fa",
                  "negatives": "non_prom.fa", "family": "promoter", "organism": "E. coli",
                  "seed": 5, "max_per_class": 20}})
    out = prepare.main("ecoli", params, tmp_path / "out")
    assert out == tmp_path / "out" / "ecoli.parquet" and out.is_file()
    qs = _questions(out)
    assert len(qs) == 40
    assert Counter(q.answer for q in qs) == {0: 20, 1: 20}  # 0 = "yes" (a promoter)
    assert {q.family for q in qs} == {"promoter"} and {q.benchmark for q in qs} == {"ecoli"}
    assert all(q.question == "Is this 81 bp E. coli sequence a promoter?" for q in qs)
    pos_seqs, neg_seqs = {s for _, s in pos}, {s for _, s in neg}
    for q in qs:
        assert q.sequences["seq"] in (pos_seqs if q.answer == 0 else neg_seqs), q.id
    assert Counter(q.split for q in qs) == {"train": 24, "val": 8, "test": 8}  # 0.6/0.2/0.2 of 40
    meta = read_parquet_metadata(out)
    assert meta["imported"] is True and meta["source"] == "ecoli_data"
    assert meta["benchmark"] == "ecoli" and meta["n_questions"] == 40
    expected = importer.import_fasta_pair(folder / "prom.fa", folder / "non_prom.fa",
                                          name="ecoli", family="promoter", organism="E. coli",
                                          seed=5, max_per_class=20)
    _same_questions(pd.read_parquet(out), expected)


def test_prepare_imports_the_real_folder_directly(tmp_path, real_data):
    params = declare(tmp_path, {"ecoli": {
        "kind": "imported", "source": str(real_data), "positives": "Ecoli_prom.fa",
        "negatives": "Ecoli_non_prom.fa", "family": "promoter", "organism": "E. coli",
        "max_per_class": 20}})
    out = prepare.main("ecoli", params, tmp_path / "out")
    qs = _questions(out)
    assert len(qs) == 40 and Counter(q.answer for q in qs) == {0: 20, 1: 20}
    expected = importer.import_fasta_pair(real_data / "Ecoli_prom.fa", real_data / "Ecoli_non_prom.fa",
                                          name="ecoli", family="promoter", organism="E. coli",
                                          seed=0, max_per_class=20)
    _same_questions(pd.read_parquet(out), expected)


def test_prepare_imports_a_declared_csv(tmp_path, real_data):
    csv = real_data / "human_nontata_promoters_test.csv"
    params = declare(tmp_path, {"human_nontata": {
        "kind": "imported", "source": str(csv), "family": "promoter", "organism": "human",
        "seed": 2, "max_per_class": 10}})
    out = prepare.main("human_nontata", params, tmp_path / "out")
    qs = _questions(out)
    assert len(qs) == 20 and Counter(q.answer for q in qs) == {0: 10, 1: 10}
    assert {q.family for q in qs} == {"promoter"}
    assert all(q.question == "Is this 251 bp human sequence a promoter?" for q in qs)
    table = pd.read_csv(csv)
    label = dict(zip(table.seq.str.upper(), table.label))
    for q in qs:  # a yes question holds a label-1 row's sequence, a no question a label-0 one
        assert label[q.sequences["seq"]] == (1 if q.answer == 0 else 0), q.id
    meta = read_parquet_metadata(out)
    assert meta["imported"] is True and meta["source"] == str(csv)
    assert meta["family"] == "promoter" and meta["n_questions"] == 20
    expected = importer.import_csv(csv, name="human_nontata", family="promoter",
                                   organism="human", seed=2, max_per_class=10)
    _same_questions(pd.read_parquet(out), expected)


# ---- 6. a missing source -------------------------------------------------------------------------

def _pair(tmp_path: Path) -> Path:
    folder = tmp_path / "pair"
    folder.mkdir()
    write_fasta(folder / "p.fa", [("p1", "ACGTACGTAA"), ("p2", "TTGACAGGCA")])
    write_fasta(folder / "n.fa", [("n1", "GGGCCCGGGA"), ("n2", "CATCATCATC")])
    return folder


@pytest.mark.parametrize("entry, field", [
    ({"positives": "missing.fa", "negatives": "n.fa"}, "positives"),
    ({"positives": "p.fa", "negatives": "missing.fa"}, "negatives"),
    ({"source": "no_such_folder", "positives": "p.fa", "negatives": "n.fa"}, "source"),
    ({"source": "no_such.csv"}, "source"),
])
def test_missing_source_names_the_params_field_and_writes_nothing(tmp_path, entry, field):
    folder = _pair(tmp_path)
    decl = {"kind": "imported", "source": str(folder), "family": "promoter"}
    decl.update({k: str(tmp_path / v) if k == "source" else v for k, v in entry.items()})
    params = declare(tmp_path, {"mine": decl})
    with pytest.raises(InputError) as exc:
        prepare.main("mine", params, tmp_path / "out")
    assert exc.value.file == str(params) and exc.value.field == f"prepare.mine.{field}"
    assert f"'prepare.mine.{field}'" in str(exc.value), str(exc.value)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_the_pair_without_a_missing_file_imports(tmp_path):
    """The control of the case above: the same declaration with both files present."""
    folder = _pair(tmp_path)
    params = declare(tmp_path, {"mine": {"kind": "imported", "source": str(folder),
                                         "positives": "p.fa", "negatives": "n.fa",
                                         "family": "promoter"}})
    qs = _questions(prepare.main("mine", params, tmp_path / "out"))
    assert sorted(q.sequences["seq"] for q in qs if q.answer == 0) == ["ACGTACGTAA", "TTGACAGGCA"]
    assert sorted(q.sequences["seq"] for q in qs if q.answer == 1) == ["CATCATCATC", "GGGCCCGGGA"]


# ---- 7. build_sample --------------------------------------------------------------------------------

def test_build_sample_of_a_generated_declaration():
    cfg = load_prepare(REPO / "params.yaml")["genomeqa"]
    qs = build_sample("genomeqa", cfg, 12)
    assert len(qs) == 12 and {q.benchmark for q in qs} == {"genomeqa"}
    assert cfg.n_questions == 1200  # the declaration itself is left as it was


def test_build_sample_of_an_imported_declaration(tmp_path):
    folder = tmp_path / "pair"
    folder.mkdir()
    bases = "ACGT"
    seqs = ["".join(bases[(i >> (2 * k)) % 4] for k in range(8)) + "AC" for i in range(40)]
    write_fasta(folder / "p.fa", [(f"p{i}", s) for i, s in enumerate(seqs[:20])])
    write_fasta(folder / "n.fa", [(f"n{i}", s) for i, s in enumerate(seqs[20:])])
    params = declare(tmp_path, {"mine": {"kind": "imported", "source": str(folder),
                                         "positives": "p.fa", "negatives": "n.fa",
                                         "family": "promoter"}})
    cfg = load_prepare(params)["mine"]
    qs = build_sample("mine", cfg, 10)
    assert len(qs) == 10 and Counter(q.answer for q in qs) == {0: 5, 1: 5}
    assert len(build_sample("mine", cfg, 11)) == 10  # about n: a balanced sample
    assert cfg.max_per_class is None  # the declaration itself is left as it was
    assert len(to_frame(importer.import_declared("mine", cfg))) == 40  # all of it


def test_build_sample_keeps_a_declared_size_limit(tmp_path):
    folder = tmp_path / "pair"
    folder.mkdir()
    seqs = ["".join("ACGT"[(i >> (2 * k)) % 4] for k in range(8)) + "AC" for i in range(40)]
    write_fasta(folder / "p.fa", [(f"p{i}", s) for i, s in enumerate(seqs[:20])])
    write_fasta(folder / "n.fa", [(f"n{i}", s) for i, s in enumerate(seqs[20:])])
    params = declare(tmp_path, {"mine": {"kind": "imported", "source": str(folder),
                                         "positives": "p.fa", "negatives": "n.fa",
                                         "family": "promoter", "max_per_class": 3}})
    # the bench must not time records the declared benchmark never contains
    assert len(build_sample("mine", load_prepare(params)["mine"], 100)) == 6


def test_prepare_of_an_undeclared_name_names_the_params_file(tmp_path):
    from fgpo.stages import prepare
    params = declare(tmp_path, {"genomeqa": {"kind": "generated",
                                             "source": "src/fgpo/benchmarks/genomeqa.py"}})
    with pytest.raises(InputError) as exc:
        prepare.main("nope", params, tmp_path / "out")
    assert exc.value.file == str(params) and exc.value.field == "prepare"
    assert "genomeqa" in exc.value.message and not (tmp_path / "out").exists()
