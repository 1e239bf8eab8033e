"""The tool set: every registered tool, the `tools:` section that picks and orders them
(`ToolsConfig`), `build_tools`, and the fingerprint that files built from tool outputs record.

Importing this module registers every tool (the default six, then the extended ones for
K > 6). Code that only needs subset masks (`fgpo.tools.subsets`) or the output type
(`fgpo.tools.base.ToolOutput`) imports those alone and so does not depend on any tool.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from fgpo.errors import InputError
# isort: off (registration order is the listing order: the default six, then the extended)
from fgpo.tools import composition, motifs, orfs, organism, restriction, splice  # noqa: F401
from fgpo.tools import kmer, compare, cpg, promoter  # noqa: F401
# isort: on
from fgpo.tools.base import TOOL_REGISTRY, Tool
from fgpo.tools.subsets import DEFAULT_TOOLS


@dataclass
class ToolsConfig:
    """`tools:` section of params.yaml: which tools, in which order, with which settings."""

    names: list[str] = field(default_factory=lambda: list(DEFAULT_TOOLS))
    """Tool names in bit order (bit i of a subset mask = names[i]). K = len(names), 1..10.
    Registered names: see `fgpo list-tools`."""
    max_text_chars: int = 480
    """Upper bound on each tool's prompt text (characters), so a prompt's size stays bounded."""
    jaspar_release: str = "JASPAR2024"
    """JASPAR release shipped by pyjaspar (JASPAR2014..JASPAR2026); pinned for reproducibility."""
    motif_ids: list[str] = field(default_factory=lambda: [
        "MA0139.2", "MA0138.3", "MA0106.3", "MA0105.4", "MA0506.3", "MA1494.2", "MA0079.5",
        "MA0466.4", "MA0108.3", "MA0148.5"])
    """JASPAR matrix IDs scanned by `motif_scan` (default: CTCF, REST, TP53, NFKB1, NRF1, HNF4A,
    SP1, CEBPB, TBP, FOXA1)."""
    motif_fpr: float = 1.0e-4
    """Per-position false-positive rate under a uniform background that sets each PSSM's score
    threshold (Biopython `ScoreDistribution.threshold_fpr`)."""
    motif_pseudocount: float = 0.5
    """Pseudocount added to JASPAR counts before computing log-odds."""
    max_hits: int = 3
    """Hits per motif reported (best first)."""
    enzymes: list[str] = field(default_factory=lambda: [
        "EcoRI", "BamHI", "HindIII", "NotI", "XhoI", "PstI", "SmaI", "KpnI", "NcoI", "SalI"])
    """Bio.Restriction enzyme names scanned by `restriction_sites`."""
    orf_min_aa: int = 20
    """Shortest ORF (codons, start to stop exclusive) reported by `orf_finder`."""
    splice_fpr: float = 1.0e-3
    """FPR threshold for donor/acceptor PSSM hits in `splice_sites`."""
    workers: int = 2
    """Processes for the `tools` stage (1 = in-process)."""
    chunk_size: int = 64
    """Questions per task sent to a worker process."""

    def __post_init__(self) -> None:
        if not 1 <= len(self.names) <= 10:
            raise InputError(f"K must be between 1 and 10, got {len(self.names)}",
                             field="tools.names")
        if len(set(self.names)) != len(self.names):
            raise InputError(f"duplicate tool names in {self.names}",
                             field="tools.names")
        unknown = [n for n in self.names if n not in TOOL_REGISTRY]
        if unknown:  # here, so that the error names the params file (load_section adds it)
            raise InputError(f"unknown tool name(s) {unknown}; registered: "
                             f"{sorted(TOOL_REGISTRY)} (see `fgpo list-tools`)",
                             field="tools.names")
        if not 0 < self.motif_fpr < 1 or not 0 < self.splice_fpr < 1:
            raise InputError("FPR thresholds must be in (0, 1)",
                             field="tools.motif_fpr")
        if self.workers < 1 or self.chunk_size < 1:
            raise InputError("workers and chunk_size must be >= 1",
                             field="tools.workers")



def build_tools(cfg: ToolsConfig) -> list[Tool]:
    """Instantiate the configured tools in bit order (ToolsConfig has checked the names)."""
    return [TOOL_REGISTRY[n](cfg) for n in cfg.names]


def fingerprint_spec(cfg: ToolsConfig) -> dict[str, Any]:
    """What the fingerprint hashes: K, each tool's name, version and output-relevant settings,
    and max_text_chars. Files record it next to the hash (`fingerprint_spec`), so a mismatch
    can name the settings that differ."""
    tools = build_tools(cfg)
    spec = {"K": len(tools), "tools": [[t.name, t.version, t.settings()] for t in tools],
            "max_text_chars": cfg.max_text_chars}
    return json.loads(json.dumps(spec, sort_keys=True))  # as it reads back from a file


def tool_fingerprint(cfg: ToolsConfig) -> str:
    """Hash of tool names, versions, K and output-relevant settings.

    Reward tables and tool outputs record it; a table built for another tool set is refused.
    """
    spec = fingerprint_spec(cfg)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def _flat_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """{setting path: value}: "tools" (names in bit order), "<tool>.version", "<tool>.<key>"."""
    flat: dict[str, Any] = {"tools": [t[0] for t in spec.get("tools", [])]}
    for name, version, settings in spec.get("tools", []):
        flat[f"{name}.version"] = version
        flat.update({f"{name}.{k}": v for k, v in (settings or {}).items()})
    flat["max_text_chars"] = spec.get("max_text_chars")
    return flat


def _recorded_spec(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The spec a file was built with: recorded, or re-derived from its recorded tools config
    (files written before specs were recorded; versions are then today's). None if neither."""
    if isinstance(meta.get("fingerprint_spec"), dict):
        return meta["fingerprint_spec"]
    if isinstance(meta.get("config"), dict):
        try:
            return fingerprint_spec(ToolsConfig(**meta["config"]))
        except (TypeError, ValueError):
            return None
    return None


