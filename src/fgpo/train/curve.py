"""Each training run's learning-curve figure (logged to MLflow beside its adapter), drawn here so
that training does not depend on the report package."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def learning_curve(history: list[dict], path: Path, title: str) -> Path:
    """One run's curves: validation accuracy against distinct reasoner calls (the cells read
    so far, each paid once with a cache; log axis), the zero-signal
    fraction and the exact expected reward of the training batches, per step."""
    df = pd.DataFrame(history)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    val = df.dropna(subset=["val/accuracy"])
    axes[0].plot(val["train/reward_evals_unique"].ffill(), val["val/accuracy"], marker="o")
    axes[0].set(xlabel="distinct reasoner calls", ylabel="val accuracy", xscale="symlog")
    axes[1].plot(df.step, df["train/zero_signal_frac"])
    axes[1].set(xlabel="step", ylabel="zero-signal fraction")
    axes[2].plot(df.step, df["train/expected_reward"])
    axes[2].set(xlabel="step", ylabel="E_pi[r] (train batch)")
    fig.suptitle(title)
    # fixed margins: tight_layout measured every label again, a third of the figure's time
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.17, top=0.86, wspace=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
