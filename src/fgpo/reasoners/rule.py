"""The embedded default reasoners: five deterministic rule-based profiles.

Each profile reads the same evidence a prompt would carry (the selected tools' outputs, in tool
order, plus the question text and raw sequence) and applies the family's decision rule when the
evidence it needs is there; otherwise it falls back on a weaker prior read off a short window of
raw sequence, the way LLMs exploit GC content and short motifs. Profiles differ the way LLM
reasoners do: how much evidence they can take in (a character budget), how easily irrelevant
tool output distracts them (information overload), how much they trust the first block, how
often they ignore tools, and which computations they can do unaided. Every stochastic choice is
a seeded hash of (profile, question, subset), so a table is reproducible cell by cell.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from Bio import Restriction
from Bio.Seq import Seq

from fgpo.errors import InputError
from fgpo.question import LETTERS, Question
from fgpo.reasoners.base import Reasoner, ReasonerSpec, Request
from fgpo.tools.organism import ORGANISMS, organism_gc

Data = dict[str, dict[str, Any]]  # tool name -> {sequence label -> tool data}


@dataclass(frozen=True)
class Profile:
    doc: str
    context_chars: int
    """Evidence budget: tool blocks past it are cut off and go unread (context overflow)."""
    distraction: float
    """Per irrelevant block read, the chance of losing the thread and answering from priors."""
    first_block_anchor: float
    """Chance of anchoring on an irrelevant first block (answering from priors)."""
    ignore_tools: float
    """Chance of ignoring all tool output."""
    window: int
    """bp of raw sequence the prior reads."""
    skills: frozenset[str]
    """Computations done unaided: revcomp, wallace_tm, translate, site_lookup, codon_check,
    motif_memory."""
    slip: float
    """Chance of a wrong option even with the evidence in hand (careless error)."""


ALL_SKILLS = frozenset({"revcomp", "wallace_tm", "translate", "site_lookup", "codon_check",
                        "motif_memory"})
PROFILES: dict[str, Profile] = {
    "careful_expert": Profile(
        "A strong, long-context model: reads every block, is rarely distracted, computes small "
        "things itself. All tools together cost it little.",
        context_chars=6000, distraction=0.01, first_block_anchor=0.0, ignore_tools=0.0,
        window=60, skills=ALL_SKILLS, slip=0.02),
    "overloaded_generalist": Profile(
        "A mid-size chat model that suffers information overload: each irrelevant block is a "
        "15% chance to lose the thread, so handing it every tool is clearly worse than the "
        "right one or two.",
        context_chars=3000, distraction=0.15, first_block_anchor=0.0, ignore_tools=0.02,
        window=40, skills=frozenset({"wallace_tm", "site_lookup"}), slip=0.04),
    "first_block_anchored": Profile(
        "Trusts whatever comes first: when the first block is irrelevant it anchors on it 70% "
        "of the time (a primacy bias), so tool order and subset choice matter.",
        context_chars=3000, distraction=0.04, first_block_anchor=0.7, ignore_tools=0.0,
        window=30, skills=frozenset({"translate"}), slip=0.03),
    "short_context": Profile(
        "A small model with a short context: only the first ~700 characters of tool output fit, "
        "later blocks are truncated away.",
        context_chars=700, distraction=0.05, first_block_anchor=0.0, ignore_tools=0.0,
        window=24, skills=frozenset(), slip=0.05),
    "tool_skeptic": Profile(
        "A confident model that ignores tools 40% of the time and answers from its own "
        "(decent) sequence heuristics instead.",
        context_chars=3000, distraction=0.03, first_block_anchor=0.0, ignore_tools=0.4,
        window=50, skills=ALL_SKILLS - {"revcomp"}, slip=0.03),
}

GC_EDGES, TM_EDGES, ORF_EDGES = (0.40, 0.50, 0.60), (55.0, 62.0, 69.0), (150, 300, 450)
STOPS = ("TAA", "TAG", "TGA")


# ---- small sequence helpers (what a reasoner can do by eye) ---------------------------------
def _gc(s: str) -> float:
    acgt = [b for b in s if b in "ACGT"]
    return sum(b in "GC" for b in acgt) / len(acgt) if acgt else 0.5


def _band(value: float, edges: tuple[float, ...]) -> int:
    return sum(value >= e for e in edges)


def _word(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    return m.group(1) if m else ""


def _tf_names(data: dict[str, Any]) -> set[str]:
    return {m["tf"].upper() for m in data["motifs"]}


@lru_cache(maxsize=None)
def _consensus_core(tf: str) -> str:
    """The 6 central bases of a TF's JASPAR consensus (what a model may remember)."""
    from fgpo.benchmarks.genomeqa import TFS
    from fgpo.tools.motifs import load_motif
    mid = TFS.get(tf.upper())
    if mid is None:
        return ""
    cons = str(load_motif("JASPAR2024", mid).consensus)
    k = (len(cons) - 6) // 2
    return cons[k:k + 6]


