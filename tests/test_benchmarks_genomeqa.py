"""GenomeQA benchmark: answers correct by construction and re-derivable from tool data."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.benchmarks.genomeqa import EVIDENCE, FAMILIES
from fgpo.question import from_frame, to_frame
from fgpo.seqio import normalise_sequence
from fgpo.tools.toolset import ToolsConfig, build_tools
# (the branches cycle with i modulo 2..12).
N_PER_FAMILY = 24


@pytest.fixture(scope="module")
def questions():
    return generate("genomeqa", BenchmarkConfig(n_questions=N_PER_FAMILY * len(FAMILIES), seed=5),
                    progress=False)


@pytest.fixture(scope="module")
def evidence(questions):
    tools = {t.name: t for t in build_tools(ToolsConfig())}
    return {q.id: {name: t.run(q.sequences).data for name, t in tools.items()} for q in questions}


def _tf_hits(motif_data: dict) -> set[str]:
    return {m["tf"].upper() for m in motif_data["motifs"]}


def rederive(q, ev) -> int:
    """The answer from the tools' data alone (the decision rule a perfect reasoner applies)."""
    if q.family == "promoter":
        tata = "TBP" in _tf_hits(ev["motif_scan"])
        return 0 if tata and ev["composition"]["cpg_oe"] >= 0.6 else 1
    if q.family == "splice":
        s = ev["splice_sites"]
        return 0 if s["donor"]["n_sites"] else 1 if s["acceptor"]["n_sites"] else 2
    if q.family == "taxonomy":
        return q.options.index(ev["organism_signature"]["nearest"])
    if q.family == "histone":
        return 0 if ev["composition"]["cpg_oe"] >= 0.6 else 1
    if q.family == "tf_binding":
        tf = re.search(r"transcription factor (\S+)\?", q.question).group(1)
        return 0 if tf.upper() in _tf_hits(ev["motif_scan"]) else 1
    if q.family == "tf_motif":
        present = [i for i, tf in enumerate(q.options) if tf.upper() in _tf_hits(ev["motif_scan"])]
        assert len(present) == 1, present
        return present[0]
    raise AssertionError(q.family)


def test_every_family_rederivable_from_tool_data(questions, evidence):
    assert {q.family for q in questions} == set(FAMILIES)
    wrong = [q.id for q in questions
             if rederive(q, {k: v["seq"] for k, v in evidence[q.id].items()}) != q.answer]
    assert wrong == []


def test_planted_sites_found_where_planted(questions, evidence):
    checked = 0
    for q in questions:
        if q.family == "tf_binding" and q.answer == 0:
            hits = {m["tf"].upper(): m["hits"][0] for m in evidence[q.id]["motif_scan"]["seq"]["motifs"]}
            h = hits[q.meta["tf"].upper()]
            assert (h["start"], h["strand"]) == (q.meta["start"], q.meta["strand"])
            checked += 1
        if q.family == "splice" and q.meta["kind"] != "none":
            kind = q.meta["kind"]
            assert evidence[q.id]["splice_sites"]["seq"][kind]["sites"][0]["boundary"] == q.meta["boundary"]
            checked += 1
    assert checked >= N_PER_FAMILY


def test_answers_balanced_and_well_formed(questions):
    df = to_frame(questions)
    for fam, g in df.groupby("family"):
        counts = g.answer_index.value_counts()
        n_opt = len(g.options.iloc[0])
        assert len(counts) == n_opt, fam
        assert counts.max() - counts.min() <= N_PER_FAMILY // n_opt, fam
    for q in questions:
        assert len(set(q.options)) == len(q.options)
        for s in q.sequences.values():
            assert normalise_sequence(s) == s and 50 <= len(s) <= 1000
    assert set(df.split) == {"train", "val", "test"}
    assert abs((df.split == "train").mean() - 0.6) < 0.05


def test_hard_negatives_present(questions):
    kinds = {(q.family, q.meta.get("kind")) for q in questions}
    for k in [("promoter", "tata_cpg_poor"), ("promoter", "cpg_rich_near_miss"),
              ("tf_binding", "near_miss"), ("tf_binding", "shuffled"), ("tf_binding", "decoy")]:
        assert k in kinds
    # a composition-only rule must fail on the promoter family: both tools are needed
    promo = [q for q in questions if q.family == "promoter"]
    comp_only = sum((q.meta["cpg_oe"] >= 0.6) == (q.answer == 0) for q in promo)
    assert comp_only < len(promo)


def test_seeded_determinism_and_roundtrip(questions):
    again = generate("genomeqa", BenchmarkConfig(n_questions=N_PER_FAMILY * len(FAMILIES), seed=5),
                     progress=False)
    pd.testing.assert_frame_equal(to_frame(questions), to_frame(again))
    other = generate("genomeqa", BenchmarkConfig(n_questions=12, seed=6), progress=False)
    assert [q.sequences for q in other] != [q.sequences for q in questions[:12]]
    back = from_frame(to_frame(questions))
    assert [(b.id, b.answer, b.sequences) for b in back] == [(q.id, q.answer, q.sequences)
                                                              for q in questions]


def test_evidence_map_names_registered_tools():
    from fgpo.tools.toolset import TOOL_REGISTRY
    assert set(EVIDENCE) == set(FAMILIES)
    assert all(t in TOOL_REGISTRY for tools in EVIDENCE.values() for t in tools)
