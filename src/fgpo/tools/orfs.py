"""Open reading frames on both strands and their translation (Biopython's standard table)."""

from __future__ import annotations

from typing import Any

from Bio.Seq import Seq

from fgpo.tools.base import Tool, register

STOPS = ("TAA", "TAG", "TGA")


def find_orfs(seq: str, min_aa: int) -> list[dict[str, Any]]:
    """ATG..stop ORFs (stop included) in all six frames, longest first.

    Coordinates are 0-based half-open on the + strand; `frame` is 0..2 from the strand's 5' end.
    An ORF runs from the first ATG after the previous in-frame stop (the longest ORF of that
    stretch). ORFs without a stop codon before the end are not reported.
    """
    n = len(seq)
    rc = str(Seq(seq).reverse_complement())
    orfs = []
    for strand, s in (("+", seq), ("-", rc)):
        for frame in range(3):
            start = None
            for i in range(frame, n - 2, 3):
                codon = s[i:i + 3]
                if start is None and codon == "ATG":
                    start = i
                elif start is not None and codon in STOPS:
                    end = i + 3
                    n_aa = (end - start) // 3 - 1
                    if n_aa >= min_aa:
                        protein = str(Seq(s[start:end]).translate(to_stop=True))
                        a, b = (start, end) if strand == "+" else (n - end, n - start)
                        orfs.append({"start": a, "end": b, "strand": strand, "frame": frame,
                                     "length_nt": end - start, "n_aa": n_aa,
                                     "protein": protein})
                    start = None
    orfs.sort(key=lambda o: (-o["length_nt"], o["start"], o["strand"]))
    return orfs


@register
class OrfFinder(Tool):
    name = "orf_finder"
    version = "1"
    description = "Open reading frames (ATG..stop) on both strands with their translated peptides."

    def settings(self) -> dict[str, Any]:
        return {"min_aa": self.cfg.orf_min_aa}

    def analyse(self, seq: str) -> dict[str, Any]:
        orfs = find_orfs(seq, self.cfg.orf_min_aa)
        return {"n_orfs": len(orfs), "min_aa": self.cfg.orf_min_aa, "orfs": orfs[:10],
                "longest": orfs[0] if orfs else None}

    def describe(self, d: dict[str, Any]) -> str:
        if not d["orfs"]:
            return f"no ORF of >= {d['min_aa']} codons on either strand"
        parts = []
        for o in d["orfs"][:3]:
            pep = o["protein"] if len(o["protein"]) <= 12 else o["protein"][:12] + "..."
            parts.append(f"{o['length_nt']} nt {o['strand']} strand {o['start']}-{o['end']} "
                         f"({o['n_aa']} aa: {pep})")
        return f"{d['n_orfs']} ORF(s) >= {d['min_aa']} aa; longest: " + "; ".join(parts)
