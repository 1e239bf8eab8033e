"""GenomeQA-style benchmark: six task families on raw sequence (Wu et al., GenomeQA).

Signals are planted from real JASPAR matrices and splice/organism consensus models into
realistic backgrounds (CpG-depleted bulk DNA at ~41% GC, CpG-rich islands), with hard
negatives: near-miss sites, shuffled controls, and the misleading half of two-part signals.
"""

from __future__ import annotations

import numpy as np

from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.benchmarks.signals import (background, coding_sequence, near_miss, plant, revcomp,
                                     sample_site, shuffle, splice_site)
from fgpo.question import Question
from fgpo.tools.composition import cpg_observed_expected
from fgpo.tools.motifs import load_pssm, pssm_threshold, scan
from fgpo.tools.organism import ORGANISMS, codon_log_likelihoods, coding_frame
from fgpo.tools.splice import best_sites

TATA = "MA0108.3"  # TBP
TFS = {"CTCF": "MA0139.2", "REST": "MA0138.3", "TP53": "MA0106.3", "NFKB1": "MA0105.4",
       "NRF1": "MA0506.3", "HNF4A": "MA1494.2", "SP1": "MA0079.5", "CEBPB": "MA0466.4"}
PROMOTER_CPG_OE = 0.6  # CpG-island criterion (Gardiner-Garden & Frommer 1987)
HISTONE_CPG_OE = 0.6
YES_NO = ["yes", "no"]

EVIDENCE = {
    "promoter": ["motif_scan", "composition"],
    "splice": ["splice_sites"],
    "taxonomy": ["organism_signature", "composition"],
    "histone": ["composition"],
    "tf_binding": ["motif_scan"],
    "tf_motif": ["motif_scan"],
}


# ---- helpers -------------------------------------------------------------------------------
def _hits(cfg: BenchmarkConfig, matrix_id: str, seq: str) -> list[dict]:
    pssm = load_pssm(cfg.jaspar_release, matrix_id, 0.5)
    return scan(pssm, pssm_threshold(cfg.jaspar_release, matrix_id, cfg.motif_fpr, 0.5), seq)


def _plant_random(rng: np.random.Generator, seq: str, site: str) -> tuple[str, int, str]:
    """Plant `site` at a random position on a random strand; returns (seq, start, strand)."""
    strand = "+" if rng.random() < 0.5 else "-"
    pos = int(rng.integers(0, len(seq) - len(site) + 1))
    return plant(seq, site if strand == "+" else revcomp(site), pos), pos, strand


def _near_miss_site(rng: np.random.Generator, cfg: BenchmarkConfig, matrix_id: str) -> str:
    pssm = load_pssm(cfg.jaspar_release, matrix_id, 0.5)
    thr = pssm_threshold(cfg.jaspar_release, matrix_id, cfg.motif_fpr, 0.5)
    return near_miss(rng, sample_site(rng, cfg.jaspar_release, matrix_id, cfg.motif_fpr), pssm, thr)