def fingerprint_diff(meta: dict[str, Any], cfg: ToolsConfig) -> list[str] | None:
    """'setting: recorded -> current' for each setting that differs; None when the file
    records no settings (only the hash)."""
    old = _recorded_spec(meta)
    if old is None:
        return None
    before, after = _flat_spec(old), _flat_spec(fingerprint_spec(cfg))
    missing = object()

    def show(d: dict[str, Any], k: str) -> str:
        return repr(d[k]) if k in d else "(none)"
    return [f"{k}: {show(before, k)} -> {show(after, k)}"
            for k in dict.fromkeys([*before, *after])
            if before.get(k, missing) != after.get(k, missing)]


def require_fingerprint(meta: dict[str, Any], cfg: ToolsConfig, path: str, rerun: str) -> None:
    """Refuse a file whose recorded tool-set fingerprint differs from the current tools';
    the message names the settings that differ (recorded -> current)."""
    want = tool_fingerprint(cfg)
    if meta.get("fingerprint") == want:
        return
    diff = fingerprint_diff(meta, cfg)
    if diff:
        what = "differing settings (recorded -> current): " + "; ".join(diff)
    elif diff is None:
        what = (f"tools {meta.get('tools')} -> {cfg.names}; the file records only the hash, "
                f"so the differing settings cannot be listed")
    else:
        what = "same settings: a tool's code version (or the fingerprint scheme) changed"
    raise InputError(f"built for another tool set (fingerprint {meta.get('fingerprint')}, "
                     f"current {want}); {what}; rerun {rerun}", file=path, field="fingerprint")


def describe() -> list[str]:
    """`fgpo list-tools`: each registered tool with its version and one-line description."""
    return [f"{name:20s} v{cls.version}  {cls.description}" for name, cls in TOOL_REGISTRY.items()]