def _has_core(tf: str, s: str) -> bool:
    core = _consensus_core(tf)
    return bool(core) and (core in s or str(Seq(core).reverse_complement()) in s)


def _nearest_organism_by_gc(gc: float, options: list[str]) -> int:
    return min(range(len(options)), key=lambda i: abs(organism_gc(options[i])[0] - gc)
               if options[i] in ORGANISMS else 9)


def _diff_positions(a: str, b: str) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


# ---- decision rules: answer from tool data, or None when the needed evidence is missing ----
def _promoter(q: Question, d: Data) -> int | None:
    tata = "TBP" in _tf_names(d["motif_scan"]["seq"]) if "motif_scan" in d else None
    rich = d["composition"]["seq"]["cpg_oe"] >= 0.6 if "composition" in d else None
    if tata is None and rich is None:
        return None
    return 0 if (tata is not False) and (rich is not False) else 1  # partial evidence: trust it


def _splice(q: Question, d: Data) -> int | None:
    if "splice_sites" not in d:
        return None
    s = d["splice_sites"]["seq"]
    return 0 if s["donor"]["n_sites"] else 1 if s["acceptor"]["n_sites"] else 2


def _taxonomy(q: Question, d: Data) -> int | None:
    if "organism_signature" in d:
        return q.options.index(d["organism_signature"]["seq"]["nearest"])
    if "composition" in d:
        return _nearest_organism_by_gc(d["composition"]["seq"]["gc_fraction"], q.options)
    return None


def _histone(q: Question, d: Data) -> int | None:
    return None if "composition" not in d else 0 if d["composition"]["seq"]["cpg_oe"] >= 0.6 else 1


def _tf_binding(q: Question, d: Data) -> int | None:
    if "motif_scan" not in d:
        return None
    tf = _word(r"transcription factor (\S+)\?", q.question).upper()
    return 0 if tf in _tf_names(d["motif_scan"]["seq"]) else 1


def _tf_motif(q: Question, d: Data) -> int | None:
    if "motif_scan" not in d:
        return None
    present = [i for i, tf in enumerate(q.options) if tf.upper() in _tf_names(d["motif_scan"]["seq"])]
    return present[0] if present else None


def _gc_band(q: Question, d: Data) -> int | None:
    return None if "composition" not in d else _band(d["composition"]["seq"]["gc_fraction"], GC_EDGES)


def _tm_band(q: Question, d: Data) -> int | None:
    return None if "composition" not in d else _band(d["composition"]["seq"]["tm_nn"], TM_EDGES)


def _orf_band(q: Question, d: Data) -> int | None:
    if "orf_finder" not in d:
        return None
    longest = d["orf_finder"]["seq"]["longest"]
    return _band(longest["length_nt"] if longest else 0, ORF_EDGES)


def _peptide(q: Question, d: Data) -> int | None:
    longest = d["orf_finder"]["seq"]["longest"] if "orf_finder" in d else None
    pep = longest["protein"][:8] if longest else ""
    return q.options.index(pep) if pep in q.options else None


def _enzyme_sites(q: Question, d: Data) -> tuple[str, dict | None]:
    enzyme = _word(r"restriction enzyme (\w+)", q.question)
    return enzyme, d["restriction_sites"]["seq"]["sites"].get(enzyme)


def _restriction(q: Question, d: Data) -> int | None:
    if "restriction_sites" not in d:
        return None
    return 0 if _enzyme_sites(q, d)[1] else 1


