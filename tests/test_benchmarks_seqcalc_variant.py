"""seqcalc and variant benchmarks: well-formed, seeded, and every answer re-derived from tool data.

The decision rules below read only the tools' `data` (plus the named target the question states:
an enzyme, a TF, a splice boundary), so a wrong answer key or a tool/benchmark mismatch fails.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from fgpo.benchmarks import generate, seqcalc, variant
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.question import Question
from fgpo.tools.toolset import ToolsConfig, build_tools, TOOL_REGISTRY

N_PER_FAMILY = 40
SEED = 5
BENCHES = {"seqcalc": seqcalc, "variant": variant}
LABELS = {"revcomp": ["seq1", "seq2"], **{f: ["ref", "alt"] for f in variant.FAMILIES}}
LENGTHS = {"gc_band": (40, 400), "orf_band": (300, 900), "peptide": (180, 660),
           "restriction": (60, 400), "cut_in_orf": (300, 850), "revcomp": (12, 40), "tm_band": (16, 30),
           "stop_gain": (96, 456), "splice_loss": (60, 150), "tf_site": (80, 400),
           "gc_band_change": (60, 200)}
N_DIFFERENCES = {"stop_gain": (1, 1), "splice_loss": (1, 1), "tf_site": (1, 3),
                 "gc_band_change": (2, 10)}


@pytest.fixture(scope="module")
def questions() -> dict[str, list[Question]]:
    return {name: generate(name, BenchmarkConfig(n_questions=N_PER_FAMILY * len(mod.FAMILIES),
                                                 seed=SEED), progress=False)
            for name, mod in BENCHES.items()}


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    names = ToolsConfig().names + (["seq_compare"] if "seq_compare" in TOOL_REGISTRY else [])
    return {t.name: t for t in build_tools(ToolsConfig(names=names))}


def by_family(questions: dict[str, list[Question]], family: str) -> list[Question]:
    bench = "variant" if family in variant.FAMILIES else "seqcalc"
    return [q for q in questions[bench] if q.family == family]


# ---- structure -----------------------------------------------------------------------------

def test_evidence_names_registered_tools() -> None:
    for mod in BENCHES.values():
        assert set(mod.EVIDENCE) == set(mod.FAMILIES)
    defaults = set(ToolsConfig().names) | {"seq_compare"}
    assert all(set(v) <= defaults for mod in BENCHES.values() for v in mod.EVIDENCE.values())


@pytest.mark.parametrize("family", [*seqcalc.FAMILIES, *variant.FAMILIES])
def test_well_formed_and_balanced(questions: dict[str, list[Question]], family: str) -> None:
    qs = by_family(questions, family)
    assert len(qs) == N_PER_FAMILY
    n_options = len(qs[0].options)
    counts = Counter(q.answer for q in qs)
    assert set(counts) == set(range(n_options))
    assert max(counts.values()) - min(counts.values()) <= 1  # balanced by construction
    lo, hi = LENGTHS[family]
    for q in qs:
        assert list(q.sequences) == LABELS.get(family, ["seq"])
        assert all(re.fullmatch("[ACGT]+", s) for s in q.sequences.values())
        assert lo <= len(next(iter(q.sequences.values()))) <= hi, q.id
        assert len(set(q.options)) == len(q.options) == n_options and 0 <= q.answer < n_options
        assert q.question.endswith("?") and json.loads(json.dumps(q.meta)) == q.meta
        if family in N_DIFFERENCES:
            ref, alt = q.sequences["ref"], q.sequences["alt"]
            diffs = [p for p, (a, b) in enumerate(zip(ref, alt)) if a != b]
            assert len(ref) == len(alt)
            lo_d, hi_d = N_DIFFERENCES[family]
            assert lo_d <= len(diffs) <= hi_d, q.id
            if family == "gc_band_change":
                assert diffs == list(range(diffs[0], diffs[0] + len(diffs)))  # one block


@pytest.mark.parametrize("bench", list(BENCHES))
def test_seeded_determinism(questions: dict[str, list[Question]], bench: str) -> None:
    n = N_PER_FAMILY * len(BENCHES[bench].FAMILIES)
    assert generate(bench, BenchmarkConfig(n_questions=n, seed=SEED),
                    progress=False) == questions[bench]
    other = generate(bench, BenchmarkConfig(n_questions=n, seed=SEED + 1), progress=False)
    assert [q.sequences for q in other] != [q.sequences for q in questions[bench]]
    assert [q.answer for q in other] == [q.answer for q in questions[bench]]  # balance from i


# ---- answers re-derived from the default tools' data ---------------------------------------

def band(value: float, edges: tuple[float, ...]) -> int:
    return sum(value >= e for e in edges)


def run(tools: dict[str, Any], name: str, q: Question) -> dict[str, Any]:
    return tools[name].run(q.sequences).data


def rule_gc_band(tools: dict[str, Any], q: Question) -> int:
    return band(run(tools, "composition", q)["seq"]["gc_fraction"], (0.40, 0.50, 0.60))


def rule_tm_band(tools: dict[str, Any], q: Question) -> int:
    return band(run(tools, "composition", q)["seq"]["tm_nn"], (55.0, 62.0, 69.0))


def rule_orf_band(tools: dict[str, Any], q: Question) -> int:
    longest = run(tools, "orf_finder", q)["seq"]["longest"]
    return band(longest["length_nt"] if longest else 0, (150, 300, 450))


def rule_peptide(tools: dict[str, Any], q: Question) -> int:
    return q.options.index(run(tools, "orf_finder", q)["seq"]["longest"]["protein"][:8])


def rule_restriction(tools: dict[str, Any], q: Question) -> int:
    enzyme = q.meta["enzyme"]
    assert enzyme in q.question
    return 0 if enzyme in run(tools, "restriction_sites", q)["seq"]["sites"] else 1


def rule_cut_in_orf(tools: dict[str, Any], q: Question) -> int:
    enzyme = q.meta["enzyme"]
    assert enzyme in q.question
    orf = run(tools, "orf_finder", q)["seq"]["longest"]
    sites = run(tools, "restriction_sites", q)["seq"]["sites"]
    width = len(sites[enzyme]["site"]) if enzyme in sites else 0
    starts = sites.get(enzyme, {}).get("site_starts", [])
    return 0 if any(orf["start"] <= s and s + width <= orf["end"] for s in starts) else 1


def rule_revcomp(tools: dict[str, Any], q: Question) -> int:
    if "seq_compare" not in tools:
        pytest.skip("extended tool seq_compare (fgpo.tools.compare) is not available")
    return 0 if run(tools, "seq_compare", q)["reverse_complement"] else 1


def rule_stop_gain(tools: dict[str, Any], q: Question) -> int:
    d = run(tools, "orf_finder", q)
    cds = d["ref"]["longest"]
    assert (cds["start"], cds["strand"]) == (0, "+")
    full = any((o["start"], o["strand"], o["length_nt"]) == (0, "+", cds["length_nt"])
               for o in d["alt"]["orfs"])
    return 1 if full else 0


def rule_splice_loss(tools: dict[str, Any], q: Question) -> int:
    boundary = q.meta["boundary"]
    assert f"position {boundary}" in q.question
    d = run(tools, "splice_sites", q)
    has = {lab: any(s["boundary"] == boundary for s in d[lab]["donor"]["sites"])
           for lab in ("ref", "alt")}
    assert has["ref"] and d["ref"]["donor"]["sites"][0]["boundary"] == boundary
    return 0 if not has["alt"] else 1


def rule_tf_site(tools: dict[str, Any], q: Question) -> int:
    tf, matrix_id = q.meta["tf"], q.meta["matrix_id"]
    assert tf in q.question and matrix_id in q.question
    d = run(tools, "motif_scan", q)
    ref, alt = (any(m["matrix_id"] == matrix_id for m in d[lab]["motifs"])
                for lab in ("ref", "alt"))
    return 0 if alt and not ref else 1 if ref and not alt else 2


def rule_gc_band_change(tools: dict[str, Any], q: Question) -> int:
    d = run(tools, "composition", q)
    ref, alt = (band(d[lab]["gc_fraction"], (0.40, 0.50, 0.60)) for lab in ("ref", "alt"))
    return 0 if ref != alt else 1


RULES: dict[str, Callable[[dict[str, Any], Question], int]] = {
    "gc_band": rule_gc_band, "orf_band": rule_orf_band, "peptide": rule_peptide,
    "restriction": rule_restriction, "cut_in_orf": rule_cut_in_orf, "revcomp": rule_revcomp, "tm_band": rule_tm_band,
    "stop_gain": rule_stop_gain, "splice_loss": rule_splice_loss, "tf_site": rule_tf_site,
    "gc_band_change": rule_gc_band_change}


def test_every_family_has_a_rule() -> None:
    assert set(RULES) == set(seqcalc.FAMILIES) | set(variant.FAMILIES)


@pytest.mark.parametrize("family", list(RULES))
def test_answers_rederived_from_tools(questions: dict[str, list[Question]],
                                      tools: dict[str, Any], family: str) -> None:
    wrong = [(q.id, q.answer, got) for q in by_family(questions, family)
             if (got := RULES[family](tools, q)) != q.answer]
    assert not wrong, f"{family}: stored vs re-derived answers differ: {wrong[:5]}"
