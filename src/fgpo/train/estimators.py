"""The estimators `train.methods` can name: one import line each, below.

An estimator is one module on the interface of fgpo.train.base: a class decorated with
`@register`, carrying its `name`, its `Config` dataclass (the `train.<name>:` section of
params.yaml) and its loss. Importing the module registers it. The training config, the sweep's
search space, the CLI (`fgpo list-methods`) and, through `train.methods`, the report derive the
method names from `ESTIMATORS`; the loop looks an estimator up by name and knows nothing else
about it."""

from __future__ import annotations

# isort: off (the registry's order is the order of these lines: the default train.methods)
import fgpo.train.fgpo  # noqa: F401  FGPO: exact expectation over all 2^K subsets, from the table
import fgpo.train.grpo  # noqa: F401  GRPO: G sampled subsets per question, group-normalised
import fgpo.train.dr_grpo  # noqa: F401  Dr. GRPO: GRPO without the std division
import fgpo.train.rloo  # noqa: F401  RLOO: GRPO's sampling, a leave-one-out baseline
import fgpo.train.dapo_ds  # noqa: F401  GRPO with DAPO's dynamic sampling (constant groups redrawn)
import fgpo.train.fgpo_std  # noqa: F401  FGPO with the exact std normalisation
# isort: on

from fgpo.train.base import ESTIMATORS  # noqa: E402,F401


def describe() -> list[str]:
    """`fgpo list-methods`: each registered estimator, the first line of its module's docstring
    (the method and its paper) and its `train.<name>:` settings with their defaults."""
    import sys
    from dataclasses import fields

    out = []
    for name, est in ESTIMATORS.items():
        doc = (sys.modules[est.__module__].__doc__ or "").strip().splitlines()
        settings = ", ".join(f"{f.name}={f.default!r}" for f in fields(est.Config))
        out += [f"{name}: {doc[0] if doc else ''}",
                f"    train.{name}: {settings or '(no settings)'}"]
    return out
