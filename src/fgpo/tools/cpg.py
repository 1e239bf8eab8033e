"""`cpg_islands`: CpG islands by the Gardiner-Garden & Frommer (1987) criteria."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgpo.tools.base import Tool, register

WINDOW = 200
"""Window length (bp); windows slide by 1 bp."""
MIN_GC = 0.5
"""A window qualifies if its G+C fraction is above this ..."""
MIN_OBS_EXP = 0.6
"""... and its CpG observed/expected ratio, CpG x length / (C x G), is above this."""
MAX_LISTED = 5
"""Islands spelled out in the prompt text (data lists them all)."""


# ---- helpers -------------------------------------------------------------------------------

def find_islands(seq: str, window: int = WINDOW) -> list[dict[str, Any]]:
    """Merge overlapping qualifying windows, then trim each merged region to its outer CpGs.

    The union of 200-bp windows overhangs a CpG-rich segment by up to ~half a window on each
    side (a window needs only > 100 G+C bases), so each island is trimmed to run from the C of
    its first CpG to the G of its last one. Sequences shorter than a window are one window.
    """
    n = len(seq)
    if n < 2:
        return []
    arr = np.frombuffer(seq.encode(), dtype=np.uint8)
    is_c, is_g = arr == ord("C"), arr == ord("G")
    is_cpg = np.zeros(n, dtype=bool)
    is_cpg[:-1] = is_c[:-1] & is_g[1:]
    # prefix sums: count over [i, j) = cum[j] - cum[i]
    cum_c, cum_g, cum_cpg = (np.concatenate(([0], np.cumsum(x))) for x in (is_c, is_g, is_cpg))
    w = min(window, n)
    starts = np.arange(n - w + 1)
    c = cum_c[starts + w] - cum_c[starts]
    g = cum_g[starts + w] - cum_g[starts]
    cpg = cum_cpg[starts + w - 1] - cum_cpg[starts]  # CpGs lying wholly inside the window
    gc = (c + g) / w
    with np.errstate(divide="ignore", invalid="ignore"):
        oe = np.where(c * g > 0, cpg * w / (c * g), 0.0)
    qualifying = starts[(gc > MIN_GC) & (oe > MIN_OBS_EXP)]

    regions: list[list[int]] = []
    for s in qualifying.tolist():
        if regions and s < regions[-1][1]:
            regions[-1][1] = s + w
        else:
            regions.append([s, s + w])
    islands: list[dict[str, Any]] = []
    cpg_pos = np.flatnonzero(is_cpg)
    for lo, hi in regions:
        inside = cpg_pos[(cpg_pos >= lo) & (cpg_pos + 1 < hi)]
        start, end = int(inside[0]), int(inside[-1]) + 2  # qualifying windows hold >= 1 CpG
        c_n, g_n = int(cum_c[end] - cum_c[start]), int(cum_g[end] - cum_g[start])
        cpg_n = int(cum_cpg[end - 1] - cum_cpg[start])
        islands.append({"start": start, "end": end, "gc": round((c_n + g_n) / (end - start), 4),
                        "obs_exp": round(cpg_n * (end - start) / (c_n * g_n), 4)})
    return islands


# ---- tool ----------------------------------------------------------------------------------

@register
class CpGIslands(Tool):
    name = "cpg_islands"
    version = "1"
    description = ("CpG islands (Gardiner-Garden & Frommer: 200-bp windows with G+C > 50% and "
                   "CpG obs/exp > 0.6, merged), with the fraction of the sequence covered")

    def analyse(self, seq: str) -> dict[str, Any]:
        islands = find_islands(seq)
        covered = sum(i["end"] - i["start"] for i in islands)
        return {"length": len(seq), "n_islands": len(islands), "islands": islands,
                "fraction_covered": round(covered / len(seq), 4) if seq else 0.0}

    def describe(self, data: dict[str, Any]) -> str:
        if not data["n_islands"]:
            return f"no CpG island in {data['length']} bp"
        listed = "; ".join(f"{i['start']}-{i['end']} (GC {100 * i['gc']:.0f}%, o/e "
                           f"{i['obs_exp']:.2f})" for i in data["islands"][:MAX_LISTED])
        more = "; …" if data["n_islands"] > MAX_LISTED else ""
        return (f"{data['n_islands']} CpG island(s) covering {100 * data['fraction_covered']:.1f}% "
                f"of {data['length']} bp: {listed}{more}")
