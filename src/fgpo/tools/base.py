"""The tool interface: a deterministic genomic analysis that returns prompt text plus data.

Each tool module registers its class here (`@register`); the configured tool set, its
fingerprint and `build_tools` are `fgpo.tools.toolset`, which imports every tool module.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class ToolOutput:
    """One tool on one question: `text` for a reasoner prompt, `data` for code and tests."""

    text: str
    data: dict[str, Any]


class Tool(ABC):
    """A deterministic analysis of a question's sequence(s).

    Subclasses set `name`, `version` (bump when outputs change) and a one-line `description`,
    and implement `analyse` (one sequence -> JSON-able dict) and `describe` (dict -> short text).
    Tools comparing several sequences override `run`.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str]

    def __init__(self, cfg: Any) -> None:
        """`cfg`: the `tools:` section (`fgpo.tools.toolset.ToolsConfig`, which imports every
        tool, so this interface does not import it)."""
        self.cfg = cfg

    @abstractmethod
    def analyse(self, seq: str) -> dict[str, Any]: ...

    @abstractmethod
    def describe(self, data: dict[str, Any]) -> str: ...

    def run(self, seqs: dict[str, str]) -> ToolOutput:
        """Analyse each named sequence (e.g. {'seq': ...} or {'ref': ..., 'alt': ...})."""
        per = {label: self.analyse(s) for label, s in seqs.items()}
        if len(per) == 1:
            (data,) = per.values()
            text = self.describe(data)
        else:
            text = " | ".join(f"{label}: {self.describe(d)}" for label, d in per.items())
        return ToolOutput(text=self.bound(f"[{self.name}] {text}"), data=per)

    def bound(self, text: str) -> str:
        limit = self.cfg.max_text_chars
        return text if len(text) <= limit else text[: limit - 1] + "…"

    def settings(self) -> dict[str, Any]:
        """The config fields that change this tool's output (part of the fingerprint)."""
        return {}


TOOL_REGISTRY: dict[str, type[Tool]] = {}


def register(cls: type[Tool]) -> type[Tool]:
    if cls.name in TOOL_REGISTRY:
        raise RuntimeError(f"tool name {cls.name!r} registered twice")
    TOOL_REGISTRY[cls.name] = cls
    return cls
