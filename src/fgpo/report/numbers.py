"""The comparison as numbers: pure functions of loaded results (`SettingData`).

The report stage calls `setting_numbers` for each (reasoner, benchmark) setting and
`overall_numbers` across settings; `report.markdown` renders them, `summary_metrics` flattens
them into metrics/summary.json. The tests drive these with hand-made data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from fgpo.report.config import EXACT, SAMPLED, ReportConfig
from fgpo.report.data import BASELINES, SettingData, mean_curve, row_methods

# ---- curves and budgets ---------------------------------------------------------------------

def budget_to_target(curve: pd.DataFrame, target: float, cost: str) -> float | None:
    """`cost` at the first validation point whose accuracy reaches `target`; None if never.

    `curve` is a seed-averaged curve (`mean_curve`); the 1e-9 slack absorbs float noise in
    accuracies that are exact fractions of the validation split.
    """
    val = curve.dropna(subset=["val_accuracy"]).sort_values("step")
    hit = val[val["val_accuracy"] >= target - 1e-9]
    if hit.empty:
        return None
    value = float(hit[cost].iloc[0])
    # before the first step the train counters are blank (NaN): nothing has been spent yet
    return 0.0 if np.isnan(value) and hit["step"].iloc[0] == 0 else value


def outcome(diff: float, spread: float, margin: float) -> str:
    """win | tie | loss for FGPO, from the accuracy difference and the seeds' spread."""
    if abs(diff) <= max(margin, spread):
        return "tie"
    return "win" if diff > 0 else "loss"


def oracle_tools(reward: np.ndarray, n_tools: np.ndarray) -> float:
    """Tools per question of the per-question oracle: fewest tools among the best subsets."""
    best = reward == reward.max(1, keepdims=True)
    return float(np.where(best, n_tools[None, :], np.iinfo(np.int64).max).min(1).mean())


def setting_numbers(s: SettingData, cfg: ReportConfig) -> dict[str, Any]:
    """Every number the report shows for one setting, under slash-namespaced keys."""
    f, g = s.metrics[EXACT], s.metrics[SAMPLED]
    n_sub = s.test.correct.shape[1]
    out: dict[str, Any] = {"reasoner": s.reasoner, "benchmark": s.benchmark}
    # ---- accuracy and baselines (test split), every method ----
    for m, met in s.metrics.items():
        out[f"{m}/test/accuracy"] = met["test/accuracy"]
        out[f"{m}/test/accuracy_std"] = met.get("test/accuracy_std", 0.0)
        out[f"{m}/test/tools_per_question"] = met["test/tools_per_question"]
        out[f"{m}/test/zero_signal_frac"] = met["test/zero_signal_frac"]
        out[f"{m}/seeds"] = len(met.get("seeds", [0]))
    diff = f["test/accuracy"] - g["test/accuracy"]
    spread = float(np.hypot(out["fgpo/test/accuracy_std"], out["grpo/test/accuracy_std"]))
    out["diff/test/accuracy"] = diff
    out["outcome"] = outcome(diff, spread, cfg.tie_margin)
    for b in ("no_tools", "all_tools", "random", "best_fixed", "oracle"):  # from table-stats
        out[f"baseline/test/{b}_accuracy"] = s.table_stats[f"test/{b}_accuracy"]
    out["baseline/best_fixed_tools"] = int(s.test.n_tools[s.test.best_fixed_mask])
    out["baseline/oracle_tools_per_question"] = oracle_tools(s.test.reward, s.test.n_tools)
    # ---- reward-evaluation budgets: to the end and to a common validation accuracy ----
    cf, cg = mean_curve(s.curves[EXACT]), mean_curve(s.curves[SAMPLED])
    table_cells = float(f["budget/table_cells_train"])
    out["budget/fgpo_table_cells"] = table_cells
    out["budget/fgpo_rows_seen_cells"] = float(cf["train_questions_seen"].iloc[-1]) * n_sub
    out["budget/grpo_reward_evals"] = float(cg["train_reward_evals"].iloc[-1])
    out["budget/grpo_reward_evals_unique"] = float(cg["train_reward_evals_unique"].iloc[-1])
    out["budget/grpo_evals_per_step"] = out["budget/grpo_reward_evals"] / float(cg["step"].max())
    start = float(cf.dropna(subset=["val_accuracy"])["val_accuracy"].iloc[0])
    target = min(cf["val_accuracy"].max(), cg["val_accuracy"].max())
    out["target/val_accuracy"] = float(target)
    out["target/informative"] = bool(target > start + 1e-9)
    steps = {m: budget_to_target(c, target, "step") for m, c in (("fgpo", cf), ("grpo", cg))}
    out["target/fgpo_step"], out["target/grpo_step"] = steps["fgpo"], steps["grpo"]
    seen = budget_to_target(cf, target, "train_questions_seen")
    out["target/fgpo_rows_seen_cells"] = None if seen is None else seen * n_sub
    out["target/grpo_reward_evals"] = budget_to_target(cg, target, "train_reward_evals")
    out["target/grpo_reward_evals_unique"] = budget_to_target(cg, target,
                                                              "train_reward_evals_unique")
    ratio = None
    if out["target/informative"] and out["target/grpo_reward_evals"] is not None:
        ratio = out["target/grpo_reward_evals"] / table_cells
    out["target/grpo_over_fgpo_table"] = ratio
    out["target/grpo_reaches_fgpo_best"] = bool(cg["val_accuracy"].max()
                                                >= cf["val_accuracy"].max() - 1e-9)
    # ---- zero-signal fraction ----
    w = cfg.zero_signal_window
    zs = cg.dropna(subset=["train_zero_signal_frac"])["train_zero_signal_frac"]
    out["zero_signal/uniform"] = s.table_stats["table/uniform_zero_signal_frac"]
    out["zero_signal/grpo_first_steps"] = float(zs.head(w).mean())
    out["zero_signal/grpo_last_steps"] = float(zs.tail(w).mean())
    out["zero_signal/grpo_trained"] = g["test/zero_signal_frac"]
    out["zero_signal/fgpo_trained"] = f["test/zero_signal_frac"]
    out["zero_signal/fgpo_constant_rows"] = s.table_stats["table/constant_reward_row_frac"]
    out["zero_signal/group_size"] = s.table_stats["table/group_size"]
    return out


