"""Reports: generated README tables (and, later, the FGPO vs GRPO comparison)."""
