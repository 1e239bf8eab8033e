"""Genomic analysis tools: a registry of deterministic tools whose outputs a reasoner reads.

Importing this package registers every tool (the default six, then the extended ones for K > 6);
`build_tools(cfg)` returns them in bit order.
"""

# isort: off (registration order is the listing order: the default six, then the extended)
from fgpo.tools import composition, motifs, orfs, organism, restriction, splice  # noqa: F401
from fgpo.tools import kmer, compare, cpg, promoter  # noqa: F401
# isort: on
from fgpo.tools.base import (TOOL_REGISTRY, Tool, ToolOutput, ToolsConfig, build_tools,  # noqa: F401
                             tool_fingerprint)