def overall_numbers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Across settings: wins/ties/losses, mean and extreme differences, budget ratios, means."""
    diffs = np.array([r["diff/test/accuracy"] for r in rows])
    ratios = [r["target/grpo_over_fgpo_table"] for r in rows
              if r["target/grpo_over_fgpo_table"] is not None]
    out: dict[str, Any] = {
        "overall/settings": len(rows),
        "overall/fgpo_wins": sum(r["outcome"] == "win" for r in rows),
        "overall/ties": sum(r["outcome"] == "tie" for r in rows),
        "overall/fgpo_losses": sum(r["outcome"] == "loss" for r in rows),
        "overall/mean_diff": float(diffs.mean()),
        "overall/max_diff": float(diffs.max()),
        "overall/min_diff": float(diffs.min()),
        "budget/fgpo_table_cells": float(sum(r["budget/fgpo_table_cells"] for r in rows)),
        "budget/grpo_reward_evals": float(sum(r["budget/grpo_reward_evals"] for r in rows)),
        "budget/grpo_reward_evals_unique": float(sum(r["budget/grpo_reward_evals_unique"]
                                                     for r in rows)),
        "budget/target_settings": len(ratios),
        "budget/grpo_reaches_fgpo_best": sum(r["target/grpo_reaches_fgpo_best"] for r in rows),
        "budget/table_over_grpo_evals_per_step": float(np.median(
            [r["budget/fgpo_table_cells"] / r["budget/grpo_evals_per_step"] for r in rows])),
        "budget/target_grpo_over_fgpo_median": float(np.median(ratios)) if ratios else None,
    }
    out["budget/end_grpo_over_fgpo"] = (out["budget/grpo_reward_evals"]
                                        / out["budget/fgpo_table_cells"])
    for key in ("zero_signal/uniform", "zero_signal/grpo_first_steps",
                "zero_signal/grpo_last_steps", "zero_signal/grpo_trained",
                "zero_signal/fgpo_trained", "zero_signal/fgpo_constant_rows"):
        out[f"mean/{key}"] = float(np.mean([r[key] for r in rows]))
    for b in sorted({r["benchmark"] for r in rows}):
        sub = [r for r in rows if r["benchmark"] == b]
        for key in (*[f"{m}/test/tools_per_question" for m in row_methods(rows[0])],
                    "baseline/best_fixed_tools", "baseline/oracle_tools_per_question",
                    "diff/test/accuracy"):
            out[f"{b}/{key}"] = float(np.mean([r[key] for r in sub]))
    return out


# ---- per family and per subset --------------------------------------------------------------

def family_accuracy(s: SettingData) -> pd.DataFrame:
    """Test accuracy per family: every method (mean over seeds) and the table's baselines."""
    t = s.test
    base = pd.DataFrame({
        "family": t.families, "no_tools": t.correct[:, 0], "all_tools": t.correct[:, -1],
        "best_fixed": t.correct[:, t.best_fixed_mask], "oracle": t.correct.max(1)})
    out = base.groupby("family", sort=True).mean()
    for m in s.methods:
        out[m] = s.selections[m].groupby("family")["correct"].mean()
    out = out.reset_index()
    out.insert(0, "benchmark", s.benchmark)
    out.insert(0, "reasoner", s.reasoner)
    return out[["reasoner", "benchmark", "family", *s.methods, *BASELINES]]


def subset_choice(s: SettingData, top: int) -> dict[str, pd.DataFrame]:
    """Per method, the share of each family's test questions whose greedy subset is each of
    the `top` subsets chosen most often by any method (rows: family; columns: mask)."""
    both = pd.concat([s.selections[m] for m in s.methods])
    masks = both["mask"].value_counts().sort_index(kind="stable")
    masks = masks.sort_values(ascending=False, kind="stable").index[:top].tolist()
    out = {}
    for m in s.methods:
        sel = s.selections[m]
        share = pd.crosstab(sel["family"], sel["mask"], normalize="index")
        out[m] = share.reindex(columns=masks, fill_value=0.0).sort_index()
    return out


def summary_metrics(rows: list[dict[str, Any]], overall: dict[str, Any]) -> dict[str, Any]:
    """metrics/summary.json: the overall numbers and every setting's, flat and slash-named."""
    out = dict(overall)
    for r in rows:
        for k, v in r.items():
            if k not in ("reasoner", "benchmark"):
                out[f"settings/{r['reasoner']}/{r['benchmark']}/{k}"] = v
    return out
