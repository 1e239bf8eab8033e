"""The embedded default reasoners: five deterministic rule-based profiles, prompt in, text out.

A profile gets exactly the chat messages an LLM backend gets (`prompt.render_messages`) and
returns an answer letter that goes through the same parser. It recognises the question type
from the wording, reads the tool blocks that fit its context budget, and applies an expert's
decision rule to the values those blocks show (`reading.parse_block`) plus textbook knowledge
(`knowledge`); without the evidence its rule needs it falls back on a weak prior read off a
short window of raw sequence, the way LLMs exploit GC content and short motifs. Profiles differ
the way LLM reasoners do: how much evidence they can take in (a character budget), how easily
blocks their rule does not read distract them (information overload), how much they trust the
first block, how often they ignore tools, and which computations they can do unaided. Every
stochastic choice is a seeded hash of (profile, the prompt text it read), so a table is
reproducible cell by cell and an answer is a function of the prompt alone.
"""

from __future__ import annotations

import hashlib
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from Bio.Seq import Seq
from Bio.SeqUtils import gc_fraction

from fgpo.errors import InputError
from fgpo.reasoners import knowledge as kb
from fgpo.reasoners.base import Reasoner, ReasonerSpec, Request
from fgpo.reasoners.prompt import render_many
from fgpo.reasoners.reading import Read, block_tag, letter, parse_block, read_prefix, split_prompt

Evidence = dict[str, dict[str, dict[str, Any]]]  # tool -> {sequence label -> values shown}
Seen = dict[str, str]  # sequence label -> the window of raw sequence the profile reads


