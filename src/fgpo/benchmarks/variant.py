"""Variant-effect benchmark: a reference and an alternate sequence differing by a small variant.

Stop gains in a coding sequence, splice-donor loss, TF binding-site gain or loss, and GC-band
shifts. Each answer is built in and re-checked on both sequences with the function the matching
tool uses (find_orfs, best_sites, the JASPAR scan, gc_fraction); a draw that disagrees is
resampled. Hard negatives: synonymous and out-of-frame stop changes, tolerant splice-site
positions, substitutions inside a TF site that do not cross its threshold, GC shifts toward a
band edge that stop short of it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from Bio.Seq import Seq
from Bio.SeqUtils import gc_fraction

from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.benchmarks.seqcalc import GC_BANDS, GC_EDGES, YES_NO, band_index, clear_of_edges
from fgpo.benchmarks.signals import (background, coding_sequence, near_miss, plant, pssm_score,
                                     revcomp, sample_site, splice_site)
from fgpo.question import Question
from fgpo.tools.motifs import load_pssm, pssm_threshold, scan
from fgpo.tools.orfs import STOPS, find_orfs
from fgpo.tools.splice import DONOR_EXON, best_sites, splice_pssm, splice_threshold

TF_PANEL = [("MA0139.2", "CTCF"), ("MA0138.3", "REST"), ("MA0106.3", "TP53"),
            ("MA0105.4", "NFKB1"), ("MA0506.3", "NRF1"), ("MA1494.2", "HNF4A")]
MOTIF_PSEUDOCOUNT = 0.5  # the motif_scan tool default
MAX_REPORTED = 3  # hits per motif / splice kind that the tools list
TF_MARGIN = 0.5  # score distance from the threshold kept by 'neither' substitutions

EVIDENCE = {
    "stop_gain": ["orf_finder"],
    "splice_loss": ["splice_sites"],
    "tf_site": ["motif_scan"],
    "gc_band_change": ["composition"],
}


# ---- helpers -------------------------------------------------------------------------------
def differences(ref: str, alt: str) -> list[dict[str, Any]]:
    """Substitutions turning `ref` into `alt` (equal lengths), 0-based positions."""
    return [{"pos": p, "ref": a, "alt": b} for p, (a, b) in enumerate(zip(ref, alt)) if a != b]


def _other_base(rng: np.random.Generator, base: str) -> str:
    return str(rng.choice([b for b in "ACGT" if b != base]))


def _has_full_orf(seq: str, length: int, min_aa: int) -> bool:
    """Whether `seq` has a + strand ORF at 0 of `length` nt and it is the longest ORF."""
    orfs = find_orfs(seq, min_aa)
    return bool(orfs) and (orfs[0]["start"], orfs[0]["strand"], orfs[0]["length_nt"]) == (
        0, "+", length)


@functools.cache
def _amino_acid(codon: str) -> str:
    """Biopython's standard-table translation of one codon (64 of them: asked once each)."""
    return str(Seq(codon).translate())


def _codon_snvs(cds: str) -> dict[str, list[tuple[int, str]]]:
    """Every SNV inside codons 1..n-1 of `cds` (start and stop kept), by effect on the frame.

    'stop_gain': the codon becomes a stop; 'synonymous' / 'missense': it stays a sense codon;
    'out_of_frame_stop': a sense-preserving SNV that creates a stop triplet in frame +1 or +2.
    """
    out: dict[str, list[tuple[int, str]]] = {"stop_gain": [], "synonymous": [], "missense": [],
                                             "out_of_frame_stop": []}
    for p in range(3, len(cds) - 3):
        k = p - p % 3
        codon = cds[k:k + 3]
        for b in "ACGT":
            if b == cds[p]:
                continue
            alt = plant(cds, b, p)
            new = alt[k:k + 3]
            if new in STOPS:
                out["stop_gain"].append((p, b))
                continue
            same = _amino_acid(new) == _amino_acid(codon)
            out["synonymous" if same else "missense"].append((p, b))
            if any(t % 3 and alt[t:t + 3] in STOPS and cds[t:t + 3] not in STOPS
                   for t in range(max(p - 2, 0), p + 1)):
                out["out_of_frame_stop"].append((p, b))
    return out


