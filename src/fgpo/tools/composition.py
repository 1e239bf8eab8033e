"""Base composition: GC fraction, GC skew, CpG observed/expected, melting temperature."""

from __future__ import annotations

from typing import Any

from Bio.SeqUtils import MeltingTemp, gc_fraction

from fgpo.tools.base import Tool, register


def cpg_observed_expected(seq: str) -> float:
    """CpG o/e = N(CG) * L / (N(C) * N(G)) (Gardiner-Garden & Frommer 1987); 0 if no C or G."""
    c, g = seq.count("C"), seq.count("G")
    return seq.count("CG") * len(seq) / (c * g) if c and g else 0.0


def gc_skew(seq: str) -> float:
    """(G - C) / (G + C) over the whole sequence; 0 if neither occurs."""
    c, g = seq.count("C"), seq.count("G")
    return (g - c) / (g + c) if g + c else 0.0


def melting_temp(seq: str) -> float:
    """Nearest-neighbour Tm (Biopython Tm_NN defaults: DNA_NN3, 50 mM Na+, 25 nM oligo)."""
    acgt = "".join(b for b in seq if b in "ACGT")
    return float(MeltingTemp.Tm_NN(acgt)) if len(acgt) >= 2 else float("nan")


@register
class Composition(Tool):
    name = "composition"
    version = "1"
    description = "GC content, GC skew, CpG observed/expected ratio and nearest-neighbour Tm."

    def analyse(self, seq: str) -> dict[str, Any]:
        return {
            "length": len(seq),
            "gc_fraction": float(gc_fraction(seq, ambiguous="remove")),  # over A/C/G/T only
            "gc_skew": gc_skew(seq),
            "cpg_oe": cpg_observed_expected(seq),
            "cpg_count": seq.count("CG"),
            "n_ambiguous": sum(b not in "ACGT" for b in seq),
            "tm_nn": round(melting_temp(seq), 2),
        }

    def describe(self, d: dict[str, Any]) -> str:
        return (f"length {d['length']} bp; GC {100 * d['gc_fraction']:.1f}%; GC skew "
                f"{d['gc_skew']:+.2f}; CpG o/e {d['cpg_oe']:.2f} ({d['cpg_count']} CpG); "
                f"Tm(NN) {d['tm_nn']:.1f} C")
