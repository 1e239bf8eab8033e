"""`ablation:` section of params.yaml: the ablation's settings, estimators and tool costs
(`make ablation`, ablation/dvc.yaml). Read by the `cost_table`, `ablate` and `ablation_report`
stages; nothing here imports training code (the `ablate` stage checks the estimator names
against the registry)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fgpo.config import read_params
from fgpo.errors import InputError

ALL_ESTIMATORS = ["fgpo", "grpo", "dr_grpo", "rloo", "dapo_ds", "fgpo_std"]

@dataclass
class AblationConfig:
    """`ablation:` section of params.yaml (`make ablation`, after `make run`)."""

    reasoners: list[str] = field(default_factory=lambda: [
        "careful_expert", "overloaded_generalist", "first_block_anchored", "short_context",
        "tool_skeptic"])
    """Reasoners of the ablation's settings (each must have a table: reward_table.build)."""
    benchmarks: list[str] = field(default_factory=lambda: ["genomeqa"])
    """Benchmarks of its settings: reasoners x benchmarks."""
    estimators: list[str] = field(default_factory=lambda: list(ALL_ESTIMATORS))
    """Estimators trained at the main tool cost (reward_table.tool_cost); the decomposition
    needs fgpo, grpo, fgpo_std and dr_grpo among them."""
    tool_costs: list[float] = field(default_factory=lambda: [0.0, 0.01, 0.05])
    """Per-tool costs of the accuracy-vs-tools frontier; must include reward_table.tool_cost."""
    cost_estimators: list[str] = field(default_factory=lambda: ["fgpo", "grpo", "dr_grpo"])
    """Estimators trained at every tool cost (the frontier's points)."""

    def __post_init__(self) -> None:
        for name in ("reasoners", "benchmarks", "estimators", "cost_estimators"):
            value = getattr(self, name)
            if not value or not all(isinstance(v, str) for v in value) \
                    or len(set(value)) != len(value):
                raise InputError(f"{name} must be a non-empty list of distinct names, got "
                                 f"{value!r}", field=f"ablation.{name}")
        costs = self.tool_costs
        if not costs or len(set(costs)) != len(costs) or \
                not all(isinstance(c, (int, float)) and c >= 0 for c in costs):
            raise InputError(f"tool_costs must be distinct numbers >= 0, e.g. [0.0, 0.01, 0.05];"
                             f" got {costs!r}", field="ablation.tool_costs")
        self.tool_costs = [float(c) for c in costs]

    def methods_at(self, cost: float, main_cost: float, params: Any = None) -> list[str]:
        """The estimators trained at `cost`: all of `estimators` at the main cost, else
        `cost_estimators`; refuses a cost the section (of the file `params`) does not declare."""
        where = {"file": None if params is None else str(params), "field": "ablation.tool_costs"}
        if float(cost) not in self.tool_costs:
            raise InputError(f"tool cost {cost} is not in {self.tool_costs}", **where)
        if float(main_cost) not in self.tool_costs:
            raise InputError(f"the main tool cost {main_cost} (reward_table.tool_cost) must be "
                             f"one of tool_costs {self.tool_costs}: the estimator table and the "
                             f"decomposition are read there", **where)
        return list(self.estimators if float(cost) == float(main_cost) else self.cost_estimators)

    def check_estimators(self, registered: list[str], params: Any = None) -> None:
        """Refuse an estimator name the registry (fgpo.train.estimators) does not hold."""
        for name in ("estimators", "cost_estimators"):
            bad = [m for m in getattr(self, name) if m not in registered]
            if bad:
                raise InputError(f"unknown estimator(s) {bad}; choose from {registered}",
                                 file=None if params is None else str(params),
                                 field=f"ablation.{name}")

    def settings(self) -> list[tuple[str, str]]:
        return [(r, b) for r in self.reasoners for b in self.benchmarks]


def main_tool_cost(params: str | Path) -> float:
    """reward_table.tool_cost: the cost of the main pipeline's tables (read without the
    reasoner-building config)."""
    cost = (read_params(params).get("reward_table") or {}).get("tool_cost")
    if not isinstance(cost, (int, float)) or cost < 0:
        raise InputError(f"must be a number >= 0, got {cost!r}", file=str(params),
                         field="reward_table.tool_cost")
    return float(cost)


def cost_dir(cost: float) -> str:
    """The folder of one tool cost's outputs: cost0.0, cost0.01 (as DVC writes ${item.cost})."""
    return f"cost{float(cost)}"