# ---- families ------------------------------------------------------------------------------
def promoter(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Core promoter = CpG-rich context AND a TATA box; needs motif_scan + composition together.

    Negatives are the misleading halves: a TATA box in CpG-poor DNA, a CpG island with a
    near-miss TATA, or neither.
    """
    is_promoter = i % 2 == 0
    kind = "promoter" if is_promoter else ["tata_cpg_poor", "cpg_rich_near_miss", "neither"][(i // 2) % 3]
    rich = kind in ("promoter", "cpg_rich_near_miss")
    with_tata = kind in ("promoter", "tata_cpg_poor")
    n = int(rng.integers(100, 401))
    while True:
        seq = (background(rng, n, float(rng.uniform(0.58, 0.7))) if rich
               else background(rng, n, float(rng.uniform(0.36, 0.46)), 0.25))
        tss = int(rng.integers(40, n - 10))
        site = (sample_site(rng, cfg.jaspar_release, TATA, cfg.motif_fpr) if with_tata
                else _near_miss_site(rng, cfg, TATA))
        start = tss - 30 - len(site) // 2
        seq = plant(seq, site, start)
        hits = _hits(cfg, TATA, seq)
        oe = cpg_observed_expected(seq)
        tata_ok = (any(h["start"] == start and h["strand"] == "+" for h in hits) if with_tata
                   else not hits)
        if tata_ok and (oe >= PROMOTER_CPG_OE) == rich:
            break
    return Question(
        id="", benchmark="", family="",
        question=(f"Is this {n} bp human sequence an active core promoter, i.e. a CpG-island "
                  f"region carrying a TATA box about 30 bp upstream of a transcription start?"),
        sequences={"seq": seq}, options=YES_NO, answer=0 if is_promoter else 1,
        meta={"kind": kind, "tata_start": start, "tss": tss, "cpg_oe": round(oe, 4)})


def splice(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Donor, acceptor or neither; splice_sites carries the evidence. 'Neither' plants a GT/AG
    decoy in a weak context (a hard negative)."""
    kind = ["donor", "acceptor", "none"][i % 3]
    while True:
        n_exon, n_intron = int(rng.integers(25, 70)), int(rng.integers(25, 70))
        exon = background(rng, n_exon, 0.52)
        intron = background(rng, n_intron, 0.35)
        if kind == "donor":
            site = splice_site(rng, "donor", cfg.splice_fpr)
            seq, boundary = exon[:-3] + site + intron[6:], n_exon
        elif kind == "acceptor":
            tract = "".join(rng.choice(list("CT"), size=10, p=[0.4, 0.6]))
            site = splice_site(rng, "acceptor", cfg.splice_fpr)
            seq = intron[: -14 - 10] + tract + site + exon[1:]
            boundary = len(intron)
        else:
            decoy = str(rng.choice(["CCAGTCCTT", "TTTGTCGCC", "AAGGTCCCA"]))
            seq = exon + decoy + intron
            boundary = None
        donors, _, _ = best_sites("donor", seq, cfg.splice_fpr)
        acceptors, _, _ = best_sites("acceptor", seq, cfg.splice_fpr)
        ok = {"donor": bool(donors) and not acceptors and donors[0]["boundary"] == boundary,
              "acceptor": bool(acceptors) and not donors and acceptors[0]["boundary"] == boundary,
              "none": not donors and not acceptors}[kind]
        if ok:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"This {len(seq)} bp human pre-mRNA fragment spans at most one splice junction. "
                 "Which splice site, if any, does it contain?",
        sequences={"seq": seq},
        options=["a splice donor (exon-intron boundary, GT)",
                 "a splice acceptor (intron-exon boundary, AG)", "no splice site"],
        answer=["donor", "acceptor", "none"].index(kind),
        meta={"kind": kind, "boundary": boundary})


