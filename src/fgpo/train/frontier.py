"""`frontier:` section of params.yaml (`make frontier`, frontier/dvc.yaml): accuracy against
reasoner calls. Extends the tables' view (`fgpo.rewards.frontier`: tool counts and settings)
with the runs: the exact estimator's sub-table fractions, the sampled estimators, the seeds,
and the report's budgets. Read by the `frontier_train` and `frontier_report` stages.

At the main K the frontier's runs on the whole split are the train stage's (and the
ablation's), read back from the runs cache. Every K trains with the main K's tuned values
(tune/tuned.yaml): tuning at each K would multiply the tuning budget by the number of K.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fgpo.errors import InputError
from fgpo.rewards.frontier import FrontierTables
from fgpo.train.estimators import ESTIMATORS


@dataclass
class FrontierConfig(FrontierTables):
    """`frontier:` section of params.yaml (`make frontier`, after `make run`)."""

    exact: str = "fgpo"
    """The enumerating estimator, trained on each sub-table fraction of the train split."""
    fractions: list[float] = field(default_factory=lambda: [0.05, 0.1, 0.25, 0.5, 1.0])
    """Fractions of the train questions the exact estimator's sub-tables hold (train_fraction)."""
    sampled: list[str] = field(default_factory=lambda: ["grpo", "dr_grpo", "rloo"])
    """Sampled estimators, trained on the whole train split; their budgets are their
    validation points along the run."""
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    """Training seeds of every frontier run (the train stage's runs of the same seeds are
    reused at the main K)."""
    budgets: int = 24
    """Budgets (distinct reasoner calls) on the report's axis, log-spaced from the smallest
    nonzero point's calls to the largest."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.sampled, list) or not self.sampled or not all(
                isinstance(m, str) for m in self.sampled) or len(set(self.sampled)) != len(
                self.sampled):
            raise InputError(f"sampled must be a non-empty list of distinct estimator names, "
                             f"got {self.sampled!r}", field="frontier.sampled")
        for name in (self.exact, *self.sampled):
            if name not in ESTIMATORS:
                raise InputError(f"unknown estimator {name!r}; choose from {list(ESTIMATORS)} "
                                 f"(`fgpo list-methods`)", field="frontier.sampled"
                                 if name in self.sampled else "frontier.exact")
        if self.exact in self.sampled:
            raise InputError(f"{self.exact!r} is both the exact estimator and a sampled one; "
                             "list it once", field="frontier.sampled")
        if not isinstance(self.fractions, list) or not self.fractions or any(
                isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1
                for f in self.fractions) or len(set(self.fractions)) != len(self.fractions):
            raise InputError(f"fractions must be distinct numbers in (0, 1], e.g. [0.1, 0.5, "
                             f"1.0], got {self.fractions!r}", field="frontier.fractions")
        if not isinstance(self.seeds, list) or not self.seeds or len(set(self.seeds)) != len(
                self.seeds) or not all(isinstance(s, int) and not isinstance(s, bool)
                                       for s in self.seeds):
            raise InputError(f"seeds must be a non-empty list of distinct integers, got "
                             f"{self.seeds!r}", field="frontier.seeds")
        if isinstance(self.budgets, bool) or not isinstance(self.budgets, int) \
                or self.budgets < 2:
            raise InputError(f"budgets must be an integer >= 2, got {self.budgets!r}",
                             field="frontier.budgets")

    def runs(self) -> list[tuple[str, float]]:
        """(method, train fraction) of every run of a setting and seed: the exact estimator
        at each fraction, each sampled one on the whole split."""
        return [(self.exact, float(f)) for f in sorted(self.fractions)] + [
            (m, 1.0) for m in self.sampled]


def train_dir(data: Path, k: int, reasoner: str, benchmark: str) -> Path:
    """One setting's frontier runs at K = k: points.parquet, choices.parquet and, per train
    fraction f<f>/, the train stage's per-method outputs."""
    return data / "frontier" / "train" / f"K{k}" / reasoner / benchmark


def runs_root(k: int, fraction: float, main_k: int) -> Path:
    """The runs cache of (K, fraction): the train stage's own (runs/) at the main K on the
    whole split, so its runs (and the ablation's at the main cost) are read back."""
    if k == main_k and float(fraction) == 1.0:
        return Path("runs")
    return Path("runs") / "frontier" / f"K{k}" / f"f{float(fraction)}"
