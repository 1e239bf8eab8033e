"""Sequence-calculation benchmark: questions answered by computing on the sequence.

GC and melting-temperature bands, ORF lengths and peptides, restriction sites and reverse
complements. Each answer is built in, then re-checked with the function the matching tool uses
(gc_fraction, Tm_NN, find_orfs, Bio.Restriction); a draw that disagrees is resampled. Hard
negatives: values just inside a band, near-miss restriction sites, other-frame and other-strand
peptides, reverse-only or one-mismatch reverse complements.
"""

from __future__ import annotations

import numpy as np
from Bio import Restriction
from Bio.Seq import Seq, complement
from Bio.SeqUtils import gc_fraction

from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.benchmarks.signals import background, coding_sequence, plant, random_dna, revcomp
from fgpo.question import Question
from fgpo.tools.composition import melting_temp
from fgpo.tools.orfs import find_orfs

YES_NO = ["yes", "no"]
GC_BANDS = ["below 40%", "40-50%", "50-60%", "60% or more"]
GC_EDGES = (0.40, 0.50, 0.60)
ORF_BANDS = ["shorter than 150 nt (or none)", "150-299 nt", "300-449 nt", "450 nt or more"]
ORF_EDGES = (150, 300, 450)
TM_BANDS = ["below 55 C", "55-62 C", "62-69 C", "69 C or more"]
TM_EDGES = (55.0, 62.0, 69.0)
ENZYMES = ["EcoRI", "BamHI", "HindIII", "NotI", "XhoI", "PstI"]
AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
PEPTIDE_LEN = 8

EVIDENCE = {
    "gc_band": ["composition"],
    "orf_band": ["orf_finder"],
    "peptide": ["orf_finder"],
    "restriction": ["restriction_sites"],
    "revcomp": ["seq_compare"],
    "tm_band": ["composition"],
    "cut_in_orf": ["restriction_sites", "orf_finder"],
}


# ---- helpers -------------------------------------------------------------------------------
def band_index(value: float, edges: tuple[float, ...]) -> int:
    """Band of `value`: the number of edges at or below it (edges ascending, bands [lo, hi))."""
    return sum(value >= e for e in edges)


def clear_of_edges(value: float, edges: tuple[float, ...], margin: float) -> bool:
    return all(abs(value - e) >= margin for e in edges)


def site_present(enzyme: str, seq: str) -> bool:
    """Whether Bio.Restriction finds `enzyme` in linear `seq` (as restriction_sites does)."""
    return bool(getattr(Restriction, enzyme).search(Seq(seq), linear=True))


def _plant_orf(rng: np.random.Generator, seq: str, orf: str) -> tuple[str, int, str]:
    """Plant `orf` at a random position on a random strand; returns (seq, start, strand)."""
    strand = "+" if rng.random() < 0.5 else "-"
    pos = int(rng.integers(0, len(seq) - len(orf) + 1))
    return plant(seq, orf if strand == "+" else revcomp(orf), pos), pos, strand


def _is_longest(orfs: list[dict], start: int, end: int, strand: str) -> bool:
    """`orfs` (longest first) leads with the ORF at start..end on `strand`, strictly longest."""
    if not orfs or (orfs[0]["start"], orfs[0]["end"], orfs[0]["strand"]) != (start, end, strand):
        return False
    return len(orfs) == 1 or orfs[1]["length_nt"] < orfs[0]["length_nt"]


def _atg_peptides(s: str, exclude_frame: int | None = None) -> list[str]:
    """Stop-free 8-residue peptides from every ATG of `s` (optionally not in one frame)."""
    peps = []
    for j in range(len(s) - 3 * PEPTIDE_LEN + 1):
        if s[j:j + 3] == "ATG" and (exclude_frame is None or j % 3 != exclude_frame):
            pep = str(Seq(s[j:j + 3 * PEPTIDE_LEN]).translate())
            if "*" not in pep:
                peps.append(pep)
    return peps


