"""`ablation:` section of params.yaml (`make ablation`, ablation/dvc.yaml): the settings, the
estimators (names in the registry, every one by default) and the tool costs of the training runs
the ablation adds. Read by the `ablate` and `ablation_report` stages; the `cost_table` stage
reads only its tool costs (`fgpo.rewards.cost.ToolCosts`, which this extends).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fgpo.errors import InputError
from fgpo.rewards.cost import ToolCosts
from fgpo.train.estimators import ESTIMATORS


@dataclass
class AblationConfig(ToolCosts):
    """`ablation:` section of params.yaml (`make ablation`, after `make run`)."""

    reasoners: list[str] = field(default_factory=lambda: [
        "careful_expert", "overloaded_generalist", "first_block_anchored", "short_context",
        "tool_skeptic"])
    """Reasoners of the ablation's settings (each must have a table: reward_table.build)."""
    benchmarks: list[str] = field(default_factory=lambda: ["genomeqa"])
    """Benchmarks of its settings: reasoners x benchmarks."""
    estimators: list[str] = field(default_factory=lambda: list(ESTIMATORS))
    """Estimators trained at the main tool cost (reward_table.tool_cost); default: every
    registered one (`fgpo list-methods`). The decomposition needs fgpo, grpo, fgpo_std and
    dr_grpo among them."""
    cost_estimators: list[str] = field(default_factory=lambda: ["fgpo", "grpo", "dr_grpo"])
    """Estimators trained at every tool cost (the frontier's points)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("reasoners", "benchmarks", "estimators", "cost_estimators"):
            value = getattr(self, name)
            if not value or not all(isinstance(v, str) for v in value) \
                    or len(set(value)) != len(value):
                raise InputError(f"{name} must be a non-empty list of distinct names, got "
                                 f"{value!r}", field=f"ablation.{name}")
        for name in ("estimators", "cost_estimators"):
            bad = [m for m in getattr(self, name) if m not in ESTIMATORS]
            if bad:
                raise InputError(f"unknown estimator(s) {bad}; choose from {list(ESTIMATORS)} "
                                 f"(`fgpo list-methods`)", field=f"ablation.{name}")

    def methods_at(self, cost: float, main_cost: float, params: Any = None) -> list[str]:
        """The estimators trained at `cost`: all of `estimators` at the main cost, else
        `cost_estimators`; refuses a cost the section (of the file `params`) does not declare."""
        self.check(cost, main_cost, params)
        return list(self.estimators if float(cost) == float(main_cost) else self.cost_estimators)

    def settings(self) -> list[tuple[str, str]]:
        return [(r, b) for r in self.reasoners for b in self.benchmarks]
