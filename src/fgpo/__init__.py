"""fgpo: exact (full-group) policy optimisation vs sampled GRPO for genomic tool selection.

Data flows one way through the library packages:
tools -> benchmarks -> reasoners -> rewards -> policy -> train -> evaluate -> report,
served by tracking and sweep; `fgpo.stages` (one module per DVC stage) sits on top.
"""

__version__ = "0.1.0"
