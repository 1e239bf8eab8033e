"""When a study has stopped improving: the rule `fgpo tune` prints and the report's tuning table
shows (its own module, so the report reads it without importing the studies' machinery)."""

from __future__ import annotations

from typing import Sequence


def plateau_gain(values: Sequence[float], window: int) -> float | None:
    """How much the last `window` of a study's complete trials (in trial order) raised the best
    objective of those before them; None when there are no more trials than `window`."""
    if len(values) <= window:
        return None
    return float(max(values) - max(values[:-window]))


def still_improving(gain: float, tolerance: float) -> bool:
    """The last trials raised the best by at least the tie tolerance (noise does less)."""
    return gain >= tolerance
