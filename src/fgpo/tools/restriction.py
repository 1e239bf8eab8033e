"""Restriction-enzyme site scan with Bio.Restriction."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from Bio import Restriction
from Bio.Seq import Seq

from fgpo.errors import InputError
from fgpo.tools.base import Tool, register


@lru_cache(maxsize=None)
def enzyme_batch(names: tuple[str, ...]) -> Restriction.RestrictionBatch:
    bad = [n for n in names if not hasattr(Restriction, n)]
    if bad:
        raise InputError(f"unknown restriction enzyme(s) {bad}",
                         field="tools.enzymes")
    return Restriction.RestrictionBatch([getattr(Restriction, n) for n in names])


@register
class RestrictionSites(Tool):
    name = "restriction_sites"
    version = "1"
    description = "Restriction-enzyme recognition sites (Bio.Restriction, linear sequence)."

    def settings(self) -> dict[str, Any]:
        return {"enzymes": self.cfg.enzymes}

    def analyse(self, seq: str) -> dict[str, Any]:
        batch = enzyme_batch(tuple(self.cfg.enzymes))
        cuts = batch.search(Seq(seq), linear=True)
        sites = {}
        for enz in sorted(cuts, key=str):
            if cuts[enz]:
                pos = sorted(cuts[enz])
                # Biopython reports 1-based cut positions (first base after the cut); fst5 is the
                # cut offset from the recognition site's start, so the site starts at cut-1-fst5.
                sites[str(enz)] = {"site": str(enz.site), "cut_positions": pos,
                                   "site_starts": [p - 1 - enz.fst5 for p in pos]}
        return {"enzymes": list(self.cfg.enzymes), "sites": sites,
                "absent": [e for e in self.cfg.enzymes if e not in sites]}

    def describe(self, d: dict[str, Any]) -> str:
        if not d["sites"]:
            return f"no sites for {', '.join(d['enzymes'])}"
        present = "; ".join(f"{e} ({v['site']}) cuts at {', '.join(map(str, v['cut_positions'][:4]))}"
                            for e, v in d["sites"].items())
        return f"{present}; none for {', '.join(d['absent'])}"
