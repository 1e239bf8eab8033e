"""`prepare:` section of params.yaml: every benchmark the pipeline runs, declared once.

Each entry is either a generated benchmark (`kind: generated`, named after its generator module)
or an imported labelled collection (`kind: imported`). `dvc.yaml` iterates over this section in
every stage (`foreach: ${prepare}`, `matrix: {benchmark: ${prepare}}`), and the report, the README
tables and the bench read the same list (`PrepareConfig.names`), so declaring a collection here is
all a user does before `dvc repro`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fgpo.config import check_number, from_dict, read_params
from fgpo.errors import InputError

GENERATORS = ("genomeqa", "seqcalc", "variant")
"""The generated benchmarks: one module `fgpo.benchmarks.<name>` each."""
KINDS = ("generated", "imported")

QUESTION_TEMPLATES = {
    "promoter": "Is this {n} bp {organism} sequence a promoter?",
    "enhancer": "Is this {n} bp {organism} sequence an enhancer?",
    "splice": "Does this {n} bp {organism} sequence contain a splice site?",
    "tf_binding": "Does this {n} bp {organism} sequence contain a transcription-factor binding site?",
}
PLACEHOLDERS = ("n", "organism")  # what `labelled_to_questions` formats a template with


def check_template(template: str) -> None:
    """Refuse a question template with placeholders other than {n} and {organism}."""
    allowed = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        unknown = sorted({f for f in fields if f.split(".")[0].split("[")[0] not in PLACEHOLDERS})
        if not unknown:
            template.format(n=81, organism="genomic")
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise InputError(f"bad question template {template!r} ({exc}); allowed placeholders: "
                         f"{allowed} (write {{{{ and }}}} for literal braces)",
                         field="--question") from None
    if unknown:
        raise InputError(f"unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)} in "
                         f"{template!r}; allowed: {allowed}", field="--question")


def generator_source(name: str) -> str:
    """The file DVC tracks as a generated benchmark's source: its generator module."""
    return f"src/fgpo/benchmarks/{name}.py"


def _check_split(split: list[float]) -> None:
    if len(split) != 3 or abs(sum(split) - 1) > 1e-6 or min(split) < 0:
        raise InputError(f"split must be three non-negative fractions summing to 1, got "
                         f"{split}", field="split")


@dataclass
class BenchmarkConfig:
    """How one benchmark is generated. Signal definitions (JASPAR release, FPR thresholds,
    enzymes, minimum ORF) define the ground truth and default to the tool defaults, so the
    tools' evidence re-derives every answer."""

    kind: str = "generated"
    """`generated` (this class) or `imported` (ImportConfig)."""
    source: str = ""
    """The benchmark's source as DVC tracks it: for a generated one, its generator module
    `src/fgpo/benchmarks/<name>.py` (dvc.yaml lists `${item.source}` as a dep of `prepare`)."""
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
        check_number(self.seed, "seed", "give an integer seed", integer=True)
        _check_split(self.split)