# ---- families ------------------------------------------------------------------------------
def gc_band(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """GC-content band of a 40-400 bp sequence; composition (gc_fraction) carries the evidence.
    The GC fraction stays at least 0.5 percentage points from every band edge."""
    target = i % 4
    lo, hi = [(0.25, 0.40), (0.40, 0.50), (0.50, 0.60), (0.60, 0.75)][target]
    while True:
        n = int(rng.integers(40, 401))
        seq = random_dna(rng, n, float(rng.uniform(lo, hi)))
        gc = float(gc_fraction(seq))
        if band_index(gc, GC_EDGES) == target and clear_of_edges(gc, GC_EDGES, 0.005):
            break
    return Question(
        id="", benchmark="", family="",
        question=f"What is the GC content of this {n} bp DNA sequence?",
        sequences={"seq": seq}, options=GC_BANDS, answer=target,
        meta={"gc": round(gc, 4)})


def orf_band(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Length band of the longest ORF (either strand); orf_finder carries the evidence.

    An ORF of the target length is planted in AT-rich (stop-rich) DNA so chance ORFs stay short;
    half of the shortest-band questions plant a short ORF, the rest none.
    """
    target = i % 4
    kind = "none" if target == 0 and (i // 4) % 2 else "planted"
    codon_range = [(15, 50), (50, 100), (100, 150), (150, 251)][target]
    while True:
        length = 3 * int(rng.integers(*codon_range))
        n = max(int(rng.integers(300, 901)), length + int(rng.integers(30, 151)))
        seq = background(rng, n, float(rng.uniform(0.30, 0.38)))
        start = strand = None
        if kind == "planted":
            seq, start, strand = _plant_orf(rng, seq, coding_sequence(rng, length // 3 - 2))
        orfs = find_orfs(seq, min_aa=1)
        longest = orfs[0]["length_nt"] if orfs else 0
        ok = (_is_longest(orfs, start, start + length, strand) if kind == "planted"
              else longest < ORF_EDGES[0])
        if ok and band_index(longest, ORF_EDGES) == target:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"How long is the longest open reading frame (ATG through the stop codon, on "
                 f"either strand) in this {n} bp sequence?",
        sequences={"seq": seq}, options=ORF_BANDS, answer=target,
        meta={"kind": kind, "start": start, "strand": strand, "longest_nt": longest})


def peptide(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """First 8 residues of the longest ORF's peptide; orf_finder carries the evidence.

    Distractors all start with Met: an ATG in another frame of the ORF's strand, an ATG on the
    other strand, and the true peptide with 1-2 residues substituted.
    """
    target = i % 4
    while True:
        length = 3 * int(rng.integers(40, 121))
        n = length + int(rng.integers(60, 301))
        seq, start, strand = _plant_orf(rng, background(rng, n, 0.38),
                                        coding_sequence(rng, length // 3 - 2))
        orfs = find_orfs(seq, cfg.orf_min_aa)
        if not _is_longest(orfs, start, start + length, strand):
            continue
        true = orfs[0]["protein"][:PEPTIDE_LEN]
        same, other = (seq, revcomp(seq)) if strand == "+" else (revcomp(seq), seq)
        strand_start = start if strand == "+" else n - start - length
        frame_peps = [p for p in _atg_peptides(same, exclude_frame=strand_start % 3) if p != true]
        strand_peps = [p for p in _atg_peptides(other) if p != true]
        if not frame_peps or not strand_peps:
            continue
        mutant = list(true)
        for k in rng.choice(np.arange(1, PEPTIDE_LEN), size=int(rng.integers(1, 3)),
                            replace=False):
            mutant[k] = str(rng.choice([a for a in AMINO_ACIDS if a != mutant[k]]))
        distractors = {"other_frame": str(rng.choice(frame_peps)),
                       "other_strand": str(rng.choice(strand_peps)),
                       "substituted": "".join(mutant)}
        if len({true, *distractors.values()}) == 4:
            break
    kinds = [str(k) for k in rng.permutation(list(distractors))]
    kinds.insert(target, "true")
    options = [true if k == "true" else distractors[k] for k in kinds]
    return Question(
        id="", benchmark="", family="",
        question=f"Which peptide does the longest open reading frame of this {n} bp sequence "
                 f"begin with (first {PEPTIDE_LEN} amino acids, standard genetic code, either "
                 f"strand)?",
        sequences={"seq": seq}, options=options, answer=target,
        meta={"start": start, "end": start + length, "strand": strand, "option_kinds": kinds})


def restriction(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Presence of one enzyme's recognition site; restriction_sites carries the evidence.
    Negatives: a near miss (one base of the site changed), another enzyme's site, or nothing."""
    present = i % 2 == 0
    kind = "site" if present else ["near_miss", "other_enzyme", "none"][(i // 2) % 3]
    enzyme = str(rng.choice(ENZYMES))
    site = str(getattr(Restriction, enzyme).site)
    while True:
        n = int(rng.integers(60, 401))
        seq = random_dna(rng, n, float(rng.uniform(0.4, 0.6)))
        planted, pos = (None if kind == "none" else site), None
        if kind == "near_miss":
            k = int(rng.integers(0, len(site)))
            planted = site[:k] + str(rng.choice([b for b in "ACGT" if b != site[k]])) + site[k + 1:]
        elif kind == "other_enzyme":
            other = str(rng.choice([e for e in ENZYMES if e != enzyme]))
            planted = str(getattr(Restriction, other).site)
        if kind != "none":
            pos = int(rng.integers(0, n - len(planted) + 1))
            seq = plant(seq, planted, pos)
        if site_present(enzyme, seq) == present and (
                kind != "other_enzyme" or site_present(other, seq)):
            break
    return Question(
        id="", benchmark="", family="",
        question=f"Does this {n} bp linear DNA sequence contain a recognition site for the "
                 f"restriction enzyme {enzyme}?",
        sequences={"seq": seq}, options=YES_NO, answer=0 if present else 1,
        meta={"enzyme": enzyme, "site": site, "kind": kind, "planted": planted, "pos": pos})


def revcomp_pair(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Is seq2 the reverse complement of seq1? No default tool answers it; seq_compare does.
    Negatives: the reverse only, the complement only, or the reverse complement with one
    mismatch."""
    is_rc = i % 2 == 0
    kind = "reverse_complement" if is_rc else ["reverse", "complement", "mismatch"][(i // 2) % 3]
    while True:
        seq1 = random_dna(rng, int(rng.integers(12, 41)), 0.5)
        rc = revcomp(seq1)
        mismatch = None
        if kind == "reverse_complement":
            seq2 = rc
        elif kind == "reverse":
            seq2 = seq1[::-1]
        elif kind == "complement":
            seq2 = complement(seq1)
        else:
            mismatch = int(rng.integers(0, len(rc)))
            seq2 = plant(rc, str(rng.choice([b for b in "ACGT" if b != rc[mismatch]])), mismatch)
        if (seq2 == rc) == is_rc:
            break
    return Question(
        id="", benchmark="", family="",
        question="Is seq2 the reverse complement of seq1?",
        sequences={"seq1": seq1, "seq2": seq2}, options=YES_NO, answer=0 if is_rc else 1,
        meta={"kind": kind, "mismatch_pos": mismatch})


def tm_band(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Nearest-neighbour melting temperature band of a 16-30 nt oligo; composition (Tm_NN
    defaults) carries the evidence. Tm stays at least 0.5 C from every band edge."""
    target = i % 4
    lo, hi = [(0.2, 0.55), (0.35, 0.65), (0.45, 0.8), (0.6, 0.9)][target]
    while True:
        oligo = random_dna(rng, int(rng.integers(16, 31)), float(rng.uniform(lo, hi)))
        tm = melting_temp(oligo)
        if band_index(tm, TM_EDGES) == target and clear_of_edges(tm, TM_EDGES, 0.5):
            break
    return Question(
        id="", benchmark="", family="",
        question=f"What is the melting temperature of this {len(oligo)} nt DNA oligonucleotide "
                 "(nearest-neighbour model, 50 mM Na+, 25 nM oligo)?",
        sequences={"seq": oligo}, options=TM_BANDS, answer=target,
        meta={"tm": round(tm, 2), "gc": round(float(gc_fraction(oligo)), 4)})


def site_starts(enzyme: str, seq: str) -> list[int]:
    """0-based recognition-site starts of `enzyme` in linear `seq` (Bio.Restriction cuts)."""
    enz = getattr(Restriction, enzyme)
    return [c - 1 - enz.fst5 for c in enz.search(Seq(seq), linear=True)]


def cut_in_orf(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Does an enzyme's site lie inside the longest ORF? Needs restriction_sites AND orf_finder.

    Negatives are the misleading halves: the site present but outside the ORF, or another
    enzyme's site inside the ORF with the asked enzyme absent.
    """
    inside = i % 2 == 0
    kind = "inside" if inside else ["outside", "other_inside"][(i // 2) % 2]
    enzyme = ENZYMES[(i // 2) % len(ENZYMES)]
    site = str(getattr(Restriction, enzyme).site)
    while True:
        length = 3 * int(rng.integers(60, 150))
        n = length + int(rng.integers(120, 400))
        seq = background(rng, n, float(rng.uniform(0.30, 0.38)))
        seq, start, strand = _plant_orf(rng, seq, coding_sequence(rng, length // 3 - 2))
        end = start + length
        planted = site if kind != "other_inside" else str(getattr(
            Restriction, str(rng.choice([e for e in ENZYMES if e != enzyme]))).site)
        if kind == "outside":
            spans = [(0, start - len(site)), (end, n - len(site))]
            lo, hi = spans[int(rng.random() < 0.5)]
            if hi < lo:
                continue
        else:
            lo, hi = start + 3, end - 3 - len(planted)
        pos = int(rng.integers(lo, hi + 1))
        seq = plant(seq, planted, pos)
        starts = site_starts(enzyme, seq)
        within = any(start <= s and s + len(site) <= end for s in starts)
        if (_is_longest(find_orfs(seq, cfg.orf_min_aa), start, end, strand) and within == inside
                and (kind != "outside" or starts)):
            break
    return Question(
        id="", benchmark="", family="",
        question=f"Does a recognition site of the restriction enzyme {enzyme} lie entirely "
                 f"within the longest open reading frame (either strand) of this {n} bp sequence?",
        sequences={"seq": seq}, options=YES_NO, answer=0 if inside else 1,
        meta={"enzyme": enzyme, "kind": kind, "orf_start": start, "orf_end": end,
              "orf_strand": strand, "planted": planted, "pos": pos})


FAMILIES = {"gc_band": gc_band, "orf_band": orf_band, "peptide": peptide,
            "restriction": restriction, "revcomp": revcomp_pair, "tm_band": tm_band,
            "cut_in_orf": cut_in_orf}
