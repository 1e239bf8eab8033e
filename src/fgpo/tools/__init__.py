"""Genomic analysis tools: a registry of deterministic tools whose outputs a reasoner reads.

Importing this package registers every tool; `build_tools(cfg)` returns them in bit order.
"""

from fgpo.tools import composition, motifs, orfs, organism, restriction, splice  # noqa: F401
from fgpo.tools.base import (TOOL_REGISTRY, Tool, ToolOutput, ToolsConfig, build_tools,  # noqa: F401
                             tool_fingerprint)

for _extra in ("kmer", "compare", "cpg", "promoter"):  # extended tools (K > 6)
    try:
        __import__(f"fgpo.tools.{_extra}")
    except ModuleNotFoundError:
        pass
