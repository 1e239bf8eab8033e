"""The estimators `train.methods` can name: one module each (the interface is fgpo.train.base),
one line here. The loop looks them up by name and knows nothing else about them."""

from __future__ import annotations

from fgpo.train.fgpo import FGPO
from fgpo.train.grpo import GRPO

ESTIMATORS = {
    "fgpo": FGPO,   # exact expectation over all 2^K subsets, from the table
    "grpo": GRPO,   # G sampled subsets per question, group-normalised
}
