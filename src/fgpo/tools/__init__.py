"""Genomic analysis tools: deterministic analyses whose outputs a reasoner reads.

`fgpo.tools.toolset` is the tool set (every tool registered, `ToolsConfig`, `build_tools`, the
fingerprint); `base` the tool interface; `subsets` the subset bit masks; `outputs` the tool
outputs file. This package imports none of them, so a reader of subset masks (the policy, the
training) does not depend on the tool modules.
"""