def taxonomy(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Organism of origin of a coding sequence; organism_signature carries the evidence, GC
    alone (composition) separates only the extremes."""
    names = list(ORGANISMS)
    org = names[i % len(names)]
    while True:
        cds = coding_sequence(rng, int(rng.integers(50, 250)), org,
                              gc3_shift=float(rng.normal(0, 0.06)))
        strand = "+" if rng.random() < 0.5 else "-"
        seq = cds if strand == "+" else revcomp(cds)
        ll, _ = codon_log_likelihoods(coding_frame(seq))
        if max(ll, key=ll.get) == org:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"This {len(seq)} bp protein-coding sequence comes from one of four genomes. "
                 "Which organism is it most likely from?",
        sequences={"seq": seq}, options=names, answer=names.index(org),
        meta={"organism": org, "strand": strand})


def histone(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """H3K4me3-like CpG-rich vs H3K9me3-like CpG-poor; composition (CpG o/e) carries the
    evidence. Hard cases: GC-rich but CpG-depleted (H3K9me3), moderate-GC CpG islands (H3K4me3);
    half the H3K9me3 regions carry satellite-like tandem repeats."""
    active = i % 2 == 0
    hard = (i // 2) % 2 == 1
    n = int(rng.integers(200, 1001))
    while True:
        if active:
            gc = float(rng.uniform(0.5, 0.56)) if hard else float(rng.uniform(0.6, 0.72))
            seq = background(rng, n, gc)
        else:
            gc = float(rng.uniform(0.56, 0.64)) if hard else float(rng.uniform(0.34, 0.44))
            seq = background(rng, n, gc, float(rng.uniform(0.15, 0.4)))
            if (i // 4) % 2 == 1:
                unit = str(rng.choice(["ATTCC", "AATGG", "TTAGGG", "CATTC"]))
                rep = unit * int(rng.integers(6, 16))
                pos = int(rng.integers(0, max(1, n - len(rep))))
                seq = plant(seq, rep[: n - pos], pos)
        oe = cpg_observed_expected(seq)
        if (oe >= HISTONE_CPG_OE) == active and abs(oe - HISTONE_CPG_OE) > 0.05:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"Which histone mark is this {n} bp human region more likely to carry?",
        sequences={"seq": seq},
        options=["H3K4me3 (active CpG-island promoter)", "H3K9me3 (constitutive heterochromatin)"],
        answer=0 if active else 1, meta={"hard": hard, "cpg_oe": round(oe, 4), "gc": round(gc, 4)})


def tf_binding(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Is a named TF's site present? motif_scan carries the evidence. Negatives: a near-miss
    site, a shuffled control, or another TF's site (decoy)."""
    names = list(TFS)
    tf = names[(i // 2) % len(names)]
    present = i % 2 == 0
    kind = "site" if present else ["near_miss", "shuffled", "decoy"][(i // 2) % 3]
    n = int(rng.integers(50, 601))
    while True:
        seq = background(rng, n, float(rng.uniform(0.38, 0.5)), 0.3)
        start = strand = None
        if kind in ("site", "shuffled"):
            site = sample_site(rng, cfg.jaspar_release, TFS[tf], cfg.motif_fpr)
            seq, start, strand = _plant_random(rng, seq, site)
            if kind == "shuffled":
                seq, start, strand = shuffle(rng, seq), None, None
        elif kind == "near_miss":
            seq, start, strand = _plant_random(rng, seq, _near_miss_site(rng, cfg, TFS[tf]))
        else:
            other = names[(names.index(tf) + 1 + int(rng.integers(0, len(names) - 1))) % len(names)]
            seq, _, _ = _plant_random(rng, seq, sample_site(rng, cfg.jaspar_release, TFS[other],
                                                            cfg.motif_fpr))
        hits = _hits(cfg, TFS[tf], seq)
        if present and hits and hits[0]["start"] == start and hits[0]["strand"] == strand:
            break
        if not present and not hits:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"Does this {n} bp human sequence contain a binding site for the transcription "
                 f"factor {tf}?",
        sequences={"seq": seq}, options=YES_NO, answer=0 if present else 1,
        meta={"tf": tf, "matrix_id": TFS[tf], "kind": kind, "start": start, "strand": strand})


def tf_motif(rng: np.random.Generator, cfg: BenchmarkConfig, i: int) -> Question:
    """Which of four TFs' motifs is present? motif_scan carries the evidence; the other three
    are absent (one of them as a near-miss)."""
    names = list(TFS)
    options = [str(x) for x in rng.choice(names, size=4, replace=False)]
    answer = i % 4
    n = int(rng.integers(60, 601))
    while True:
        seq = background(rng, n, float(rng.uniform(0.38, 0.5)), 0.3)
        site = sample_site(rng, cfg.jaspar_release, TFS[options[answer]], cfg.motif_fpr)
        seq, start, strand = _plant_random(rng, seq, site)
        decoy = options[(answer + 1) % 4]
        miss = _near_miss_site(rng, cfg, TFS[decoy])
        if len(seq) >= len(site) + len(miss) + 2:
            lo, hi = (start + len(site), len(seq) - len(miss)) if start < len(seq) / 2 else (0, start - len(miss))
            if hi > lo:
                seq = plant(seq, miss, int(rng.integers(lo, hi + 1)))
        present = [tf for tf in options if _hits(cfg, TFS[tf], seq)]
        if present == [options[answer]]:
            break
    return Question(
        id="", benchmark="", family="",
        question=f"Exactly one of these transcription factors has a binding site in this {n} bp "
                 "sequence. Which one?",
        sequences={"seq": seq}, options=options, answer=answer,
        meta={"tf": options[answer], "start": start, "strand": strand, "near_miss": decoy})


FAMILIES = {"promoter": promoter, "splice": splice, "taxonomy": taxonomy, "histone": histone,
            "tf_binding": tf_binding, "tf_motif": tf_motif}