def _cut_in_orf(q: Question, d: Data) -> int | None:
    if "restriction_sites" not in d:
        return None
    _, sites = _enzyme_sites(q, d)
    if not sites:
        return 1
    if "orf_finder" not in d or not d["orf_finder"]["seq"]["longest"]:
        return 0  # partial evidence: a site exists, assume it is inside
    orf, width = d["orf_finder"]["seq"]["longest"], len(sites["site"])
    return 0 if any(orf["start"] <= s and s + width <= orf["end"] for s in sites["site_starts"]) else 1


def _revcomp(q: Question, d: Data) -> int | None:
    return None if "seq_compare" not in d else 0 if d["seq_compare"]["reverse_complement"] else 1


def _stop_gain(q: Question, d: Data) -> int | None:
    if "orf_finder" not in d or not d["orf_finder"]["ref"]["longest"]:
        return None
    full = d["orf_finder"]["ref"]["longest"]["length_nt"]
    kept = any((o["start"], o["strand"], o["length_nt"]) == (0, "+", full)
               for o in d["orf_finder"]["alt"]["orfs"])
    return 1 if kept else 0


def _splice_loss(q: Question, d: Data) -> int | None:
    if "splice_sites" not in d:
        return None
    b = int(_word(r"position (\d+)", q.question) or -1)
    return 1 if any(s["boundary"] == b for s in d["splice_sites"]["alt"]["donor"]["sites"]) else 0


def _tf_site(q: Question, d: Data) -> int | None:
    if "motif_scan" not in d:
        return None
    tf = _word(r"transcription factor (\S+)", q.question).upper()
    ref, alt = (tf in _tf_names(d["motif_scan"][lab]) for lab in ("ref", "alt"))
    return 0 if alt and not ref else 1 if ref and not alt else 2


def _gc_band_change(q: Question, d: Data) -> int | None:
    if "composition" not in d:
        return None
    ref, alt = (_band(d["composition"][lab]["gc_fraction"], GC_EDGES) for lab in ("ref", "alt"))
    return 0 if ref != alt else 1


RULES: dict[str, Callable[[Question, Data], int | None]] = {
    "promoter": _promoter, "splice": _splice, "taxonomy": _taxonomy, "histone": _histone,
    "tf_binding": _tf_binding, "tf_motif": _tf_motif, "gc_band": _gc_band, "tm_band": _tm_band,
    "orf_band": _orf_band, "peptide": _peptide, "restriction": _restriction,
    "cut_in_orf": _cut_in_orf, "revcomp": _revcomp, "stop_gain": _stop_gain,
    "splice_loss": _splice_loss, "tf_site": _tf_site, "gc_band_change": _gc_band_change}


