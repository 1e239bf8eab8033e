"""Optuna sweeps over LoRA and optimiser settings, each trial a nested MLflow run."""
