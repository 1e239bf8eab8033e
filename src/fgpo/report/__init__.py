"""Reports: the FGPO vs GRPO comparison (`summary`, `figures`; the `report` stage is
`fgpo.stages.report`) and the README's generated sections (`readme`)."""
