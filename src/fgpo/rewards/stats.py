"""Reward-table statistics: the table baselines, the zero-signal structure of its rows, and
the checks that make a degenerate table loud (one a policy cannot learn anything from)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fgpo.errors import InputError
from fgpo.question import SPLITS
from fgpo.rewards.table import RewardTable, RunData

CONSTANT_ROWS_MAX = 0.5
"""Above this share of constant correctness rows, the tools change few answers: the reasoner
ignores the evidence (e.g. a rule that does not recognise the question type)."""
UNPARSEABLE_MAX = 0.05
"""Above this share of unparseable answers, the prompt or the answer format is broken."""
Z95 = 1.96
"""Normal quantile of the one-sided check 'best fixed subset beats no tools beyond noise'."""


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


def family_masks(table: RewardTable, fallback: int) -> dict[str, int]:
    """Per family, the best fixed subset on its train rows (`fallback` without train rows)."""
    c, nt = table.correct, table.n_tools
    out = {}
    for fam in sorted(set(table.families)):
        rows = (table.families == fam) & table.in_split("train")
        out[fam] = best_fixed_mask(c[rows], nt) if rows.any() else fallback
    return out


def table_stats(table: RewardTable, group_size: int | None, n_options: np.ndarray | None = None
                ) -> dict[str, Any]:
    """Baselines per split (best fixed subsets chosen on train), row structure, budget, and
    degeneracy flags (`table/warnings`, empty for a healthy table).

    `{split}/oracle_accuracy` is the per-question oracle: the best subset picked for each
    question after seeing its answers. It includes lucky guesses of the no-evidence fallback,
    so it bounds any policy from above and is not a target. `{split}/family_best_fixed_accuracy`
    is the ceiling of a policy that only recognises the question type (one subset per family,
    chosen on train). `n_options` (per row) adds `{split}/chance_accuracy`; `group_size` G adds
    `table/uniform_zero_signal_frac` (None: left out, for the readers that need no G).
    """
    c, r, nt = table.correct, table.reward, table.n_tools
    full = len(nt) - 1
    best = best_fixed_mask(c[table.in_split("train")], nt)
    per_family = family_masks(table, best)
    fam_mask = np.array([per_family[f] for f in table.families], dtype=np.int64)
    stats: dict[str, Any] = {}
    for s in SPLITS:
        rows = table.in_split(s)
        if not rows.any():
            continue
        cs = c[rows]
        stats[f"{s}/n_questions"] = int(rows.sum())
        if n_options is not None:
            stats[f"{s}/chance_accuracy"] = float(np.mean(1.0 / n_options[rows]))
        stats[f"{s}/no_tools_accuracy"] = float(cs[:, 0].mean())
        stats[f"{s}/all_tools_accuracy"] = float(cs[:, full].mean())
        stats[f"{s}/random_accuracy"] = float(cs.mean())
        stats[f"{s}/best_fixed_accuracy"] = float(cs[:, best].mean())
        stats[f"{s}/family_best_fixed_accuracy"] = float(
            cs[np.arange(len(cs)), fam_mask[rows]].mean())
        stats[f"{s}/oracle_accuracy"] = float(cs.max(axis=1).mean())
        stats[f"{s}/oracle_reward"] = float(r[rows].max(axis=1).mean())
    oracle_tools = [nt[row == row.max()].min() for row in r]
    stats.update({
        "table/best_fixed_mask": best,
        "table/best_fixed_tools": int(nt[best]),
        "table/oracle_tools_per_question": float(np.mean(oracle_tools)),
        "table/constant_reward_row_frac": float(np.mean(np.ptp(r, axis=1) == 0)),
        "table/constant_correct_row_frac": float(np.mean(np.ptp(c, axis=1) == 0)),
    })
    if group_size is not None:
        stats["table/uniform_zero_signal_frac"] = float(uniform_zero_signal(r, group_size).mean())
        stats["table/group_size"] = group_size
    stats.update({
        "table/unparseable": int(table.meta.get("unparseable", 0)),
        "budget/table_cells": int(c.size),
        "budget/reasoner_calls": int(table.meta.get("reasoner_calls", c.size)),
    })
    for fam in sorted(set(table.families)):
        rows = (table.families == fam) & table.in_split("train")
        if rows.any():
            stats[f"family/{fam}/best_fixed_mask"] = per_family[fam]
            stats[f"family/{fam}/no_tools_accuracy"] = float(c[rows, 0].mean())
            stats[f"family/{fam}/best_fixed_accuracy"] = float(c[rows, per_family[fam]].mean())
    stats.update(degeneracy(table, best))
    return stats


def degeneracy(table: RewardTable, best: int) -> dict[str, Any]:
    """The three checks of a table worth training on, each with its statistic, and the list of
    warnings (empty when healthy):
    - correctness rows mostly constant (> CONSTANT_ROWS_MAX): the tools change few answers;
    - unparseable answers above UNPARSEABLE_MAX of the cells;
    - the best fixed subset (chosen on train) does not beat no tools beyond noise on the
      held-out questions (val and test: none of them chose the subset, so its gain there is
      unbiased, and pooling them gives a collection of a few hundred questions the power to
      see a 5-point gain): the paired per-question gain's lower 95% bound is <= 0. The gate
      decides only whether training runs, never what it learns or reports."""
    c = table.correct
    constant = float(np.mean(np.ptp(c, axis=1) == 0))
    unparseable = int(table.meta.get("unparseable", 0)) / max(c.size, 1)
    held = ~table.in_split("train")
    d = c[held, best] - c[held, 0]
    gain = float(d.mean()) if len(d) else 0.0
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("inf")
    lo = gain - Z95 * se
    warnings = []
    if constant > CONSTANT_ROWS_MAX:
        warnings.append(f"table/constant_correct_row_frac = {constant:.3f} > {CONSTANT_ROWS_MAX}: "
                        "most questions get the same correctness under every subset (the "
                        "reasoner ignores the tools)")
    if unparseable > UNPARSEABLE_MAX:
        warnings.append(f"table/unparseable_frac = {unparseable:.3f} > {UNPARSEABLE_MAX}: the "
                        "answers do not name an option (prompt or answer format broken)")
    if best == 0 or not lo > 0:
        warnings.append(f"table/heldout_best_fixed_gain = {gain:+.3f} (95% lower bound "
                        f"{lo:+.3f} <= 0 over {len(d)} val + test questions): the best fixed "
                        "subset does not beat no tools beyond noise")
    return {"table/unparseable_frac": unparseable, "table/heldout_best_fixed_gain": gain,
            "table/heldout_best_fixed_gain_lo95": lo if np.isfinite(lo) else None,
            "table/heldout_questions": int(len(d)),
            "table/warnings": warnings, "table/degenerate": bool(warnings)}


def require_healthy_table(stats: dict[str, Any], path: str, allow: bool) -> None:
    """Refuse to train on a degenerate table (see `degeneracy`) unless `allow`."""
    if stats["table/degenerate"] and not allow:
        raise InputError("degenerate reward table, training on it would learn noise: "
                         + "; ".join(stats["table/warnings"]) + ". Check the reasoner and the "
                         "question wording (`fgpo table-stats`); to train anyway pass --force "
                         "(or set train.allow_degenerate_table: true)", file=path,
                         field="table/degenerate")


def option_counts(questions: list) -> np.ndarray:
    """Options per question (row-aligned questions -> the chance level 1 / options)."""
    return np.array([len(q.options) for q in questions], dtype=np.float64)


def require_trainable(run_data: RunData, allow: bool, path: str) -> dict[str, Any]:
    """`table_stats` of a run's table (no G: training reads only its baselines); refuses a
    degenerate one unless `allow` (train, sweep)."""
    stats = table_stats(run_data.table, None, option_counts(run_data.questions))
    require_healthy_table(stats, path, allow)
    return stats
