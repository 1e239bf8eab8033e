"""Splice-site scoring with donor and acceptor consensus position-weight matrices.

Frequencies follow the human U2-intron consensus (Shapiro & Senapathy 1987, Nucleic Acids Res
15:7155): donor MAG|GURAGU over exon -3..-1 and intron +1..+6; acceptor (Y)n N C A G|G over
intron -14..-1 and exon +1. Scored as log-odds against a uniform background with Bio.motifs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from Bio import motifs as bio_motifs

from fgpo.tools.base import Tool, register
from fgpo.tools.motifs import pssm_search

# Per position: (A, C, G, T) percentages. Donor: exon -3,-2,-1 | intron +1..+6.
DONOR_FREQ = [(35, 35, 19, 11), (60, 13, 14, 13), (8, 4, 81, 7), (0, 0, 100, 0), (0, 0, 0, 100),
              (60, 3, 34, 3), (71, 8, 12, 9), (6, 5, 84, 5), (15, 16, 19, 50)]
DONOR_EXON = 3  # the exon/intron boundary lies after this many matrix columns
# Acceptor: intron -14..-4 polypyrimidine tract, -3 (Y), -2 A, -1 G | exon +1.
ACCEPTOR_FREQ = [(10, 31, 10, 49)] * 4 + [(9, 34, 8, 49)] * 4 + [(8, 38, 7, 47)] * 3 + [
    (5, 65, 2, 28), (100, 0, 0, 0), (0, 0, 100, 0), (25, 13, 50, 12)]
ACCEPTOR_EXON = 14  # columns before the intron/exon boundary


@lru_cache(maxsize=None)
def splice_pssm(kind: str):
    freq = DONOR_FREQ if kind == "donor" else ACCEPTOR_FREQ
    counts = {b: [row[i] for row in freq] for i, b in enumerate("ACGT")}
    motif = bio_motifs.Motif(alphabet="ACGT", counts=counts)
    return motif.counts.normalize(pseudocounts=0.25).log_odds()


@lru_cache(maxsize=None)
def splice_threshold(kind: str, fpr: float) -> float:
    return float(splice_pssm(kind).distribution(precision=10**3).threshold_fpr(fpr))


def best_sites(kind: str, seq: str, fpr: float) -> tuple[list[dict[str, Any]], float, float]:
    """Hits on the + strand above the FPR threshold, best first; boundary = exon/intron junction."""
    pssm = splice_pssm(kind)
    thr = splice_threshold(kind, fpr)
    offset = DONOR_EXON if kind == "donor" else ACCEPTOR_EXON
    hits = [{"start": pos, "boundary": pos + offset, "score": round(score, 3)}
            for pos, score in pssm_search(pssm, seq, thr, both=False)
            if score == score]  # NaN windows contain ambiguous bases
    hits.sort(key=lambda h: (-h["score"], h["start"]))
    return hits, thr, float(pssm.max)


@register
class SpliceSites(Tool):
    name = "splice_sites"
    version = "1"
    description = "Splice donor (GT) and acceptor (AG) sites scored with consensus PWMs (+ strand)."

    def settings(self) -> dict[str, Any]:
        return {"fpr": self.cfg.splice_fpr}

    def analyse(self, seq: str) -> dict[str, Any]:
        out: dict[str, Any] = {"fpr": self.cfg.splice_fpr}
        for kind in ("donor", "acceptor"):
            hits, thr, best = best_sites(kind, seq, self.cfg.splice_fpr)
            out[kind] = {"n_sites": len(hits), "threshold": round(thr, 3),
                         "max_score": round(best, 3), "sites": hits[:3]}
        return out

    def describe(self, d: dict[str, Any]) -> str:
        parts = []
        for kind in ("donor", "acceptor"):
            k = d[kind]
            if k["sites"]:
                s = k["sites"][0]
                parts.append(f"{kind}: {k['n_sites']} site(s), best at boundary {s['boundary']} "
                             f"score {s['score']:.1f}/{k['max_score']:.1f}")
            else:
                parts.append(f"{kind}: none above threshold {k['threshold']:.1f}")
        return "; ".join(parts)
