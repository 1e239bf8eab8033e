"""The frontier's tables: `frontier:` section's view that the `frontier_tools` and
`frontier_table` stages read (the section's training keys are `fgpo.train.frontier`, which
extends this), where the frontier's files live, and the params a K's stage code reads.

A K's tools are the first K of `tool_order`, which begins with the main pipeline's
`tools.names`: at the main K the frontier's tool outputs and tables are copies of the main
pipeline's (byte for byte, so DVC's cache stores them once and the train stage's runs are read
back); at every other K they are built.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from fgpo.config import DEFAULT_PARAMS, load_part, read_params
from fgpo.errors import InputError
from fgpo.seqio import read_parquet_metadata

TOOL_ORDER = ["composition", "motif_scan", "orf_finder", "splice_sites", "restriction_sites",
              "organism_signature", "kmer_profile", "seq_compare", "cpg_islands",
              "promoter_elements"]
"""The default six of `tools.names`, then the extended four (`fgpo list-tools`)."""


@dataclass
class FrontierTables:
    """The tool counts and settings of `frontier:` (`make frontier`): the tables' view."""

    tool_order: list[str] = field(default_factory=lambda: list(TOOL_ORDER))
    """Tools in the order they are added: K tools = the first K. Must begin with tools.names."""
    ks: list[int] = field(default_factory=lambda: [4, 6, 8])
    """Tool counts on the frontier (the main pipeline's K, len(tools.names), among them reuses
    its tables and runs)."""
    reasoners: list[str] = field(default_factory=lambda: ["careful_expert"])
    """Reasoners of the frontier's settings (each in reward_table.reasoners)."""
    benchmarks: list[str] = field(default_factory=lambda: ["genomeqa", "seqcalc"])
    """Benchmarks of its settings: reasoners x benchmarks."""

    def __post_init__(self) -> None:
        for name in ("tool_order", "reasoners", "benchmarks"):
            value = getattr(self, name)
            if not isinstance(value, list) or not value \
                    or not all(isinstance(v, str) for v in value) or len(set(value)) != len(value):
                raise InputError(f"{name} must be a non-empty list of distinct names, got "
                                 f"{value!r}", field=f"frontier.{name}")
        n = len(self.tool_order)
        if not isinstance(self.ks, list) or len(set(self.ks)) != len(self.ks) or not all(
                isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= n for k in self.ks):
            raise InputError(f"ks must be a list of distinct tool counts in 1..{n} (the length "
                             f"of tool_order), got {self.ks!r}", field="frontier.ks")

    @classmethod
    def load(cls, params: str | Path = DEFAULT_PARAMS) -> FrontierTables:
        return load_part(cls, "frontier", params)

    def check(self, main_tools: list[str]) -> None:
        """tool_order begins with the main pipeline's tools.names, so that its K is this
        order's too."""
        if self.tool_order[:len(main_tools)] != list(main_tools):
            raise InputError(f"tool_order must begin with tools.names {main_tools} (the main "
                             f"pipeline's tools, whose tables and runs the frontier reuses), "
                             f"got {self.tool_order}", field="frontier.tool_order")

    def tools_at(self, k: int, main_tools: list[str]) -> list[str]:
        """The tools of K = k, one of ks: the first k of tool_order."""
        self.check(main_tools)
        if k not in self.ks:
            raise InputError(f"K = {k} is not in frontier.ks {self.ks}", field="frontier.ks")
        return list(self.tool_order[:k])

    def settings(self) -> list[tuple[str, str]]:
        return [(r, b) for r in self.reasoners for b in self.benchmarks]


# ---- where the frontier's files live --------------------------------------------------------

def k_dir(data: Path, k: int) -> Path:
    return data / "frontier" / f"K{k}"


def tool_outputs_path(data: Path, k: int, benchmark: str) -> Path:
    return k_dir(data, k) / "tool_outputs" / f"{benchmark}.parquet"


def tables_root(data: Path, k: int) -> Path:
    return k_dir(data, k) / "reward_tables"


@contextmanager
def derived_params(params: Path, tools: list[str], seeds: list[int] | None = None,
                   fraction: float | None = None) -> Iterator[Path]:
    """`params` with tools.names = `tools` (and train.seeds, train.train_fraction when given),
    as a temporary file beside it (hidden, removed afterwards) for the stage code that reads a
    params file: the files read beside params.yaml (tune/tuned.yaml, sweeps/best.yaml) are
    the same."""
    raw = read_params(params)
    raw["tools"] = {**(raw.get("tools") or {}), "names": list(tools)}
    train = dict(raw.get("train") or {})
    if seeds is not None:
        train["seeds"] = list(seeds)
    if fraction is not None:
        train["train_fraction"] = float(fraction)
    raw["train"] = train
    with tempfile.NamedTemporaryFile("w", dir=Path(params).parent, prefix=".params.frontier-",
                                     suffix=".yaml", delete=False) as fh:
        fh.write(yaml.safe_dump(raw, sort_keys=False))
    path = Path(fh.name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def reuse_main(main_file: Path, out: Path, expect: dict, rebuild: str) -> Path:
    """The main pipeline's file (tool outputs or a table) copied to `out`, byte for byte, after
    checking its metadata holds `expect` (the same tools as this K's)."""
    meta = read_parquet_metadata(main_file, rebuild=rebuild)
    for key, value in expect.items():
        if meta.get(key) != value:
            raise InputError(f"built for {key} {meta.get(key)!r}, not the frontier's {value!r}; "
                             f"rebuild it with {rebuild}", file=str(main_file), field=key)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.copyfile(main_file, tmp)
    tmp.replace(out)
    return out
