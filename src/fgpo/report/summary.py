"""The FGPO vs GRPO comparison as numbers and markdown: pure functions of loaded results.

`stage.py` reads the DVC outputs of the train and table stages into `SettingData` and calls
`setting_numbers` for each (reasoner, benchmark) setting, `overall_numbers` across settings and
the `*_table` renderers. Nothing here reads a file, so the tests drive it with hand-made data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from fgpo.errors import InputError
from fgpo.report.config import EXACT, SAMPLED, ReportConfig
from fgpo.tools.subsets import subset_tools

CURVE_COLUMNS = ["val_accuracy", "train_reward_evals", "train_reward_evals_unique",
                 "train_questions_seen", "train_zero_signal_frac"]


@dataclass
class SplitTable:
    """The test split of one reward table, and the subset chosen on train by the table stage."""

    families: np.ndarray   # [n]
    correct: np.ndarray    # [n, 2^K]
    reward: np.ndarray     # [n, 2^K]
    n_tools: np.ndarray    # [2^K]
    best_fixed_mask: int


@dataclass
class SettingData:
    """Everything the report reads about one (reasoner, benchmark) setting."""

    reasoner: str
    benchmark: str
    metrics: dict[str, dict[str, Any]]        # method -> metrics/train/<r>/<b>/<m>.json
    # (every dict is keyed by train.methods, in that order; EXACT and SAMPLED among them)
    curves: dict[str, pd.DataFrame]           # method -> plots/train/<r>/<b>/<m>.csv
    selections: dict[str, pd.DataFrame]       # method -> data/selections/<r>/<b>/<m>.parquet
    table_stats: dict[str, Any]               # metrics/reward_tables/<r>/<b>.json
    test: SplitTable = field(repr=False)
    n_questions: int = 0                      # questions in the table, all splits
    table_meta: dict[str, Any] = field(default_factory=dict, repr=False)  # the table's record

    @property
    def name(self) -> str:
        return f"{self.reasoner}/{self.benchmark}"

    @property
    def methods(self) -> list[str]:
        return list(self.metrics)


def row_methods(row: dict[str, Any]) -> list[str]:
    """The methods a `setting_numbers` row holds, in their order."""
    return [k.split("/")[0] for k in row if k.endswith("/seeds")]


# ---- curves and budgets ---------------------------------------------------------------------

def mean_curve(curve: pd.DataFrame) -> pd.DataFrame:
    """The per-step curve averaged over seeds (rows with a validation point only keep theirs)."""
    missing = [c for c in ["step", *CURVE_COLUMNS] if c not in curve.columns]
    if missing:
        raise InputError(f"curve lacks column(s) {missing}; retrain with this version",
                         field="plots/train")
    return curve.groupby("step", sort=True)[CURVE_COLUMNS].mean().reset_index()


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


BASELINES = ["no_tools", "all_tools", "best_fixed", "oracle"]
"""The per-family columns read from the table (after the methods' own)."""


def family_methods(fam: pd.DataFrame) -> list[str]:
    """The method columns of a `family_accuracy` frame, in order."""
    cols = list(fam.columns)
    return cols[cols.index("family") + 1:cols.index(BASELINES[0])]


def subset_label(mask: int, tool_names: list[str]) -> str:
    """A short name of a subset: `none`, or abbreviated tool names joined by `+`."""
    picked = [n.split("_")[0][:5] for n in subset_tools(mask, tool_names)]
    return "+".join(picked) or "none"


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


# ---- markdown --------------------------------------------------------------------------------

def _pm(mean: float, std: float, seeds: int) -> str:
    return f"{mean:.3f} ± {std:.3f}" if seeds > 1 else f"{mean:.3f}"


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "—" if x is None else format(x, fmt)


def _heads(methods: list[str]) -> str:
    return " | ".join(m.upper() for m in methods)


def settings_table(rows: list[dict[str, Any]], links: dict[str, str] | None = None) -> str:
    """The 15-setting table: test accuracy of every method, the headline difference, table
    baselines."""
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    head = (f"| reasoner | benchmark | {_heads(methods)} | {EXACT.upper()} − {SAMPLED.upper()} "
            "| outcome | no tools | all tools | random | best fixed | oracle |")
    sep = f"|---|---|{'---:|' * len(methods)}---:|---|---:|---:|---:|---:|---:|"
    if links is not None:
        head, sep = head + " MLflow |", sep + "---|"
    lines = [head, sep]
    for r in rows:
        line = (f"| {r['reasoner']} | {r['benchmark']} | " + "".join(
                    f"{_pm(r[f'{m}/test/accuracy'], r[f'{m}/test/accuracy_std'], r[f'{m}/seeds'])} | "
                    for m in methods) +
                f"{100 * r['diff/test/accuracy']:+.1f} pt | {r['outcome']} | " + " | ".join(
                    f"{r[f'baseline/test/{b}_accuracy']:.3f}"
                    for b in ("no_tools", "all_tools", "random", "best_fixed", "oracle")) + " |")
        if links is not None:
            line += f" {links.get(r['reasoner'] + '/' + r['benchmark'], '—')} |"
        lines.append(line)
    return "\n".join(lines)


def outcome_line(o: dict[str, Any]) -> str:
    return (f"FGPO wins {o['overall/fgpo_wins']}, ties {o['overall/ties']} and loses "
            f"{o['overall/fgpo_losses']} of {o['overall/settings']} settings; mean difference "
            f"{100 * o['overall/mean_diff']:+.2f} points (from {100 * o['overall/min_diff']:+.1f}"
            f" to {100 * o['overall/max_diff']:+.1f}).")


def budget_table(rows: list[dict[str, Any]]) -> str:
    """Reward evaluations: to the end of training, and to the accuracy both methods reach."""
    lines = ["| reasoner | benchmark | FGPO table (train) | FGPO rows seen × 2^K | GRPO evals "
             "(distinct) | common val acc | step FGPO / GRPO | FGPO rows seen × 2^K to it | "
             "GRPO evals (distinct) to it | GRPO / FGPO table |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        if r["target/informative"]:
            steps = f"{_n(r['target/fgpo_step'], '.0f')} / {_n(r['target/grpo_step'], '.0f')}"
            ratio = _n(r["target/grpo_over_fgpo_table"], ".3f")
        else:
            steps, ratio = "start", "n/a"
        lines.append(
            f"| {r['reasoner']} | {r['benchmark']} | {_n(r['budget/fgpo_table_cells'])} | "
            f"{_n(r['budget/fgpo_rows_seen_cells'])} | {_n(r['budget/grpo_reward_evals'])} "
            f"({_n(r['budget/grpo_reward_evals_unique'])}) | {r['target/val_accuracy']:.3f} | "
            f"{steps} | {_n(r['target/fgpo_rows_seen_cells'])} | "
            f"{_n(r['target/grpo_reward_evals'])} ({_n(r['target/grpo_reward_evals_unique'])}) | "
            f"{ratio} |")
    return "\n".join(lines)


def tools_table(rows: list[dict[str, Any]], overall: dict[str, Any]) -> str:
    """Tools invoked per test question (greedy subset) against the table's references."""
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    lines = [f"| reasoner | benchmark | {_heads(methods)} | best fixed subset | oracle |",
             f"|---|---|{'---:|' * len(methods)}---:|---:|"]
    for r in rows:
        lines.append(f"| {r['reasoner']} | {r['benchmark']} | " + "".join(
                     f"{r[f'{m}/test/tools_per_question']:.2f} | " for m in methods) +
                     f"{r['baseline/best_fixed_tools']} | "
                     f"{r['baseline/oracle_tools_per_question']:.2f} |")
    for b in sorted({r["benchmark"] for r in rows}):
        lines.append(f"| **mean** | **{b}** | " + "".join(
                     f"{overall[f'{b}/{m}/test/tools_per_question']:.2f} | " for m in methods) +
                     f"{overall[f'{b}/baseline/best_fixed_tools']:.2f} | "
                     f"{overall[f'{b}/baseline/oracle_tools_per_question']:.2f} |")
    return "\n".join(lines)


def zero_signal_table(rows: list[dict[str, Any]], overall: dict[str, Any]) -> str:
    """Share of questions whose G-sample GRPO group has equal rewards (no gradient)."""
    lines = ["| reasoner | benchmark | uniform policy (exact) | GRPO first steps (observed) | "
             "GRPO last steps (observed) | GRPO trained (exact) | FGPO trained (exact) | "
             "FGPO signal-less rows |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    keys = ("uniform", "grpo_first_steps", "grpo_last_steps", "grpo_trained", "fgpo_trained",
            "fgpo_constant_rows")
    for r in rows:
        lines.append(f"| {r['reasoner']} | {r['benchmark']} | " + " | ".join(
            f"{100 * r[f'zero_signal/{k}']:.2f}%" for k in keys) + " |")
    lines.append("| **mean** | | " + " | ".join(
        f"**{100 * overall[f'mean/zero_signal/{k}']:.2f}%**" for k in keys) + " |")
    return "\n".join(lines)


def family_table(fam: pd.DataFrame) -> str:
    """Per-family test accuracy, averaged over reasoners."""
    methods = family_methods(fam)
    cols = [*methods, *BASELINES]
    mean = fam.groupby(["benchmark", "family"], sort=True)[cols].mean().reset_index()
    lines = [f"| benchmark | family | {_heads(methods)} | no tools | all tools | best fixed | "
             "oracle |", f"|---|---|{'---:|' * len(methods)}---:|---:|---:|---:|"]
    for _, r in mean.iterrows():
        lines.append(f"| {r.benchmark} | {r.family} | " + " | ".join(
            f"{r[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines)


# ---- the whole report --------------------------------------------------------------------------

PAPER = {"wins": "15 of 15", "mean_diff": "+6.75", "max_diff": "+14.20", "budget": "2.4x",
         "tools": "2.36 -> 1.40", "zero_signal": "0.2% -> 20.8%"}


def paper_table(o: dict[str, Any]) -> str:
    """The paper's headline numbers next to this run's."""
    ratio = o["budget/target_grpo_over_fgpo_median"]
    budget = (f"{ratio:.3f}x (median over {o['budget/target_settings']} settings; "
              f"{o['budget/end_grpo_over_fgpo']:.3f}x at the end of training)"
              if ratio is not None else "no setting where both methods improved")
    lines = ["| quantity | paper | this run |", "|---|---|---|",
             f"| settings FGPO wins | {PAPER['wins']} | {o['overall/fgpo_wins']} of "
             f"{o['overall/settings']} (ties {o['overall/ties']}, losses "
             f"{o['overall/fgpo_losses']}) |",
             f"| mean / max FGPO − GRPO test accuracy | {PAPER['mean_diff']} / "
             f"{PAPER['max_diff']} pt | {100 * o['overall/mean_diff']:+.2f} / "
             f"{100 * o['overall/max_diff']:+.2f} pt |",
             f"| GRPO on-demand evaluations ÷ FGPO table cells, to the same validation accuracy "
             f"| {PAPER['budget']} | {budget} |"]
    if "genomeqa/grpo/test/tools_per_question" in o:
        lines.append(f"| GenomeQA tools per question, GRPO -> FGPO | {PAPER['tools']} | "
                     f"{o['genomeqa/grpo/test/tools_per_question']:.2f} -> "
                     f"{o['genomeqa/fgpo/test/tools_per_question']:.2f} |")
    lines.append(f"| zero-signal fraction, uniform policy -> after GRPO | {PAPER['zero_signal']}"
                 f" | {100 * o['mean/zero_signal/uniform']:.2f}% -> "
                 f"{100 * o['mean/zero_signal/grpo_trained']:.2f}% (exact, trained policy); "
                 f"{100 * o['mean/zero_signal/grpo_last_steps']:.2f}% observed in the last "
                 f"steps |")
    return "\n".join(lines)


def render_summary(rows: list[dict[str, Any]], overall: dict[str, Any], fam: pd.DataFrame,
                   what_ran: str, figures: dict[str, str], cfg: ReportConfig) -> str:
    """reports/summary.md. Sections start with `## `; `fgpo readme` copies some of them."""
    g = rows[0]["zero_signal/group_size"] if rows else 8
    parts = [
        "# FGPO vs GRPO: comparison report",
        "Generated by `fgpo report` (the `report` DVC stage) from `metrics/train`, "
        "`plots/train`, `data/selections` and the reward tables. Run ids and MLflow compare "
        "links for every row: `reports/mlflow_runs.md` (written beside this file from the local "
        "tracking store; not versioned, since run ids differ per machine).",
        "## What ran", what_ran,
        "## Paper vs this run", paper_table(overall),
        "## Test accuracy per setting",
        "Greedy (argmax) subset, test split; mean ± spread over seeds when there are several. "
        f"A difference within {100 * cfg.tie_margin:.1f} points (or within the seeds' spread) is "
        "a tie. Baselines read from the reward table: no tools, all tools, a uniformly random "
        "subset, the best fixed subset chosen on train, and the per-question oracle (each "
        "question's best subset picked after seeing its answers: an upper bound that includes "
        "lucky guesses of the no-evidence fallback, not a reachable target).",
        settings_table(rows), outcome_line(overall),
        "## Reward-evaluation budgets",
        "FGPO reads the train split's whole table (questions × 2^K cells, built once before "
        "training); a table built lazily would pay only for the rows of questions drawn so far "
        "(rows seen × 2^K). GRPO pays one on-demand reasoner call per sampled subset (distinct "
        "(question, subset) pairs in brackets: what a cache would pay). *Common val acc* is the "
        "best validation accuracy both methods reach; the next columns give what each spent "
        "until it first reached it. *start* means one method never beat its starting (uniform) "
        "policy, so the comparison says nothing. Summed over settings, GRPO made "
        f"{overall['budget/grpo_reward_evals']:,.0f} evaluations "
        f"({overall['budget/grpo_reward_evals_unique']:,.0f} distinct) against "
        f"{overall['budget/fgpo_table_cells']:,.0f} table cells: "
        f"{overall['budget/end_grpo_over_fgpo']:.3f}x. At its rate of evaluations per step, GRPO "
        "would have spent as much as the train table after "
        f"{overall['budget/table_over_grpo_evals_per_step']:,.0f} steps (median over settings). "
        f"GRPO reached FGPO's best validation accuracy in "
        f"{overall['budget/grpo_reaches_fgpo_best']} of {overall['overall/settings']} settings.",
        budget_table(rows),
        "## Tools per question",
        "Tools in the greedy subset per test question; the best fixed subset's size; the oracle "
        "picks the fewest tools among each question's best subsets.",
        tools_table(rows, overall),
        "## Zero-signal fraction",
        f"Share of questions whose G = {g} sampled subsets all get the same reward, so GRPO's "
        "normalised advantage is zero. *Exact* values are the probability under the policy "
        "(uniform, or the trained policy on test); *observed* values are GRPO's training batches "
        f"(mean of the first / last {cfg.zero_signal_window} steps). FGPO loses the signal only "
        "on rows whose rewards are all equal (last column).",
        zero_signal_table(rows, overall),
        "## Per-family accuracy",
        "Test accuracy per task family, mean over reasoners (and seeds).",
        family_table(fam),
        "## Figures",
        "\n\n".join(f"![{title}]({path})" for title, path in figures.items()),
    ]
    return "\n\n".join(parts).rstrip() + "\n"


def sections(markdown: str) -> dict[str, str]:
    """`## ` heading -> body of a rendered summary."""
    out: dict[str, str] = {}
    for chunk in markdown.split("\n## ")[1:]:
        title, _, body = chunk.partition("\n")
        out[title.strip()] = body.strip()
    return out


def summary_metrics(rows: list[dict[str, Any]], overall: dict[str, Any]) -> dict[str, Any]:
    """metrics/summary.json: the overall numbers and every setting's, flat and slash-named."""
    out = dict(overall)
    for r in rows:
        for k, v in r.items():
            if k not in ("reasoner", "benchmark"):
                out[f"settings/{r['reasoner']}/{r['benchmark']}/{k}"] = v
    return out
