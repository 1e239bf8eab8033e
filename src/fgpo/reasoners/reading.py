"""Reading a rendered prompt the way a model does: the question, its options, the sequences and
each tool's text block, recovered from the text alone.

The rule reasoners get nothing else: no `Question`, no id, family or answer, no tool `data`.
Every value a rule uses is parsed here from text a prompt shows, so a block truncated at the
tool's character bound (`…`) yields only what survived the cut. Parses are cached by text: the
2^K prompts of a question share one prefix and each tool block, so each is parsed once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from fgpo.question import LETTERS
from fgpo.reasoners.prompt import EVIDENCE

_EVIDENCE_HEAD = EVIDENCE.split("{")[0]   # "Tool outputs:\n"
_SEQUENCE = re.compile(r"^Sequence (\S+) \((\d+) bp\):\n([^\n]*)", re.M)
_OPTION = re.compile(r"^([A-Z])\) (.*)$", re.M)

# ---- question types, recognised from the wording (first match wins) -------------------------
# Variant questions come first (they also mention GC, splice sites or binding sites), then the
# calculations, then the biology; a generated template, the importer's and their paraphrases
# all land on the same type.
KINDS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(p, re.I)) for k, p in [
    ("stop_gain", r"premature stop|introduces? a stop codon|nonsense"),
    ("splice_loss", r"(destroy|abolish|disrupt)\w* the splice (donor|acceptor)"),
    ("tf_site", r"(create|destroy|gain|loss|lose)\w* (or \w+ )?an? .*binding site"),
    ("gc_band_change", r"variant .*GC content|GC content .*(different|another) band"),
    ("revcomp", r"reverse.complement"),
    ("cut_in_orf", r"restriction enzyme .*(open reading frame|\bORF\b)"),
    ("restriction", r"restriction (enzyme|site)|recognition site for"),
    ("peptide", r"\bpeptide\b|amino acids does"),
    ("orf_band", r"open reading frame|\bORF\b"),
    ("tm_band", r"melting temperature|\bTm\b"),
    ("gc_band", r"\bGC content|G\+C content|GC fraction"),
    ("histone", r"histone"),
    ("taxonomy", r"which (organism|genome|species)|organism is it"),
    ("tf_motif", r"(one|which) of these transcription factors|which transcription factor"),
    ("tf_binding", r"binding site|transcription.factor|\bTFBS\b|bound by"),
    ("splice", r"splic|exon.intron|intron.exon"),
    ("promoter", r"promoter|transcription start"),
    ("enhancer", r"enhancer"),
    ("open_chromatin", r"open chromatin|accessible|DNase|ATAC|hypersensitiv"),
]]


def question_kind(question: str) -> str:
    """The question type named by the wording; '' when none is recognised."""
    for kind, pattern in KINDS:
        if pattern.search(question):
            return kind
    return ""


@dataclass(frozen=True)
class Read:
    """The shared part of a prompt (everything before the tool outputs), as read."""

    question: str
    options: tuple[str, ...]
    sequences: dict[str, str]
    kind: str
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per-reader results derived from this prefix alone (e.g. a profile's prior)."""

    def option(self, *words: str) -> int | None:
        """Index of the first option whose text contains one of `words` (case-insensitive)."""
        for i, opt in enumerate(self.options):
            low = opt.lower()
            if any(w in low for w in words):
                return i
        return None

    @property
    def yes_no(self) -> tuple[int, int] | None:
        low = [o.strip().lower() for o in self.options]
        return (low.index("yes"), low.index("no")) if "yes" in low and "no" in low else None


@lru_cache(maxsize=512)
def read_prefix(prefix: str) -> Read:
    """Question, options and sequences of a prompt prefix (`prompt.render_prefix`'s layout)."""
    head, _, rest = prefix.partition("\n\nOptions:\n")
    question = head.removeprefix("Question: ").strip()
    opts, _, seqs = rest.partition("\n\n")
    options = tuple(m.group(2) for m in _OPTION.finditer(opts))
    sequences = {m.group(1): m.group(3).strip() for m in _SEQUENCE.finditer(seqs)}
    return Read(question, options, sequences, question_kind(question))


def split_prompt(user: str) -> tuple[str, list[str]]:
    """(prefix, tool blocks in prompt order) of a user message."""
    i = user.find(_EVIDENCE_HEAD.rstrip("\n"))
    if i < 0:
        return user, []
    prefix = user[:i]
    if not user.startswith(_EVIDENCE_HEAD, i):  # "Tool outputs: none."
        return prefix, []
    body = user[i + len(_EVIDENCE_HEAD):]
    body = body[: body.find("\n\n")] if "\n\n" in body else body
    blocks: list[str] = []
    for line in body.split("\n"):
        if line.startswith("[") or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += "\n" + line
    return prefix, blocks


def block_tag(block: str) -> str:
    """The tool name a block starts with (`[composition] ...` -> 'composition')."""
    end = block.find("] ") if block.startswith("[") else -1
    return block[1:end] if end > 0 else ""