def _tf_hits(seq: str, pssm, thr: float) -> set[tuple[int, str]]:
    return {(h["start"], h["strand"]) for h in scan(pssm, thr, seq)}


# ---- families ------------------------------------------------------------------------------
def stop_gain(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Does an SNV create a premature in-frame stop? orf_finder carries the evidence (the
    full-length ORF at 0 disappears). Negatives: synonymous, missense, or an SNV that makes a
    stop triplet out of frame (hard)."""
    positive = i % 2 == 0
    kind = ("stop_gain" if positive
            else ["synonymous", "missense", "out_of_frame_stop"][(i // 2) % 3])
    while True:
        ref = coding_sequence(rng, int(rng.integers(30, 151)))
        if not _has_full_orf(ref, len(ref), cfg.orf_min_aa):
            continue
        candidates = _codon_snvs(ref)[kind]
        if not candidates:
            continue
        pos, base = candidates[int(rng.integers(0, len(candidates)))]
        alt = plant(ref, base, pos)
        if _has_full_orf(alt, len(ref), cfg.orf_min_aa) != positive:
            break
    k = pos - pos % 3
    return Question(
        id="", benchmark="", family="",
        question=f"The reference is a {len(ref)} bp protein-coding sequence read from its first "
                 "base; the alternate carries a single-nucleotide variant. Does the variant "
                 "introduce a premature stop codon in the reading frame that starts at the "
                 "first base?",
        sequences={"ref": ref, "alt": alt}, options=YES_NO, answer=0 if positive else 1,
        meta={"kind": kind, "pos": pos, "ref_base": ref[pos], "alt_base": base,
              "codon_index": k // 3, "ref_codon": ref[k:k + 3], "alt_codon": alt[k:k + 3]})


def splice_loss(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Does an SNV destroy a planted splice donor? splice_sites carries the evidence.

    Positives hit the invariant GT or drop another position's score below threshold;
    negatives change a tolerant site position (score stays above threshold, hard) or a base
    outside the site.
    """
    positive = i % 2 == 0
    kind = (["gt", "weakened"] if positive else ["tolerant", "outside"])[(i // 2) % 2]
    pssm, thr = splice_pssm("donor"), splice_threshold("donor", cfg.splice_fpr)
    while True:
        n = int(rng.integers(60, 151))
        n_exon = int(rng.integers(20, n - 9 - 20 + 1))
        site = splice_site(rng, "donor", cfg.splice_fpr)
        ref = background(rng, n_exon, 0.5) + site + background(rng, n - n_exon - 9, 0.35)
        boundary = n_exon + DONOR_EXON
        hits, _, _ = best_sites("donor", ref, cfg.splice_fpr)
        if (not hits or hits[0]["boundary"] != boundary or len(hits) > MAX_REPORTED
                or (len(hits) > 1 and hits[1]["score"] == hits[0]["score"])):
            continue
        if kind == "gt":
            p = n_exon + DONOR_EXON + int(rng.integers(0, 2))
            candidates = [(p, b) for b in "ACGT" if b != ref[p]]
        elif kind == "outside":
            p = int(rng.choice([q for q in range(n) if not n_exon <= q < n_exon + 9]))
            candidates = [(p, b) for b in "ACGT" if b != ref[p]]
        else:
            candidates = []
            for j in (*range(DONOR_EXON), *range(DONOR_EXON + 2, 9)):
                for b in "ACGT":
                    score = pssm_score(pssm, plant(site, b, j))
                    if b != site[j] and (score < thr if kind == "weakened" else score >= thr):
                        candidates.append((n_exon + j, b))
        if not candidates:
            continue
        pos, base = candidates[int(rng.integers(0, len(candidates)))]
        alt = plant(ref, base, pos)
        alt_hits, _, _ = best_sites("donor", alt, cfg.splice_fpr)
        kept = any(h["boundary"] == boundary for h in alt_hits)
        if len(alt_hits) <= MAX_REPORTED and kept != positive:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"The reference is a {n} bp exon-intron junction whose splice donor boundary "
                 f"is at position {boundary} (0-based, first intronic base); the alternate "
                 "carries a single-nucleotide variant. Does the variant destroy the splice donor "
                 f"site at position {boundary}?",
        sequences={"ref": ref, "alt": alt}, options=YES_NO, answer=0 if positive else 1,
        meta={"kind": kind, "boundary": boundary, "site_start": n_exon, "site": site,
              "pos": pos, "ref_base": ref[pos], "alt_base": base,
              "ref_score": hits[0]["score"], "threshold": round(thr, 3)})


def tf_site(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Does a small substitution create or destroy a TF binding site? motif_scan carries the
    evidence.

    Create: the reference carries a near-miss site that the variant restores above threshold;
    destroy: the reverse. Neither: the variant lies outside the site, or inside it without
    crossing the threshold (a hard negative), on a full site or a near miss.
    """
    answer = i % 3
    matrix_id, tf = TF_PANEL[(i // 3) % len(TF_PANEL)]
    pssm = load_pssm(cfg.jaspar_release, matrix_id, MOTIF_PSEUDOCOUNT)
    thr = pssm_threshold(cfg.jaspar_release, matrix_id, cfg.motif_fpr, MOTIF_PSEUDOCOUNT)
    kind = ["create", "destroy", str(rng.choice(["outside", "within"]))][answer]
    while True:
        n = int(rng.integers(80, 401))
        bg = background(rng, n, 0.45, 0.3)
        site = sample_site(rng, cfg.jaspar_release, matrix_id, cfg.motif_fpr)
        weak = near_miss(rng, site, pssm, thr)
        w = len(site)
        strand = "+" if rng.random() < 0.5 else "-"
        start = int(rng.integers(0, n - w + 1))
        on_strand = str if strand == "+" else revcomp
        ref_strong = kind == "destroy" or (answer == 2 and rng.random() < 0.5)
        ref_site = site if ref_strong else weak
        ref = plant(bg, on_strand(ref_site), start)
        if kind in ("create", "destroy"):
            alt = plant(bg, on_strand(weak if ref_strong else site), start)
        else:
            n_sub = 1 + int(rng.binomial(2, 0.5))
            if kind == "outside":
                outside = [p for p in range(n) if not start <= p < start + w]
                p0 = int(rng.choice(outside[: len(outside) - n_sub + 1]))
                positions = [p for p in range(p0, p0 + n_sub) if not start <= p < start + w]
                alt = ref
                for p in positions:
                    alt = plant(alt, _other_base(rng, alt[p]), p)
            else:
                mutated = ref_site
                for j in rng.choice(w, size=n_sub, replace=False):
                    mutated = plant(mutated, _other_base(rng, mutated[j]), int(j))
                score = pssm_score(pssm, mutated)
                if (score < thr + TF_MARGIN) if ref_strong else (score >= thr - TF_MARGIN):
                    continue  # crosses or nears the threshold: not a 'neither'
                alt = plant(bg, on_strand(mutated), start)
        diffs = differences(ref, alt)
        if not 1 <= len(diffs) <= 3:
            continue
        ref_hits, alt_hits = _tf_hits(ref, pssm, thr), _tf_hits(alt, pssm, thr)
        ok = {0: not ref_hits and bool(alt_hits), 1: bool(ref_hits) and not alt_hits,
              2: ref_hits == alt_hits}[answer]
        if ok and max(len(ref_hits), len(alt_hits)) <= MAX_REPORTED:
            break
    options = [f"creates a {tf} binding site", f"destroys a {tf} binding site", "neither"]
    return Question(
        id="", benchmark="", family="",
        question=f"The reference ({n} bp) and alternate sequences differ by a small substitution "
                 f"variant. Does the variant create or destroy a binding site for the "
                 f"transcription factor {tf} (JASPAR {matrix_id})?",
        sequences={"ref": ref, "alt": alt}, options=options, answer=answer,
        meta={"kind": kind, "tf": tf, "matrix_id": matrix_id, "site_start": start,
              "strand": strand, "ref_site_strong": ref_strong, "differences": diffs,
              "ref_score": round(pssm_score(pssm, on_strand(ref[start:start + w])), 3),
              "alt_score": round(pssm_score(pssm, on_strand(alt[start:start + w])), 3),
              "threshold": round(thr, 3)})


def gc_band_change(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Does a block of 2-10 substitutions move GC content across a band edge? composition
    carries the evidence. The reference sits 0.5-4 points from an edge; negatives move GC
    toward the edge but stop short of it (hard), away from it, or not at all."""
    positive = i % 2 == 0
    kind = "cross" if positive else ["toward", "away", "neutral"][(i // 2) % 3]
    while True:
        n = int(rng.integers(60, 201))
        edge = float(rng.choice(GC_EDGES))
        side = 1 if rng.random() < 0.5 else -1
        k = int(round((edge + side * rng.uniform(0.005, 0.04)) * n))
        ref_gc = k / n
        if side * (ref_gc - edge) < 0.005:
            continue
        # reference with exactly k G/C bases
        is_gc = np.zeros(n, dtype=bool)
        is_gc[rng.choice(n, size=k, replace=False)] = True
        ref = "".join(str(rng.choice(["G", "C"] if g else ["A", "T"])) for g in is_gc)
        m = int(rng.integers(2, 11))
        start = int(rng.integers(0, n - m + 1))
        block = is_gc[start:start + m]
        # GC-count change d: toward the edge is -side; the block's bases bound it
        d_range = range(-int(block.sum()), int((~block).sum()) + 1)
        wanted = {"cross": [d for d in d_range if -side * d > 0],
                  "toward": [d for d in d_range if -side * d > 0],
                  "away": [d for d in d_range if side * d > 0], "neutral": [0]}[kind]
        ref_band = band_index(ref_gc, GC_EDGES)
        wanted = [d for d in wanted if clear_of_edges((k + d) / n, GC_EDGES, 0.005)
                  and (band_index((k + d) / n, GC_EDGES) != ref_band) == positive]
        if not wanted:
            continue
        d = int(rng.choice(wanted))
        # flip |d| bases of the losing class to the other class; substitute the rest in-class
        flip_from = block if d < 0 else ~block
        flips = set(rng.choice(np.flatnonzero(flip_from), size=abs(d), replace=False).tolist())
        alt = list(ref)
        for j in range(m):
            b = ref[start + j]
            if j in flips:
                alt[start + j] = str(rng.choice(["A", "T"] if b in "GC" else ["G", "C"]))
            else:
                alt[start + j] = {"A": "T", "T": "A", "G": "C", "C": "G"}[b]
        alt = "".join(alt)
        alt_gc = float(gc_fraction(alt))
        if (band_index(alt_gc, GC_EDGES) != ref_band) == positive:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"The reference is {n} bp; the alternate carries a block of {m} substituted "
                 f"bases. Does the variant move the GC content into a different band "
                 f"({', '.join(GC_BANDS)})?",
        sequences={"ref": ref, "alt": alt}, options=YES_NO, answer=0 if positive else 1,
        meta={"kind": kind, "block_start": start, "block_len": m, "gc_change": d,
              "ref_gc": round(ref_gc, 4), "alt_gc": round(alt_gc, 4), "edge": edge})


FAMILIES = {"stop_gain": stop_gain, "splice_loss": splice_loss, "tf_site": tf_site,
            "gc_band_change": gc_band_change}
