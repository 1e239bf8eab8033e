"""Reports: the FGPO vs GRPO comparison (`summary`, `figures`, the `report` stage) and the
README's generated sections (`readme`)."""
