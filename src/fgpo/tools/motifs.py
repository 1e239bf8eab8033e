"""JASPAR motif scan: Biopython PSSM search with FPR thresholds computed once and cached.

Computing a PSSM's score distribution costs seconds per motif (far more than a scan), so each
(release, matrix, fpr, pseudocount) threshold is computed once and stored in a JSON cache.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from Bio import motifs as bio_motifs

from fgpo.config import cache_dir
from fgpo.errors import InputError
from fgpo.tools.base import Tool, register

_THRESHOLD_PRECISION = 10**3  # within 0.02 of 10**4, ten times faster


@lru_cache(maxsize=None)
def load_motif(release: str, matrix_id: str) -> bio_motifs.Motif:
    """A JASPAR matrix from the database that pyjaspar ships (offline)."""
    from pyjaspar import jaspardb

    db = jaspardb(release=release)
    motif = db.fetch_motif_by_id(matrix_id)
    if motif is None:
        raise InputError(f"JASPAR matrix {matrix_id!r} not in {release}",
                         field="tools.motif_ids")
    return motif


@lru_cache(maxsize=None)
def load_pssm(release: str, matrix_id: str, pseudocount: float):
    motif = load_motif(release, matrix_id)
    return motif.counts.normalize(pseudocounts=pseudocount).log_odds()


def pssm_threshold(release: str, matrix_id: str, fpr: float, pseudocount: float) -> float:
    """Score threshold at `fpr` under a uniform background, cached on disk."""
    key = f"{release}/{matrix_id}/fpr={fpr:g}/pc={pseudocount:g}/prec={_THRESHOLD_PRECISION}"
    path = cache_dir() / "motif_thresholds.json"
    cache: dict[str, float] = {}
    if path.exists():
        try:
            cache = json.loads(path.read_text())
        except json.JSONDecodeError:
            cache = {}  # a corrupt cache is only a cache: recompute
    if key not in cache:
        pssm = load_pssm(release, matrix_id, pseudocount)
        dist = pssm.distribution(precision=_THRESHOLD_PRECISION)
        cache[key] = float(dist.threshold_fpr(fpr))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(tmp, path)
    return cache[key]


def pssm_search(pssm, seq: str, threshold: float, both: bool) -> list[tuple[int, float]]:
    """Biopython's `pssm.search`, also for a sequence exactly one matrix wide.

    (Biopython 1.88 raises on 0-d score arrays when len(seq) == pssm.length.) Positions follow
    Biopython: reverse-strand hits are negative, position - len(seq).
    """
    if len(seq) < pssm.length:
        return []
    if len(seq) > pssm.length:
        return [(int(p), float(s)) for p, s in pssm.search(seq, threshold=threshold, both=both)]
    hits = []
    fwd = float(pssm.calculate(seq))
    if fwd >= threshold:
        hits.append((0, fwd))
    if both:
        rev = float(pssm.reverse_complement().calculate(seq))
        if rev >= threshold:
            hits.append((-len(seq), rev))
    return hits


def scan(pssm, threshold: float, seq: str) -> list[dict[str, Any]]:
    """All hits >= threshold on both strands as (start on + strand, strand, score), best first.

    Windows containing non-ACGT letters are skipped (Biopython scores them NaN).
    """
    n, width = len(seq), pssm.length
    hits = []
    for pos, score in pssm_search(pssm, seq, threshold, both=True):
        strand = "+" if pos >= 0 else "-"
        start = pos if pos >= 0 else pos + n
        if score != score:  # NaN
            continue
        hits.append({"start": start, "end": start + width, "strand": strand,
                     "score": round(float(score), 3)})
    hits.sort(key=lambda h: (-h["score"], h["start"], h["strand"]))
    return hits


@register
class MotifScan(Tool):
    name = "motif_scan"
    version = "1"
    description = "JASPAR transcription-factor motif scan (PSSM, both strands, FPR threshold)."

    def settings(self) -> dict[str, Any]:
        c = self.cfg
        return {"release": c.jaspar_release, "ids": c.motif_ids, "fpr": c.motif_fpr,
                "pc": c.motif_pseudocount, "max_hits": c.max_hits}

    def panel(self) -> list[tuple[str, str, Any, float]]:
        """(matrix id, TF name, PSSM, threshold) for every motif of the configured panel."""
        c = self.cfg
        return [(mid, load_motif(c.jaspar_release, mid).name,
                 load_pssm(c.jaspar_release, mid, c.motif_pseudocount),
                 pssm_threshold(c.jaspar_release, mid, c.motif_fpr, c.motif_pseudocount))
                for mid in c.motif_ids]

    def analyse(self, seq: str) -> dict[str, Any]:
        found = []
        for mid, tf, pssm, thr in self.panel():
            hits = scan(pssm, thr, seq)
            if hits:
                found.append({"matrix_id": mid, "tf": tf, "threshold": round(thr, 3),
                              "max_score": round(float(pssm.max), 3), "n_hits": len(hits),
                              "hits": hits[: self.cfg.max_hits]})
        found.sort(key=lambda m: -m["hits"][0]["score"] / m["max_score"])
        return {"release": self.cfg.jaspar_release, "fpr": self.cfg.motif_fpr,
                "motifs": found, "absent": [tf for mid, tf, _, _ in self.panel()
                                            if mid not in {m["matrix_id"] for m in found}]}

    def describe(self, d: dict[str, Any]) -> str:
        if not d["motifs"]:
            return f"no JASPAR motif hits (FPR {d['fpr']:g}) for the {len(d['absent'])} TFs scanned"
        parts = []
        for m in d["motifs"]:
            h = m["hits"][0]
            more = f", {m['n_hits']} hits" if m["n_hits"] > 1 else ""
            parts.append(f"{m['tf']} ({m['matrix_id']}) at {h['start']}({h['strand']}) score "
                         f"{h['score']:.1f}/{m['max_score']:.1f}{more}")
        return "hits: " + "; ".join(parts) + f"; none for {', '.join(d['absent'])}"
