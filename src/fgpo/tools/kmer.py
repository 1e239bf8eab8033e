"""`kmer_profile`: k-mer entropy, top trinucleotides, homopolymers, tandem repeats, DUST score."""

from __future__ import annotations

import math
from collections import Counter
from itertools import groupby
from typing import Any

from fgpo.tools.base import Tool, register

ACGT = frozenset("ACGT")
DUST_THRESHOLD = 2.0
"""DUST score above which a sequence is called low complexity: dustmasker/sdust's level T = 20
masks where 10 x score > T, i.e. score > 2.0. Like them we apply it to 64-bp windows (the
whole-sequence score grows ~ l/128 on random DNA, ~7.8 at 1 kb, so it cannot take a fixed
threshold); a sequence is low complexity if any window scores above it."""
DUST_WINDOW = 64
MAX_UNIT = 6
MIN_COPIES = 3


# ---- helpers -------------------------------------------------------------------------------

def kmer_counts(seq: str, k: int) -> Counter[str]:
    """Counts of overlapping k-mers made only of A/C/G/T (k-mers touching N etc. are skipped)."""
    return Counter(w for w in (seq[i:i + k] for i in range(len(seq) - k + 1)) if set(w) <= ACGT)


def shannon_entropy(counts: Counter[str]) -> float:
    """Shannon entropy (bits) of the empirical distribution given by `counts`."""
    total = sum(counts.values())
    return sum(-(c / total) * math.log2(c / total) for c in counts.values())


def dust_score(triplets: Counter[str]) -> float:
    """Symmetric DUST score: sum_t c_t (c_t - 1) / 2 over triplets, divided by (l - 1)."""
    n = sum(triplets.values())
    return sum(c * (c - 1) / 2 for c in triplets.values()) / (n - 1) if n > 1 else 0.0


def max_window_dust(seq: str, window: int = DUST_WINDOW) -> float:
    """Highest DUST score over all `window`-bp windows (the whole sequence if shorter)."""
    tri = [seq[i:i + 3] if set(seq[i:i + 3]) <= ACGT else None for i in range(len(seq) - 2)]
    width = max(window - 2, 1)  # triplets per window
    counts: Counter[str] = Counter(t for t in tri[:width] if t)
    r = sum(c * (c - 1) // 2 for c in counts.values())
    n = sum(counts.values())
    best = r / (n - 1) if n > 1 else 0.0
    # slide one base: adding a triplet seen c times adds c pairs, removing one drops c - 1
    for old, new in zip(tri, tri[width:]):
        if old:
            counts[old] -= 1
            r, n = r - counts[old], n - 1
        if new:
            r, n = r + counts[new], n + 1
            counts[new] += 1
        if n > 1:
            best = max(best, r / (n - 1))
    return best


def longest_homopolymer(seq: str) -> dict[str, Any] | None:
    """Longest run of one A/C/G/T base (earliest on ties)."""
    best, pos = None, 0
    for base, run in groupby(seq):
        length = len(list(run))
        if base in ACGT and (best is None or length > best["length"]):
            best = {"base": base, "length": length, "start": pos}
        pos += length
    return best


def best_tandem_repeat(seq: str) -> dict[str, Any] | None:
    """Longest exact tandem repeat with a 1..6 bp unit and >= 3 full copies.

    A maximal run of s[j] == s[j+u] of length r marks a period-u stretch of r + u bases.
    Ties go to the shorter unit, then the earlier start, so 'CACA' never beats 'CA'.
    """
    best, best_key = None, None
    for u in range(1, MAX_UNIT + 1):
        j = 0
        while j < len(seq) - u:
            r = 0
            while j + r + u < len(seq) and seq[j + r] == seq[j + r + u] and seq[j + r] in ACGT:
                r += 1
            copies = (r + u) // u
            key = (copies * u, -u, -j)
            if copies >= MIN_COPIES and (best_key is None or key > best_key):
                best_key = key
                best = {"unit": seq[j:j + u], "copies": copies, "start": j, "length": copies * u}
            j += r + 1
    return best


# ---- tool ----------------------------------------------------------------------------------

@register
class KmerProfile(Tool):
    name = "kmer_profile"
    version = "1"
    description = ("k-mer complexity: 2/3-mer entropy, top trinucleotides, longest homopolymer, "
                   "best short tandem repeat and DUST low-complexity score")

    def analyse(self, seq: str) -> dict[str, Any]:
        tri = kmer_counts(seq, 3)
        window_dust = max_window_dust(seq)
        return {
            "length": len(seq),
            "entropy_2mer": round(shannon_entropy(kmer_counts(seq, 2)), 4),
            "entropy_3mer": round(shannon_entropy(tri), 4),
            "top_trinucleotides": [[t, c] for t, c in
                                   sorted(tri.items(), key=lambda kv: (-kv[1], kv[0]))[:3]],
            "homopolymer": longest_homopolymer(seq),
            "tandem_repeat": best_tandem_repeat(seq),
            "dust_score": round(dust_score(tri), 4),
            "dust_window_max": round(window_dust, 4),
            "low_complexity": window_dust > DUST_THRESHOLD,
        }

    def describe(self, data: dict[str, Any]) -> str:
        top = ", ".join(f"{t} x{c}" for t, c in data["top_trinucleotides"]) or "none"
        hp = data["homopolymer"]
        hp_text = f"{hp['base']} x{hp['length']} at {hp['start']}" if hp else "none"
        tr = data["tandem_repeat"]
        tr_text = f"({tr['unit']})x{tr['copies']} at {tr['start']}" if tr else "none"
        return (f"2-mer H {data['entropy_2mer']:.2f} bits, 3-mer H {data['entropy_3mer']:.2f} "
                f"bits; top 3-mers {top}; longest homopolymer {hp_text}; tandem repeat {tr_text}; "
                f"DUST score {data['dust_score']:.2f}, max {DUST_WINDOW}-bp window "
                f"{data['dust_window_max']:.2f} "
                f"(low complexity: {'yes' if data['low_complexity'] else 'no'})")
