"""fgpo: exact (full-group) policy optimisation vs sampled GRPO for genomic tool selection.

Data flows one way, one sub-package per stage:
tools -> benchmarks -> reasoners -> rewards -> policy -> train -> evaluate -> report.
"""

__version__ = "0.1.0"