@dataclass
class ImportConfig:
    """A real labelled collection imported as yes/no questions (`fgpo.benchmarks.importer`).

    Either a CSV with a sequence and a 0/1 label column (`source` is the CSV file), or a FASTA
    pair (`source` is the folder holding both files; `positives` / `negatives` name them inside
    it). DVC tracks `source`, so a changed or missing file reruns `prepare` and all after it.
    Paths are relative to the repository root; the data may stay outside it (`../data/...`).
    """

    kind: str = "imported"
    source: str = ""
    """CSV file, or the folder of a FASTA pair (every file in it is a DVC dependency)."""
    family: str = ""
    """Question family and its default wording: promoter | enhancer | splice | tf_binding."""
    positives: str = ""
    """FASTA of the positives (label 1), relative to `source`; empty for a CSV collection."""
    negatives: str = ""
    """FASTA of the negatives (label 0), relative to `source`; empty for a CSV collection."""
    seq_col: str = "seq"
    """CSV column holding the sequence."""
    label_col: str = "label"
    """CSV column holding the 0/1 label."""
    organism: str = "genomic"
    """Word used in the question text, e.g. "E. coli"."""
    question: str = ""
    """Question template with {n} and {organism}; empty = the family's default wording."""
    seed: int = 0
    """Seed of the balanced subsample and of the split."""
    split: list[float] = field(default_factory=lambda: [0.6, 0.2, 0.2])
    """train / val / test fractions (stratified); must sum to 1."""
    max_per_class: int | None = None
    """Keep at most this many records per class (seeded, balanced); null = every record."""

    def __post_init__(self) -> None:
        if not self.source:
            raise InputError("an imported collection needs `source` (its CSV file, or the "
                             "folder of its FASTA pair)", field="source")
        if not self.family:
            raise InputError("an imported collection needs `family` (e.g. promoter)",
                             field="family")
        if self.question:
            try:
                check_template(self.question)
            except InputError as exc:
                raise InputError(exc.message, field="question") from None
        elif self.family not in QUESTION_TEMPLATES:
            raise InputError(f"no default wording for family {self.family!r} (known: "
                             f"{sorted(QUESTION_TEMPLATES)}); give `question`, a template with "
                             "{n} and {organism}", field="family")
        check_number(self.seed, "seed", "give an integer seed", integer=True)
        if bool(self.positives) != bool(self.negatives):
            raise InputError("a FASTA pair needs both `positives` and `negatives` (file names "
                             "inside `source`); a CSV collection needs neither",
                             field="positives" if not self.positives else "negatives")
        if self.max_per_class is not None:
            check_number(self.max_per_class, "max_per_class",
                         "write null to keep every record", ge=1, integer=True)
        _check_split(self.split)

    @property
    def is_fasta_pair(self) -> bool:
        return bool(self.positives)

    def files(self) -> list[Path]:
        """The source files the importer reads."""
        src = Path(self.source)
        if self.is_fasta_pair:
            return [src / self.positives, src / self.negatives]
        return [src]

    def check_files(self, where: str, params: str) -> None:
        """Refuse a missing source (naming the params field) before anything is written."""
        src = Path(self.source)
        if self.is_fasta_pair and not src.is_dir():
            raise InputError(f"source {self.source!r} must be the folder holding the FASTA "
                             f"pair {self.positives!r} / {self.negatives!r}"
                             + ("" if src.exists() else " (not found)"),
                             file=params, field=f"{where}.source")
        for key, path in zip(("positives", "negatives") if self.is_fasta_pair else ("source",),
                             self.files()):
            if not path.is_file():
                raise InputError(f"source file not found: {path}", file=params,
                                 field=f"{where}.{key}")


Benchmark = BenchmarkConfig | ImportConfig


@dataclass
class PrepareConfig:
    """`prepare:` section: one entry per benchmark name, in the order stages and tables use."""

    benchmarks: dict[str, Benchmark] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.benchmarks)

    def __getitem__(self, name: str) -> Benchmark:
        if name not in self.benchmarks:
            raise InputError(f"unknown benchmark {name!r}; declared: {self.names}",
                             field="prepare")
        return self.benchmarks[name]

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> PrepareConfig:
        """Parse `prepare:`; every error names its `prepare.<name>...` field."""
        if not isinstance(section, dict) or not section:
            raise InputError("declare at least one benchmark (e.g. genomeqa: {kind: generated, "
                             "source: src/fgpo/benchmarks/genomeqa.py})", field="prepare")
        out: dict[str, Benchmark] = {}
        for name, entry in section.items():
            where = f"prepare.{name}"
            if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
                raise InputError(f"benchmark name {name!r} must be letters, digits, '_' or '-' "
                                 "(it becomes a file name and a DVC stage key)", field=where)
            if not isinstance(entry, dict):
                raise InputError(f"expected a mapping, got {type(entry).__name__}", field=where)
            kind = entry.get("kind", "generated")
            if kind not in KINDS:
                raise InputError(f"kind must be one of {list(KINDS)}, got {kind!r}",
                                 field=f"{where}.kind")
            if kind == "generated":
                if name not in GENERATORS:
                    raise InputError(f"no generator named {name!r} (generated benchmarks: "
                                     f"{list(GENERATORS)}); an imported collection needs "
                                     "`kind: imported`", field=where)
                out[name] = from_dict(BenchmarkConfig, entry, where=where)
                if out[name].source != generator_source(name):
                    raise InputError(f"source must be {generator_source(name)!r}, the generator "
                                     "module DVC tracks", field=f"{where}.source")
            else:
                if name in GENERATORS:
                    raise InputError(f"{name!r} is a generated benchmark's name; give the "
                                     "imported collection another name", field=where)
                out[name] = from_dict(ImportConfig, entry, where=where)
        return cls(benchmarks=out)


def load_prepare(params: str | Path) -> PrepareConfig:
    """The `prepare:` section of `params` (a benchmark declared twice is refused on reading)."""
    data = read_params(params)
    if "prepare" not in data:
        raise InputError("missing section 'prepare'", file=str(params))
    try:
        return PrepareConfig.from_section(data["prepare"])
    except InputError as exc:
        if exc.file is None:
            raise InputError(exc.message, file=str(params), record=exc.record,
                             field=exc.field) from exc
        raise