@dataclass(frozen=True)
class Profile:
    doc: str
    context_chars: int
    """Evidence budget: tool blocks past it are cut off and go unread (context overflow)."""
    distraction: float
    """Per block read that its rule does not use, the chance of losing the thread and answering
    from priors."""
    first_block_anchor: float
    """Chance of anchoring on a first block its rule does not use (answering from priors)."""
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
        "A mid-size chat model that suffers information overload: each block its rule does not "
        "use is a 15% chance to lose the thread, so handing it every tool is clearly worse "
        "than the right one or two.",
        context_chars=3000, distraction=0.15, first_block_anchor=0.0, ignore_tools=0.02,
        window=40, skills=frozenset({"wallace_tm", "site_lookup"}), slip=0.04),
    "first_block_anchored": Profile(
        "Trusts whatever comes first: when the first block is one its rule does not use it "
        "anchors on it 70% of the time (a primacy bias), so tool order and subset choice matter.",
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

CPG_ISLAND_GC, CPG_ISLAND_OE = 0.50, 0.60  # Gardiner-Garden & Frommer (1987) island criteria
AT_RICH_MARGIN = 0.05
"""Bacterial promoters (-35/-10 region, UP elements) run ~10 GC points below the genome
(e.g. Kanhere & Bansal 2005); a sequence 5 points AT-richer than its genome is called AT-rich."""
GC_RICH_MARGIN = 0.05  # enhancers / open chromatin run GC-richer than the genome background
SIGMA70_GOOD, SIGMA70_POOR = 9, 7  # of 12 consensus matches of a -35/-10 pair (chance ~6)
STOPS = ("TAA", "TAG", "TGA")


# ---- small helpers ---------------------------------------------------------------------------
def _gc(s: str) -> float:
    """GC fraction over the unambiguous bases (Biopython's); 0.5 (no idea) when there are none."""
    return gc_fraction(s, ambiguous="remove") if any(b in "ACGTSW" for b in s) else 0.5


def _one(ev: Evidence, tool: str, label: str = "") -> dict[str, Any] | None:
    """The values a block shows for one sequence (single-sequence blocks: label '')."""
    parts = ev.get(tool) or {}
    return parts.get(label) if label in parts else (parts.get("") if len(parts) == 1 else None)


def _yn(r: Read, yes: bool | None) -> int | None:
    if yes is None or r.yes_no is None:
        return None
    return r.yes_no[0] if yes else r.yes_no[1]


def _lower_bounds(texts: list[str]) -> list[float]:
    """Lower bound of each band option: 'below 40%' -> -inf, '40-50%' -> 40, '60% or more' -> 60."""
    out = []
    for t in texts:
        nums = re.findall(r"\d+(?:\.\d+)?", t)
        low = t.lower()
        out.append(float("-inf") if not nums or re.search(r"below|shorter|less|under", low)
                   else float(nums[0]))
    return out


def _band(value: float, bounds: list[float]) -> int:
    """The last band whose lower bound is at or below `value`."""
    return max(i for i, b in enumerate(bounds) if b <= value) if bounds else 0


def _word(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    return m.group(1) if m else ""


def _tf_named(r: Read) -> str:
    return _word(r"transcription factor ([A-Za-z0-9][\w-]*)", r.question).upper()


def _tf_status(scan: dict[str, Any] | None, tf: str) -> bool | None:
    """Whether the block shows a hit for `tf`: True / False (listed as absent, or no hits at
    all) / None (the TF is not in the visible text)."""
    if scan is None:
        return None
    if tf in scan["hits"]:
        return True
    if scan["none_at_all"] or tf in scan["absent"]:
        return False
    return None


# ---- decision rules: answer from the values shown, or None when the needed evidence is missing
def _promoter(r: Read, ev: Evidence, seen: Seen) -> int | None:
    comp, scan = _one(ev, "composition"), _one(ev, "motif_scan")
    elems, islands = _one(ev, "promoter_elements"), _one(ev, "cpg_islands")
    tata = _tf_status(scan, "TBP")
    if re.search(r"CpG.island", r.question) and re.search(r"TATA", r.question):
        # The question defines its promoter: a CpG island carrying a TATA box. Partial
        # evidence: trust the half that is shown.
        rich = None if comp is None or comp["cpg_oe"] is None else comp["cpg_oe"] >= CPG_ISLAND_OE
        if tata is None and rich is None:
            return None
        return _yn(r, tata is not False and rich is not False)
    lineage, genome = kb.lineage(r.question), kb.genome_gc(r.question)
    if elems and elems["tata_mismatches"] == 0:
        tata = True
    if lineage == "bacteria":  # sigma-70 boxes and AT-richness relative to the genome
        score, evidence = 0.0, False
        if comp and comp["gc"] is not None:
            # graded: far from the cut-off it decides; near it, the boxes in sight tip it
            gap = (genome or 0.5) - AT_RICH_MARGIN - comp["gc"]
            score, evidence = max(-1.0, min(1.0, gap / AT_RICH_MARGIN)), True
        if elems and elems["sigma70_matches"] is not None:
            m, evidence = elems["sigma70_matches"], True
            score += 1.5 if m >= SIGMA70_GOOD else -1.5 if m <= SIGMA70_POOR else 0
        if not evidence:
            return None
        score += 0.5 if tata else 0.0
        # a -10 (TATAAT-like) box in sight supports it; none in sight says little (degenerate
        # boxes are common), like a missing TBP hit
        score += 0.5 if "TATA" in next(iter(seen.values()), "") else 0.0
        return None if score == 0 else _yn(r, score > 0)
    island = None
    if comp and comp["gc"] is not None and comp["cpg_oe"] is not None:
        island = comp["gc"] >= CPG_ISLAND_GC and comp["cpg_oe"] >= CPG_ISLAND_OE
    if islands and islands["covered"] is not None:
        island = bool(island) or islands["covered"] >= 0.5
    if lineage == "eukaryote":  # plants, fungi, invertebrates: AT-rich core, TATA box
        at_rich = None
        if comp and comp["gc"] is not None:
            at_rich = comp["gc"] < (genome or 0.40) - AT_RICH_MARGIN / 2
        if tata or at_rich:
            return _yn(r, True)
        return None if at_rich is None else _yn(r, False)
    # vertebrates (and unnamed organisms): most promoters sit in CpG islands, some carry TATA
    if tata or island:
        return _yn(r, True)
    return None if island is None else _yn(r, False)


def _enhancer(r: Read, ev: Evidence, seen: Seen) -> int | None:
    """Enhancers / open chromatin: TF-motif clusters in GC-richer-than-background sequence."""
    comp, scan = _one(ev, "composition"), _one(ev, "motif_scan")
    score = 0.0
    if comp and comp["gc"] is not None:
        score += 1 if comp["gc"] >= (kb.genome_gc(r.question) or 0.41) + GC_RICH_MARGIN else -1
        if r.kind == "open_chromatin" and comp["cpg_oe"] is not None:
            score += 1 if comp["cpg_oe"] >= CPG_ISLAND_OE else 0
    if scan is not None:
        n = len(scan["hits"])
        score += 1 if n >= 2 else -0.5 if n == 0 else 0
    return None if score == 0 else _yn(r, score > 0)


def _splice(r: Read, ev: Evidence, seen: Seen) -> int | None:
    s = _one(ev, "splice_sites")
    if not s or "donor" not in s:
        return None
    donor = s["donor"]["n"]
    acceptor = s["acceptor"]["n"] if "acceptor" in s else None  # None: cut off the block
    if not donor and acceptor is None:
        return None
    if r.yes_no:  # "does it contain a splice site?"
        return _yn(r, bool(donor or acceptor))
    return (r.option("donor") if donor else r.option("acceptor") if acceptor
            else r.option("no splice", "none"))


def _taxonomy(r: Read, ev: Evidence, seen: Seen) -> int | None:
    sig, comp = _one(ev, "organism_signature"), _one(ev, "composition")
    if sig and sig["ranked"]:
        for name in sig["ranked"]:
            if name in r.options:
                return r.options.index(name)
    if comp and comp["gc"] is not None:
        gcs = [kb.genome_gc_of_name(o) for o in r.options]
        known = [i for i, g in enumerate(gcs) if g is not None]
        return min(known, key=lambda i: abs(gcs[i] - comp["gc"])) if known else None
    return None


def _histone(r: Read, ev: Evidence, seen: Seen) -> int | None:
    comp = _one(ev, "composition")
    if not comp or comp["cpg_oe"] is None:
        return None
    active = comp["cpg_oe"] >= CPG_ISLAND_OE
    return r.option("h3k4me3", "active") if active else r.option("h3k9me3", "heterochromatin",
                                                                  "repress")


def _tf_binding(r: Read, ev: Evidence, seen: Seen) -> int | None:
    scan = _one(ev, "motif_scan")
    if scan is None:
        return None
    tf = _tf_named(r)
    if not tf:  # "a transcription-factor binding site": any scanned TF
        return _yn(r, bool(scan["hits"]))
    return _yn(r, _tf_status(scan, tf))


def _tf_motif(r: Read, ev: Evidence, seen: Seen) -> int | None:
    scan = _one(ev, "motif_scan")
    if scan is None:
        return None
    present = [i for i, tf in enumerate(r.options) if tf.upper() in scan["hits"]]
    return present[0] if present else None


def _value_band(r: Read, ev: Evidence, key: str) -> int | None:
    comp = _one(ev, "composition")
    if not comp or comp[key] is None:
        return None
    return _band(comp[key] * (100 if key == "gc" else 1), _lower_bounds(list(r.options)))


def _gc_band(r: Read, ev: Evidence, seen: Seen) -> int | None:
    return _value_band(r, ev, "gc")


def _tm_band(r: Read, ev: Evidence, seen: Seen) -> int | None:
    return _value_band(r, ev, "tm")


def _longest(ev: Evidence, label: str = "") -> dict[str, Any] | None | bool:
    """The longest ORF shown; False when the block says there is none; None without a block."""
    orfs = _one(ev, "orf_finder", label)
    if orfs is None or not orfs["complete"]:
        return None
    return orfs["orfs"][0] if orfs["orfs"] else False


def _orf_band(r: Read, ev: Evidence, seen: Seen) -> int | None:
    longest = _longest(ev)
    if longest is None:
        return None
    return _band(longest["length_nt"] if longest else 0, _lower_bounds(list(r.options)))


def _peptide(r: Read, ev: Evidence, seen: Seen) -> int | None:
    longest = _longest(ev)
    pep = longest["protein"][:8] if longest else ""
    return r.options.index(pep) if pep in r.options else None


def _restriction(r: Read, ev: Evidence, seen: Seen) -> int | None:
    sites = _one(ev, "restriction_sites")
    enzyme = _word(r"restriction enzyme (\w+)", r.question)
    if sites is None or not enzyme:
        return None
    return _yn(r, True if enzyme in sites["present"] else False if enzyme in sites["absent"]
               else None)


def _cut_in_orf(r: Read, ev: Evidence, seen: Seen) -> int | None:
    sites = _one(ev, "restriction_sites")
    enzyme = _word(r"restriction enzyme (\w+)", r.question)
    if sites is None or not enzyme:
        return None
    if enzyme in sites["absent"]:
        return _yn(r, False)
    hit = sites["present"].get(enzyme)
    if hit is None:
        return None
    longest, offset = _longest(ev), kb.cut_offset(enzyme)
    if not longest or offset is None:
        return _yn(r, True)  # partial evidence: a site exists, assume it is inside
    width = len(hit["site"])
    starts = [c - 1 - offset for c in hit["cuts"]]  # a cut lies `offset` bases into its site
    return _yn(r, any(longest["start"] <= s and s + width <= longest["end"] for s in starts))


def _revcomp(r: Read, ev: Evidence, seen: Seen) -> int | None:
    cmp_ = _one(ev, "seq_compare")
    return None if cmp_ is None else _yn(r, cmp_["revcomp"])


def _stop_gain(r: Read, ev: Evidence, seen: Seen) -> int | None:
    ref, alt = _longest(ev, "ref"), _one(ev, "orf_finder", "alt")
    if not ref or alt is None:
        return None
    kept = any((o["start"], o["strand"], o["length_nt"]) == (0, "+", ref["length_nt"])
               for o in alt["orfs"])
    return _yn(r, not kept)


def _splice_loss(r: Read, ev: Evidence, seen: Seen) -> int | None:
    b = _word(r"position (\d+)", r.question)
    ref, alt = _one(ev, "splice_sites", "ref"), _one(ev, "splice_sites", "alt")
    if not b or ref is None or alt is None or "donor" not in alt:
        return None
    best = alt["donor"]["best"]  # the block names only the best donor of each sequence
    return _yn(r, best != int(b))


def _tf_site(r: Read, ev: Evidence, seen: Seen) -> int | None:
    tf = _tf_named(r)
    ref = _tf_status(_one(ev, "motif_scan", "ref"), tf)
    alt = _tf_status(_one(ev, "motif_scan", "alt"), tf)
    if not tf or ref is None or alt is None:
        return None
    return r.option("create") if alt and not ref else (
        r.option("destroy") if ref and not alt else r.option("neither"))


def _gc_band_change(r: Read, ev: Evidence, seen: Seen) -> int | None:
    ref, alt = _one(ev, "composition", "ref"), _one(ev, "composition", "alt")
    if not ref or not alt or ref["gc"] is None or alt["gc"] is None:
        return None
    bounds = _lower_bounds(re.findall(r"[^(),]+%[^(),]*", r.question)) or [-1, 40, 50, 60]
    return _yn(r, _band(100 * ref["gc"], bounds) != _band(100 * alt["gc"], bounds))


@dataclass(frozen=True)
class Rule:
    reads: frozenset[str]
    """The tool blocks the rule reads; any other block is irrelevant to it (distraction)."""
    decide: Callable[[Read, Evidence, Seen], int | None]


def _rule(fn: Callable[[Read, Evidence, Seen], int | None], *reads: str) -> Rule:
    return Rule(frozenset(reads), fn)


RULES: dict[str, Rule] = {
    "promoter": _rule(_promoter, "composition", "motif_scan", "promoter_elements", "cpg_islands"),
    "enhancer": _rule(_enhancer, "composition", "motif_scan"),
    "open_chromatin": _rule(_enhancer, "composition", "motif_scan"),
    "splice": _rule(_splice, "splice_sites"),
    "taxonomy": _rule(_taxonomy, "organism_signature", "composition"),
    "histone": _rule(_histone, "composition"),
    "tf_binding": _rule(_tf_binding, "motif_scan"),
    "tf_motif": _rule(_tf_motif, "motif_scan"),
    "gc_band": _rule(_gc_band, "composition"),
    "tm_band": _rule(_tm_band, "composition"),
    "orf_band": _rule(_orf_band, "orf_finder"),
    "peptide": _rule(_peptide, "orf_finder"),
    "restriction": _rule(_restriction, "restriction_sites"),
    "cut_in_orf": _rule(_cut_in_orf, "restriction_sites", "orf_finder"),
    "revcomp": _rule(_revcomp, "seq_compare"),
    "stop_gain": _rule(_stop_gain, "orf_finder"),
    "splice_loss": _rule(_splice_loss, "splice_sites"),
    "tf_site": _rule(_tf_site, "motif_scan"),
    "gc_band_change": _rule(_gc_band_change, "composition"),
}


# ---- priors: what the reasoner answers from the raw sequence alone ---------------------------
def prior(r: Read, p: Profile, guess: int) -> int:
    """A weak answer from a `p.window`-bp look at the raw sequence; `guess` when clueless."""
    key = ("prior", p.window, p.skills)
    if key not in r.memo:  # the prefix is shared by the question's 2^K prompts
        r.memo[key] = _prior(r, p)
    ans = r.memo[key]
    return guess if ans is None else ans


def _prior(r: Read, p: Profile) -> int | None:
    w, skills, kind = p.window, p.skills, r.kind
    seqs = {k: v[:w] for k, v in r.sequences.items()}
    s = next(iter(seqs.values()), "")
    ans: int | None = None
    if kind == "promoter":
        ans = _yn(r, "TATA" in s)  # the textbook cue, looked for in the window only
    elif kind in ("enhancer", "open_chromatin"):
        ans = _yn(r, _gc(s) > 0.5)
    elif kind == "histone":  # GC-rich looks active (CpG depletion goes unseen)
        ans = r.option("h3k4me3", "active") if _gc(s) > 0.55 else r.option("h3k9me3",
                                                                            "heterochromatin")
    elif kind == "splice" and "motif_memory" in skills:
        donor, acceptor = re.search("GT[AG]AG", s), re.search("[CT]{8,}.{0,3}AG", s)
        ans = (_yn(r, bool(donor or acceptor)) if r.yes_no else
               r.option("donor") if donor else r.option("acceptor") if acceptor
               else r.option("no splice", "none"))
    elif kind == "taxonomy":
        gcs = [kb.genome_gc_of_name(o) for o in r.options]
        known = [i for i, g in enumerate(gcs) if g is not None]
        ans = min(known, key=lambda i: abs(gcs[i] - _gc(s))) if known else None
    elif kind == "gc_band":
        ans = _band(100 * _gc(s), _lower_bounds(list(r.options)))
    elif kind == "gc_band_change":
        bounds = _lower_bounds(re.findall(r"[^(),]+%[^(),]*", r.question)) or [-1, 40, 50, 60]
        ans = _yn(r, len({_band(100 * _gc(x), bounds) for x in seqs.values()}) > 1)
    elif kind == "tm_band" and "wallace_tm" in skills:
        at = sum(b in "AT" for b in s)
        ans = _band(2 * at + 4 * (len(s) - at), _lower_bounds(list(r.options)))  # Wallace rule
    elif kind == "restriction" and "site_lookup" in skills:
        site = kb.recognition_site(_word(r"restriction enzyme (\w+)", r.question)) or "#"
        ans = _yn(r, site in s)
    elif kind == "revcomp" and "revcomp" in skills and len(seqs) >= 2:
        a, b = list(seqs.values())[:2]
        ans = _yn(r, str(Seq(a).reverse_complement()) == b)
    elif kind == "peptide" and "translate" in skills and "ATG" in s:
        orf = s[s.index("ATG"):]
        pep = str(Seq(orf[: len(orf) // 3 * 3]).translate())[:3]
        hits = [i for i, o in enumerate(r.options) if o.startswith(pep)]
        ans = hits[0] if len(hits) == 1 else None
    elif kind == "tf_binding" and "motif_memory" in skills and _tf_named(r):
        ans = _yn(r, _has_core(_tf_named(r), s, r.question))
    elif kind == "tf_motif" and "motif_memory" in skills:
        hits = [i for i, tf in enumerate(r.options) if _has_core(tf, s, "")]
        ans = hits[0] if len(hits) == 1 else None
    elif kind == "stop_gain" and "codon_check" in skills and {"ref", "alt"} <= set(seqs):
        pos = [i for i, (x, y) in enumerate(zip(seqs["ref"], seqs["alt"])) if x != y]
        alt = seqs["alt"]  # only a variant inside the window is seen
        ans = _yn(r, alt[pos[0] // 3 * 3: pos[0] // 3 * 3 + 3] in STOPS) if pos else None
    elif kind == "splice_loss" and "motif_memory" in skills and {"ref", "alt"} <= set(seqs):
        b = int(_word(r"position (\d+)", r.question) or -1)
        ref, alt = r.sequences["ref"], r.sequences["alt"]
        pos = [i for i, (x, y) in enumerate(zip(ref, alt)) if x != y]
        ans = _yn(r, bool(pos) and -3 <= pos[0] - b <= 5)
    return ans


def _has_core(tf: str, s: str, question: str) -> bool:
    core = kb.consensus_core(tf.upper(), _word(r"JASPAR (MA\d+\.\d+)", question))
    return bool(core) and (core in s or str(Seq(core).reverse_complement()) in s)


# ---- the reasoner ----------------------------------------------------------------------------
@lru_cache(maxsize=1024)
def _prefix_seed(profile_name: str, system: str, prefix: str) -> bytes:
    return hashlib.sha512("\x1f".join((profile_name, system, prefix)).encode()).digest()


def _uniforms(seed: bytes, read: list[str]) -> list[float]:
    """Eight reproducible uniform numbers in [0, 1) from a hash of the text read."""
    h = hashlib.sha512(seed + "\x1f".join(read).encode()).digest()
    return [x / 2**64 for x in struct.unpack(">8Q", h)]


def respond(profile_name: str, messages: list[dict[str, str]]) -> str:
    """The answer text a profile gives to one rendered chat prompt (system + user message)."""
    p = PROFILES[profile_name]
    system = "".join(m["content"] for m in messages[:-1])
    prefix, blocks = split_prompt(messages[-1]["content"])
    r = read_prefix(prefix)
    read, used = [], 0
    for block in blocks:  # in prompt order; an overflowing block goes unread
        used += len(block) + 1
        if used > p.context_chars:
            break
        read.append(block)
    u_ignore, u_anchor, u_distract, u_slip, u_slip_to, u_guess, _, _ = _uniforms(
        _prefix_seed(profile_name, system, prefix), read)
    n = max(len(r.options), 1)
    guess = int(u_guess * n)
    rule = RULES.get(r.kind)
    reads = rule.reads if rule else frozenset()
    tags = [block_tag(b) for b in read]
    irrelevant = sum(t not in reads for t in tags)
    if (u_ignore < p.ignore_tools
            or (tags and tags[0] not in reads and u_anchor < p.first_block_anchor)
            or u_distract < 1 - (1 - p.distraction) ** irrelevant):
        return letter(prior(r, p, guess))
    evidence = {t: parse_block(b) for t, b in zip(tags, read) if t in reads}
    seen = {k: v[:p.window] for k, v in r.sequences.items()}
    ans = rule.decide(r, evidence, seen) if rule and evidence else None
    if ans is None:
        return letter(prior(r, p, guess))
    if u_slip < p.slip and n > 1:
        return letter((ans + 1 + int(u_slip_to * (n - 1))) % n)
    return letter(ans)


class RuleReasoner(Reasoner):
    """Rule-based profile; answers are option letters, as an option-constrained LLM gives.

    It sees a request only as its rendered messages (`render_messages`, via `render_many`), the same text an LLM
    backend sends: never the question's id, family, answer or the tools' structured data.
    """

    def __init__(self, spec: ReasonerSpec) -> None:
        if spec.profile not in PROFILES:
            raise InputError(f"unknown rule profile {spec.profile!r}; known: {sorted(PROFILES)}",
                             field="profile")
        self.spec = spec

    def answer(self, requests: list[Request]) -> list[str]:
        if self.spec.latency_s:
            time.sleep(self.spec.latency_s * len(requests))
        prompts = render_many([(r.question, r.evidence) for r in requests])
        return [respond(self.spec.profile, messages) for messages in prompts]
