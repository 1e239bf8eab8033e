"""Training: FGPO (exact full-group expectation) and GRPO (sampled groups) on one loop."""