# ---- priors: what the reasoner answers from the raw sequence alone ---------------------------
def prior(q: Question, p: Profile, guess: int) -> int:
    """A weak answer from a `p.window`-bp look at the raw sequence; `guess` when clueless."""
    w, skills, fam = p.window, p.skills, q.family
    seqs = {k: v[:w] for k, v in q.sequences.items()}
    s = next(iter(seqs.values()))
    if fam == "promoter":
        return 0 if "TATA" in s else 1  # the textbook cue, looked for in the window only
    if fam == "histone":
        return 0 if _gc(s) > 0.55 else 1  # GC-rich looks active (CpG depletion goes unseen)
    if fam == "splice" and "motif_memory" in skills:
        return 0 if re.search("GT[AG]AG", s) else 1 if re.search("[CT]{8,}.{0,3}AG", s) else 2
    if fam == "taxonomy":
        return _nearest_organism_by_gc(_gc(s), q.options)
    if fam in ("gc_band", "gc_band_change"):
        bands = [_band(_gc(x), GC_EDGES) for x in seqs.values()]
        return bands[0] if fam == "gc_band" else (0 if len(set(bands)) > 1 else 1)
    if fam == "tm_band" and "wallace_tm" in skills:
        at = sum(b in "AT" for b in s)
        return _band(2 * at + 4 * (len(s) - at), TM_EDGES)  # Wallace rule, 2(A+T) + 4(G+C)
    if fam == "restriction" and "site_lookup" in skills:
        enzyme = _word(r"restriction enzyme (\w+)", q.question)
        site = str(getattr(Restriction, enzyme).site) if hasattr(Restriction, enzyme) else "#"
        return 0 if site in s else 1
    if fam == "revcomp" and "revcomp" in skills:
        return 0 if str(Seq(seqs["seq1"]).reverse_complement()) == seqs["seq2"] else 1
    if fam == "peptide" and "translate" in skills and "ATG" in s:
        orf = s[s.index("ATG"):]
        pep = str(Seq(orf[: len(orf) // 3 * 3]).translate())[:3]
        hits = [i for i, o in enumerate(q.options) if o.startswith(pep)]
        return hits[0] if len(hits) == 1 else guess
    if fam in ("tf_binding", "tf_motif") and "motif_memory" in skills:
        if fam == "tf_binding":
            return 0 if _has_core(_word(r"transcription factor (\S+)\?", q.question), s) else 1
        hits = [i for i, tf in enumerate(q.options) if _has_core(tf, s)]
        return hits[0] if len(hits) == 1 else guess
    if fam == "stop_gain" and "codon_check" in skills:
        pos = _diff_positions(seqs["ref"], seqs["alt"])  # only a variant inside the window is seen
        alt = seqs["alt"]
        return (0 if alt[pos[0] // 3 * 3: pos[0] // 3 * 3 + 3] in STOPS else 1) if pos else guess
    if fam == "splice_loss" and "motif_memory" in skills:
        b = int(_word(r"position (\d+)", q.question) or -1)
        pos = _diff_positions(q.sequences["ref"], q.sequences["alt"])
        return 0 if pos and -3 <= pos[0] - b <= 5 else 1
    return guess


# ---- the reasoner ----------------------------------------------------------------------------
def _unit(*parts: object) -> float:
    """A reproducible uniform number in [0, 1) from a hash of `parts`."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def decide(profile_name: str, req: Request) -> int:
    """The option index a profile answers for one (question, tool subset) cell."""
    p = PROFILES[profile_name]
    q = req.question
    key = (profile_name, q.id, req.mask)
    guess = int(_unit(*key, "guess") * len(q.options))
    relevant = _relevant_tools(q)
    read, used = [], 0
    for name, out in req.evidence.items():  # in tool order; an overflowing block goes unread
        used += len(out.text) + 1
        if used > p.context_chars:
            break
        read.append(name)
    irrelevant = [n for n in read if n not in relevant]
    if _unit(*key, "ignore") < p.ignore_tools:
        return prior(q, p, guess)
    if read and read[0] not in relevant and _unit(*key, "anchor") < p.first_block_anchor:
        return prior(q, p, guess)
    if _unit(*key, "distract") < 1 - (1 - p.distraction) ** len(irrelevant):
        return prior(q, p, guess)
    rule = RULES.get(q.family)
    evidence = {n: req.evidence[n].data for n in read if n in relevant}
    ans = rule(q, evidence) if rule and evidence else None
    if ans is None:
        return prior(q, p, guess)
    if _unit(*key, "slip") < p.slip:
        return (ans + 1 + int(_unit(*key, "slip_to") * (len(q.options) - 1))) % len(q.options)
    return ans


def _relevant_tools(q: Question) -> set[str]:
    from fgpo.benchmarks import evidence
    from fgpo.benchmarks.config import GENERATORS
    if q.benchmark in GENERATORS:
        return set(evidence(q.benchmark).get(q.family, []))
    return set()  # imported collections: no planted decision rule, priors only


class RuleReasoner(Reasoner):
    """Rule-based profile; answers are option letters, as an option-constrained LLM gives."""

    def __init__(self, spec: ReasonerSpec) -> None:
        if spec.profile not in PROFILES:
            raise InputError(f"unknown rule profile {spec.profile!r}; known: {sorted(PROFILES)}",
                             field="profile")
        self.spec = spec

    def answer(self, requests: list[Request]) -> list[str]:
        if self.spec.latency_s:
            time.sleep(self.spec.latency_s * len(requests))
        return [LETTERS[decide(self.spec.profile, r)] for r in requests]
