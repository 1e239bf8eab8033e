"""Prompt rendering (golden text), answer parsing, and the rule profiles' behaviour."""

from __future__ import annotations

import pytest

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.errors import InputError
from fgpo.question import Question
from fgpo.reasoners import ReasonerSpec, Request, build_reasoner
from fgpo.reasoners.parse import parse_answer
from fgpo.reasoners.prompt import TEMPLATE_HASH, render_messages, render_prompt
from fgpo.reasoners.rule import PROFILES, respond
from fgpo.tools.toolset import ToolsConfig, build_tools
from fgpo.tools.base import ToolOutput

Q = Question(id="q1", benchmark="genomeqa", family="tf_binding",
             question="Does this 20 bp human sequence contain a binding site for the "
                      "transcription factor CTCF?",
             sequences={"seq": "ACGTACGTACGTACGTACGT"}, options=["yes", "no"], answer=0)
EVIDENCE = {"composition": ToolOutput("[composition] length 20 bp; GC 50.0%", {}),
            "motif_scan": ToolOutput("[motif_scan] hits: CTCF (MA0139.2) at 3(+)", {})}

GOLDEN = """\
Question: Does this 20 bp human sequence contain a binding site for the transcription factor CTCF?

Options:
A) yes
B) no

Sequence seq (20 bp):
ACGTACGTACGTACGTACGT

Tool outputs:
[composition] length 20 bp; GC 50.0%
[motif_scan] hits: CTCF (MA0139.2) at 3(+)

Answer with the letter of exactly one option (A, B)."""


# ---- prompt ----------------------------------------------------------------------------------
def test_prompt_golden_text():
    assert render_prompt(Q, EVIDENCE) == GOLDEN
    assert render_prompt(Q, {}).endswith("Tool outputs: none.\n\nAnswer with the letter of "
                                         "exactly one option (A, B).")
    msgs = render_messages(Q, EVIDENCE)
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[1]["content"] == GOLDEN
    assert len(TEMPLATE_HASH) == 16


def test_all_prompts_of_a_question_share_the_prefix():
    prompts = [render_prompt(Q, {}), render_prompt(Q, EVIDENCE),
               render_prompt(Q, {"motif_scan": EVIDENCE["motif_scan"]})]
    prefix = GOLDEN[: GOLDEN.index("Tool outputs")]
    assert all(p.startswith(prefix) for p in prompts)
    assert len(set(prompts)) == 3


# ---- parsing ---------------------------------------------------------------------------------
OPTS = ["yes", "no", "maybe", "unknown"]


@pytest.mark.parametrize("raw, expected", [
    ("The answer is (B).", 1), ("b", 1), ("B", 1), ("Option B: no", 1), ("B) no", 1),
    ("(C) maybe", 2), ("**B**", 1), ("Answer: D", 3), ("answer: c.", 2),
    ("<think>Could be A or C.</think>\nB", 1), ("no.", 1), ("Yes", 0),
    ("I cannot determine this from the sequence.", None), ("I'm sorry, I can't help.", None),
    ("", None), (None, None), ("E", None), ("The answer is E.", None),
    ("yes or no, hard to say", None),
])
def test_parse_messy_llm_outputs(raw, expected):
    assert parse_answer(raw, OPTS) == expected


# ---- rule profiles ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def genomeqa_cells():
    """60 genomeqa questions (10 per family) with every tool's cached output."""
    qs = generate("genomeqa", BenchmarkConfig(n_questions=60, seed=3), progress=False)
    tools = build_tools(ToolsConfig())
    return qs, {q.id: {t.name: t.run(q.sequences) for t in tools} for q in qs}


def decide(profile: str, req: Request) -> int | None:
    """The option index a profile answers for one cell (its text through the shared parser)."""
    return parse_answer(respond(profile, render_messages(req.question, req.evidence)),
                        req.question.options)


def _acc(profile, qs, outs, names):
    hits = [decide(profile, Request(q, 0, {n: outs[q.id][n] for n in names})) == q.answer
            for q in qs]
    return sum(hits) / len(hits)


def test_rule_answers_are_deterministic_letters(genomeqa_cells):
    qs, outs = genomeqa_cells
    r = build_reasoner(ReasonerSpec(backend="rule", profile="careful_expert"))
    reqs = [Request(q, 3, {n: outs[q.id][n] for n in ("composition", "motif_scan")}) for q in qs]
    first, second = r.answer(reqs), r.answer(reqs)
    assert first == second and set(first) <= {"A", "B", "C", "D"}


def test_right_evidence_beats_no_evidence(genomeqa_cells):
    qs, outs = genomeqa_cells
    tf = [q for q in qs if q.family in ("tf_binding", "tf_motif")]
    for profile in PROFILES:
        with_motifs = _acc(profile, tf, outs, ["motif_scan"])
        without = _acc(profile, tf, outs, [])
        assert with_motifs > without + 0.2, profile
    assert _acc("careful_expert", tf, outs, ["motif_scan"]) >= 0.9


def test_context_budget_truncates_late_blocks(genomeqa_cells):
    """short_context reads ~700 characters: a relevant block after a long one goes unread."""
    qs, outs = genomeqa_cells
    tf = [q for q in qs if q.family == "tf_binding"]
    filler = ToolOutput("[organism_signature] " + "x" * 690, {})
    late = [decide("short_context", Request(q, 1, {"organism_signature": filler,
                                                  "motif_scan": outs[q.id]["motif_scan"]}))
            for q in tf]
    alone = [decide("short_context", Request(q, 1, {})) for q in tf]
    assert late == alone  # truncated away: the answer is the prior's, as with no tools
    careful = [decide("careful_expert", Request(q, 1, {"organism_signature": filler,
                                                      "motif_scan": outs[q.id]["motif_scan"]}))
               for q in tf]
    assert sum(a == q.answer for a, q in zip(careful, tf)) >= len(tf) - 1


def test_irrelevant_blocks_distract_the_overloaded_profile(genomeqa_cells):
    qs, outs = genomeqa_cells
    tf = [q for q in qs if q.family in ("tf_binding", "tf_motif")]
    names = ToolsConfig().names
    drop = {p: _acc(p, tf, outs, ["motif_scan"]) - _acc(p, tf, outs, names)
            for p in ("overloaded_generalist", "careful_expert")}
    assert drop["overloaded_generalist"] > 0.15
    assert drop["careful_expert"] < drop["overloaded_generalist"] - 0.1


def test_unknown_profile_and_backend_are_refused():
    with pytest.raises(InputError, match="profile"):
        build_reasoner(ReasonerSpec(backend="rule", profile="genius"))
    with pytest.raises(InputError, match="backend"):
        ReasonerSpec(backend="gpt")
    with pytest.raises(InputError, match="base_url"):
        ReasonerSpec(backend="openai", model="m")


def test_render_many_equals_render_messages_per_request(genomeqa_cells):
    from fgpo.reasoners.prompt import render_many
    qs, outs = genomeqa_cells
    items = [(q, {n: outs[q.id][n] for n in names})
             for q in qs[:6] for names in ([], ["composition"], ToolsConfig().names)]
    assert render_many(items) == [render_messages(q, ev) for q, ev in items]
