"""`prepare:` section of params.yaml: one BenchmarkConfig per benchmark."""

from __future__ import annotations

from dataclasses import dataclass, field

from fgpo.errors import InputError


@dataclass
class BenchmarkConfig:
    """How one benchmark is generated. Signal definitions (JASPAR release, FPR thresholds,
    enzymes, minimum ORF) define the ground truth and default to the tool defaults, so the
    tools' evidence re-derives every answer."""

    n_questions: int = 1200
    """Total questions, spread evenly over the families (>= 1 per family)."""
    families: list[str] = field(default_factory=list)
    """Families to generate; empty = all of the benchmark's families."""
    seed: int = 0
    """RNG seed. Question i of family f uses its own stream seeded by (seed, f, i)."""
    split: list[float] = field(default_factory=lambda: [0.6, 0.2, 0.2])
    """train / val / test fractions (stratified by family); must sum to 1."""
    jaspar_release: str = "JASPAR2024"
    """JASPAR release (pyjaspar) of the planted TF matrices."""
    motif_fpr: float = 1.0e-4
    """A TF site is 'present' when its PSSM scores at or above the FPR-1e-4 threshold."""
    splice_fpr: float = 1.0e-3
    """A splice site is 'present' above the consensus PSSM's FPR threshold."""
    orf_min_aa: int = 20
    """Shortest ORF that counts (codons)."""

    def __post_init__(self) -> None:
        if self.n_questions < 1:
            raise InputError("n_questions must be >= 1", field="n_questions")
        if len(self.split) != 3 or abs(sum(self.split) - 1) > 1e-6 or min(self.split) < 0:
            raise InputError(f"split must be three non-negative fractions summing to 1, got "
                             f"{self.split}", field="split")


@dataclass
class PrepareConfig:
    """`prepare:` section: one entry per benchmark name."""

    genomeqa: BenchmarkConfig = field(default_factory=lambda: BenchmarkConfig(seed=11))
    seqcalc: BenchmarkConfig = field(default_factory=lambda: BenchmarkConfig(seed=12))
    variant: BenchmarkConfig = field(default_factory=lambda: BenchmarkConfig(seed=13))
