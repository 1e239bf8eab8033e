"""Reward-table statistics: the table baselines and the zero-signal structure of its rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgpo.question import SPLITS
from fgpo.rewards.table import RewardTable


def best_fixed_mask(correct: np.ndarray, n_tools: np.ndarray) -> int:
    """The subset with the highest mean accuracy (ties: fewer tools, then lower mask)."""
    acc = correct.mean(axis=0)
    return int(min(range(len(acc)), key=lambda m: (-round(acc[m], 12), n_tools[m], m)))


def zero_signal_prob(probs: np.ndarray, rewards: np.ndarray, group_size: int) -> np.ndarray:
    """Per question, P(G subsets drawn i.i.d. from `probs` all get equal rewards), exactly:
    sum over distinct reward values v of (probability mass on subsets with reward v)^G."""
    out = np.empty(len(probs))
    for i, (p, r) in enumerate(zip(probs, rewards)):
        _, inverse = np.unique(np.round(r, 9), return_inverse=True)
        out[i] = np.sum(np.bincount(inverse, weights=p) ** group_size)
    return out


def uniform_zero_signal(reward: np.ndarray, group_size: int) -> np.ndarray:
    """`zero_signal_prob` under the uniform policy over all subsets."""
    return zero_signal_prob(np.full(reward.shape, 1.0 / reward.shape[1]), reward, group_size)


def table_stats(table: RewardTable, group_size: int) -> dict[str, Any]:
    """Baselines per split (best fixed subset chosen on train), row structure, budget."""
    c, r, nt = table.correct, table.reward, table.n_tools
    full = len(nt) - 1
    best = best_fixed_mask(c[table.split("train")], nt)
    stats: dict[str, Any] = {}
    for s in SPLITS:
        rows = table.split(s)
        if not rows.any():
            continue
        cs = c[rows]
        stats[f"{s}/no_tools_accuracy"] = float(cs[:, 0].mean())
        stats[f"{s}/all_tools_accuracy"] = float(cs[:, full].mean())
        stats[f"{s}/random_accuracy"] = float(cs.mean())
        stats[f"{s}/best_fixed_accuracy"] = float(cs[:, best].mean())
        stats[f"{s}/oracle_accuracy"] = float(cs.max(axis=1).mean())
        stats[f"{s}/oracle_reward"] = float(r[rows].max(axis=1).mean())
    oracle_tools = [nt[row == row.max()].min() for row in r]
    stats.update({
        "table/best_fixed_mask": best,
        "table/best_fixed_tools": int(nt[best]),
        "table/oracle_tools_per_question": float(np.mean(oracle_tools)),
        "table/constant_reward_row_frac": float(np.mean(np.ptp(r, axis=1) == 0)),
        "table/constant_correct_row_frac": float(np.mean(np.ptp(c, axis=1) == 0)),
        "table/uniform_zero_signal_frac": float(uniform_zero_signal(r, group_size).mean()),
        "table/group_size": group_size,
        "table/unparseable": int(table.meta.get("unparseable", 0)),
        "budget/table_cells": int(c.size),
        "budget/reasoner_calls": int(table.meta.get("reasoner_calls", c.size)),
    })
    for fam in sorted(set(table.families)):
        rows = (table.families == fam) & table.split("train")
        if rows.any():
            stats[f"family/{fam}/best_fixed_mask"] = best_fixed_mask(c[rows], nt)
            stats[f"family/{fam}/no_tools_accuracy"] = float(c[rows, 0].mean())
            stats[f"family/{fam}/best_fixed_accuracy"] = float(
                c[rows, stats[f'family/{fam}/best_fixed_mask']].mean())
    return stats
