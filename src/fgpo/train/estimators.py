"""The estimators `train.methods` can name: the one list of them.

An estimator is one module on the interface of fgpo.train.base: a class with its `name`, its
`Config` dataclass (the `train.<name>:` section of params.yaml) and its loss, plus one entry in
the tuple below. The training config, the sweep's search space, the CLI and (through
`train.methods`) the report derive the method names from this registry; the loop looks the
estimator up by name and knows nothing else about it."""

from __future__ import annotations

from fgpo.train.fgpo import FGPO
from fgpo.train.grpo import GRPO

ESTIMATORS = {e.name: e for e in (
    FGPO,   # exact expectation over all 2^K subsets, from the table
    GRPO,   # G sampled subsets per question, group-normalised
)}
