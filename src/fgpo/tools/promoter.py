"""`promoter_elements`: sigma-70 -35/-10 boxes, TATA box and Inr on the + strand."""

from __future__ import annotations

from typing import Any

import numpy as np
from Bio.Data.IUPACData import ambiguous_dna_values

from fgpo.tools.base import Tool, register

BOX_35, BOX_10 = "TTGACA", "TATAAT"
SPACERS = sorted(range(15, 20), key=lambda s: (abs(s - 17), s))
"""Allowed -35/-10 spacer lengths, in tie-break order (17 bp is the optimum)."""
TATA, INR = "TATAWAWR", "YYANWYY"
MAX_LISTED = 5
"""Inr positions spelled out in the prompt text (data lists them all)."""


# ---- helpers -------------------------------------------------------------------------------

def match_counts(seq: str, pattern: str) -> np.ndarray:
    """Matching positions of IUPAC `pattern` at each start of `seq` (non-ACGT never match)."""
    n = len(seq) - len(pattern) + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    arr = np.frombuffer(seq.encode(), dtype=np.uint8)
    counts = np.zeros(n, dtype=np.int64)
    for k, code in enumerate(pattern):
        allowed = np.frombuffer(ambiguous_dna_values[code].encode(), dtype=np.uint8)
        counts += np.isin(arr[k:k + n], allowed)
    return counts


def best_sigma70(seq: str) -> dict[str, Any] | None:
    """Best -35/-10 pair: most consensus matches, then spacer nearest 17, then leftmost."""
    m35, m10 = match_counts(seq, BOX_35), match_counts(seq, BOX_10)
    best: dict[str, Any] | None = None
    for spacer in SPACERS:
        offset = len(BOX_35) + spacer  # -10 start minus -35 start
        if offset >= len(m35):
            continue
        scores = m35[:len(m35) - offset] + m10[offset:]
        i = int(np.argmax(scores))
        if best is None or scores[i] > best["matches"]:
            j = i + offset
            best = {"box35_start": i, "box35": seq[i:i + len(BOX_35)], "box10_start": j,
                    "box10": seq[j:j + len(BOX_10)], "spacer": spacer, "matches": int(scores[i])}
    return best


def best_tata(seq: str) -> dict[str, Any] | None:
    """Leftmost TATAWAWR site with the fewest mismatches."""
    counts = match_counts(seq, TATA)
    if not len(counts):
        return None
    i = int(np.argmax(counts))
    return {"start": i, "site": seq[i:i + len(TATA)], "mismatches": len(TATA) - int(counts[i])}


# ---- tool ----------------------------------------------------------------------------------

@register
class PromoterElements(Tool):
    name = "promoter_elements"
    version = "1"
    description = ("+ strand only: best sigma-70 -35 (TTGACA) / -10 (TATAAT) pair with 15-19 bp "
                   "spacer, best TATA box (TATAWAWR) and exact Inr (YYANWYY) sites")

    def analyse(self, seq: str) -> dict[str, Any]:
        inr = np.flatnonzero(match_counts(seq, INR) == len(INR))
        return {"length": len(seq), "sigma70": best_sigma70(seq), "tata": best_tata(seq),
                "inr_starts": [int(i) for i in inr]}

    def describe(self, data: dict[str, Any]) -> str:
        s70, tata, inr = data["sigma70"], data["tata"], data["inr_starts"]
        s70_text = (f"-35 {s70['box35']} at {s70['box35_start']}, -10 {s70['box10']} at "
                    f"{s70['box10_start']} (spacer {s70['spacer']}, {s70['matches']}/"
                    f"{len(BOX_35) + len(BOX_10)} matches)"
                    if s70 else "sigma-70 pair: sequence too short")
        tata_text = (f"TATA box {tata['site']} at {tata['start']} ({tata['mismatches']} "
                     f"mismatch{'' if tata['mismatches'] == 1 else 'es'})"
                     if tata else "TATA box: sequence too short")
        more = ", …" if len(inr) > MAX_LISTED else ""
        listed = ", ".join(str(i) for i in inr[:MAX_LISTED]) + more
        inr_text = f"Inr x{len(inr)}" + (f" at {listed}" if inr else "")
        return f"+ strand: {s70_text}; {tata_text}; {inr_text}"
