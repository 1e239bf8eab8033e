"""Organism composition signature: codon-position base composition vs reference organisms.

Each reference organism is a codon-position model: base frequencies at codon positions 1, 2
and 3 (the GC1/GC2/GC3 profile that separates genomes, Sueoka 1988), rounded from published
genome-wide codon usage (Kazusa codon usage database). The tool reads the sequence's codons in
the frame of its longest ORF (else + strand frame 0), and reports each organism's mean per-codon
log-likelihood and the distance of (GC, GC3) to the organism's.
"""

from __future__ import annotations

import math
from typing import Any

from Bio.Seq import Seq
from Bio.SeqUtils import gc_fraction

from fgpo.tools.base import Tool, register
from fgpo.tools.orfs import find_orfs

# Per organism: base frequencies (A, C, G, T) at codon positions 1, 2, 3.
ORGANISMS: dict[str, tuple[tuple[float, float, float, float], ...]] = {
    "Plasmodium falciparum": ((0.44, 0.10, 0.25, 0.21), (0.42, 0.13, 0.12, 0.33),
                              (0.45, 0.06, 0.09, 0.40)),
    "Saccharomyces cerevisiae": ((0.31, 0.18, 0.28, 0.23), (0.32, 0.21, 0.16, 0.31),
                                 (0.31, 0.19, 0.18, 0.32)),
    "Escherichia coli": ((0.26, 0.23, 0.35, 0.16), (0.29, 0.23, 0.18, 0.30),
                         (0.19, 0.27, 0.29, 0.25)),
    "Streptomyces coelicolor": ((0.18, 0.30, 0.40, 0.12), (0.22, 0.29, 0.22, 0.27),
                                (0.03, 0.47, 0.45, 0.05)),
}


def organism_gc(name: str) -> tuple[float, float]:
    """(overall GC, GC3) implied by an organism's codon-position model."""
    pos = ORGANISMS[name]
    gcs = [p[1] + p[2] for p in pos]
    return sum(gcs) / 3, gcs[2]


def coding_frame(seq: str) -> str:
    """The sequence read in the frame of its longest ORF (either strand), else + frame 0."""
    orfs = find_orfs(seq, min_aa=10)
    if not orfs:
        return seq
    o = orfs[0]
    s = seq if o["strand"] == "+" else str(Seq(seq).reverse_complement())
    return s[o["frame"]:]


def codon_log_likelihoods(seq: str) -> tuple[dict[str, float], int]:
    """Mean per-codon log-likelihood under each organism's codon-position model."""
    codons = [seq[i:i + 3] for i in range(0, len(seq) - 2, 3)]
    codons = [c for c in codons if set(c) <= set("ACGT")]
    ll = {}
    for name, pos in ORGANISMS.items():
        total = sum(math.log(pos[j]["ACGT".index(b)]) for c in codons for j, b in enumerate(c))
        ll[name] = total / len(codons) if codons else 0.0
    return ll, len(codons)


@register
class OrganismSignature(Tool):
    name = "organism_signature"
    version = "1"
    description = "Distance of GC / codon-position composition to four reference organisms."

    def analyse(self, seq: str) -> dict[str, Any]:
        framed = coding_frame(seq)
        ll, n_codons = codon_log_likelihoods(framed)
        gc = gc_fraction(seq, ambiguous="remove") if any(b in "ACGTSW" for b in seq) else 0.0
        third = "".join(framed[i + 2] for i in range(0, len(framed) - 2, 3)
                        if framed[i + 2] in "ACGT")
        gc3 = gc_fraction(third) if third else 0.0
        orgs = []
        for name in ORGANISMS:
            ref_gc, ref_gc3 = organism_gc(name)
            orgs.append({"organism": name, "codon_ll": round(ll[name], 4),
                         "gc_distance": round(math.hypot(gc - ref_gc, gc3 - ref_gc3), 4)})
        orgs.sort(key=lambda o: -o["codon_ll"])
        return {"gc": round(gc, 4), "gc3": round(gc3, 4), "n_codons": n_codons,
                "nearest": orgs[0]["organism"] if n_codons else None, "organisms": orgs}

    def describe(self, d: dict[str, Any]) -> str:
        if not d["n_codons"]:
            return "too short for a codon signature"
        ranked = ", ".join(f"{o['organism']} (codon LL {o['codon_ll']:.2f}, GC dist "
                           f"{o['gc_distance']:.2f})" for o in d["organisms"])
        return f"GC {100 * d['gc']:.1f}%, GC3 {100 * d['gc3']:.1f}% over {d['n_codons']} codons; closest: {ranked}"