# ---- tool blocks: text -> the values shown -------------------------------------------------
def _segments(body: str) -> dict[str, str]:
    """Per-sequence parts of a block: 'ref: ... | alt: ...' -> {'ref': ..., 'alt': ...}; a
    single-sequence block -> {'': body}. A part cut by the character bound drops its last,
    possibly cut, item (after the last ',' or ';')."""
    parts = re.split(r" \| (?=[A-Za-z0-9_]+: )", body)
    out: dict[str, str] = {}
    for part in parts:
        label, sep, text = part.partition(": ")
        if len(parts) == 1 or not sep or " " in label:
            label, text = "", part
        if text.endswith("…"):
            text = re.split(r"[;,](?=[^;,]*$)", text[:-1])[0]
        out[label] = text
    return out


def _f(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def _composition(t: str) -> dict[str, Any]:
    gc = _f(r"\bGC ([\d.]+)%", t)
    return {"gc": None if gc is None else gc / 100, "cpg_oe": _f(r"CpG o/e ([\d.]+)", t),
            "tm": _f(r"Tm\(NN\) ([\d.]+) C", t)}


def _motif_scan(t: str) -> dict[str, Any]:
    hits = {m.group(1).upper() for m in re.finditer(r"([\w.-]+) \((MA\d+\.\d+)\) at", t)}
    if "no JASPAR motif hits" in t:
        return {"hits": set(), "absent": None, "none_at_all": True}
    m = re.search(r"none for ([^;]*)", t)
    absent = {x.strip().upper() for x in m.group(1).split(",") if x.strip()} if m else set()
    return {"hits": hits, "absent": absent, "none_at_all": False}


_ORF = re.compile(r"(\d+) nt ([+-]) strand (\d+)-(\d+) \((\d+) aa: ([A-Z*]+)(\.\.\.)?\)")


def _orf_finder(t: str) -> dict[str, Any]:
    if re.search(r"no ORF of", t):
        return {"orfs": [], "complete": True}
    orfs = [{"length_nt": int(m.group(1)), "strand": m.group(2), "start": int(m.group(3)),
             "end": int(m.group(4)), "protein": m.group(6), "cut": bool(m.group(7))}
            for m in _ORF.finditer(t)]
    return {"orfs": orfs, "complete": bool(orfs)}


def _splice_sites(t: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("donor", "acceptor"):
        m = re.search(rf"{kind}: (\d+) site\(s\), best at boundary (\d+) score ([\d.]+)/([\d.]+)", t)
        if m:
            out[kind] = {"n": int(m.group(1)), "best": int(m.group(2)),
                         "score": float(m.group(3)), "max": float(m.group(4))}
        elif re.search(rf"{kind}: none above", t):
            out[kind] = {"n": 0, "best": None, "score": None, "max": None}
    return out


def _restriction_sites(t: str) -> dict[str, Any]:
    present = {m.group(1): {"site": m.group(2),
                            "cuts": [int(x) for x in re.findall(r"\d+", m.group(3))]}
               for m in re.finditer(r"(\w+) \(([A-Z]+)\) cuts at ([\d, ]+)", t)}
    m = re.search(r"(?:none for|no sites for) ([^;…]*)", t)
    absent = {x.strip() for x in m.group(1).split(",") if x.strip()} if m else set()
    return {"present": present, "absent": absent}


def _organism_signature(t: str) -> dict[str, Any]:
    return {"ranked": re.findall(r"([A-Z][a-z]+ [a-z]+) \(codon LL", t),
            "gc": _f(r"^GC ([\d.]+)%", t)}


def _seq_compare(t: str) -> dict[str, Any]:
    m = re.search(r"= revcomp\(\w+\): (yes|no)", t)
    return {"revcomp": None if m is None else m.group(1) == "yes"}


def _promoter_elements(t: str) -> dict[str, Any]:
    s70 = _f(r"\((\d+)/12 matches\)", t)
    tata = _f(r"TATA box [A-Z]+ at \d+ \((\d+) mismatch", t)
    return {"sigma70_matches": s70, "tata_mismatches": tata}


def _cpg_islands(t: str) -> dict[str, Any]:
    if re.search(r"no CpG island", t):
        return {"covered": 0.0}
    cov = _f(r"covering ([\d.]+)%", t)
    return {"covered": None if cov is None else cov / 100}


PARSERS = {"composition": _composition, "motif_scan": _motif_scan, "orf_finder": _orf_finder,
           "splice_sites": _splice_sites, "restriction_sites": _restriction_sites,
           "organism_signature": _organism_signature, "seq_compare": _seq_compare,
           "promoter_elements": _promoter_elements, "cpg_islands": _cpg_islands}
"""Tool name -> parser of one sequence's part of its block. A tool without a parser (e.g.
`kmer_profile`) is read but no rule uses it."""


@lru_cache(maxsize=8192)
def parse_block(block: str) -> dict[str, dict[str, Any]]:
    """{sequence label ('' for a single sequence): values shown} of one tool block."""
    tag = block_tag(block)
    parser = PARSERS.get(tag)
    if parser is None:
        return {}
    body = block[len(tag) + 3:]
    if tag == "seq_compare":  # one comparison, not one part per sequence
        return {"": parser(body)}
    return {label: parser(text) for label, text in _segments(body).items()}


def letter(index: int) -> str:
    return LETTERS[index]
