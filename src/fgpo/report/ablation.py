"""The ablation: where FGPO's lead over GRPO comes from: its numbers and its Markdown (the
`ablation:` section is fgpo.report.ablation_config). Pure functions of loaded results; the
stages `cost_table`, `ablate` and `ablation_report` (ablation/dvc.yaml, `make ablation`) do
the I/O.

Every estimator reads the same exhaustive table, so the FGPO - GRPO gap splits exactly, per test
cell, along two paths of single changes (each difference paired over questions x seeds):

    fgpo - grpo = (fgpo - fgpo_std)  + (fgpo_std - grpo)      normalisation at exactness
                                                              + exactness at GRPO's std
                = (fgpo - dr_grpo)   + (dr_grpo - grpo)       exactness without std
                                                              + normalisation when sampled
The tool cost enters only the reward column (fgpo.rewards.cost), so each cost's tables reuse
the same reasoner answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from fgpo.report.config import ReportConfig
from fgpo.report.numbers import compare, paired

# (label, minuend, subtrahend): the two decomposition paths of the gap, then the total
DECOMPOSITION = [
    ("total: fgpo - grpo", "fgpo", "grpo"),
    ("normalisation at exactness: fgpo - fgpo_std", "fgpo", "fgpo_std"),
    ("exactness at GRPO's std: fgpo_std - grpo", "fgpo_std", "grpo"),
    ("exactness without std: fgpo - dr_grpo", "fgpo", "dr_grpo"),
    ("normalisation when sampled: dr_grpo - grpo", "dr_grpo", "grpo"),
    ("baseline choice: rloo - dr_grpo", "rloo", "dr_grpo"),
    ("dynamic sampling: dapo_ds - grpo", "dapo_ds", "grpo"),
]


# ---- numbers -----------------------------------------------------------------------------------

def estimator_row(metrics: dict[str, Any], curve: pd.DataFrame) -> dict[str, float]:
    """One estimator on one setting at one cost: test numbers (mean, std over seeds), tools per
    question, the zero-signal fraction it observed in training (sampled: groups whose G rewards
    were equal; exact: constant table rows, the only case without signal), mean over steps, and
    the exact probability that a G-group drawn from the tested policy is constant, and the
    reward evaluations it paid."""
    observed = curve["train_zero_signal_frac"].dropna()
    return {"accuracy": metrics["test/accuracy"], "accuracy_std": metrics["test/accuracy_std"],
            "reward": metrics["test/reward"], "reward_std": metrics["test/reward_std"],
            "tools": metrics["test/tools_per_question"],
            "zero_signal_observed": float(observed.mean()) if len(observed) else float("nan"),
            "zero_signal_exact": metrics["test/zero_signal_frac"],
            "reward_evals": metrics["budget/reward_evals"]}


def versus(selections: dict[str, pd.DataFrame], a: str, b: str, cfg: ReportConfig, what: str
           ) -> dict[str, Any]:
    """a - b on one setting: paired accuracy and reward differences with intervals."""
    out = {}
    for column, key in (("correct", "accuracy"), ("reward", "reward")):
        out.update(compare(paired(selections[a], selections[b], column, what), cfg, key))
    return out


def pooled(per_setting: list[dict[str, pd.DataFrame]], a: str, b: str, cfg: ReportConfig
           ) -> dict[str, Any]:
    """a - b over every setting at once: the settings' [seed, question] difference matrices side
    by side (the same seeds), one paired bootstrap over all their questions and seeds."""
    out = {}
    for column, key in (("correct", "accuracy"), ("reward", "reward")):
        diffs = [paired(s[a], s[b], column, f"{a} vs {b}") for s in per_setting]
        out.update(compare(np.concatenate(diffs, axis=1), cfg, key))
    return out


def decomposition(per_setting: dict[str, dict[str, pd.DataFrame]], cfg: ReportConfig
                  ) -> list[dict[str, Any]]:
    """Each decomposition term (those whose estimators ran) per setting and pooled."""
    rows = []
    for label, a, b in DECOMPOSITION:
        if not all(a in s and b in s for s in per_setting.values()):
            continue
        row = {"term": label, "a": a, "b": b,
               "pooled": pooled(list(per_setting.values()), a, b, cfg)}
        row["settings"] = {name: versus(s, a, b, cfg, f"{name}: {a} vs {b}")
                           for name, s in per_setting.items()}
        rows.append(row)
    return rows


# ---- Markdown ----------------------------------------------------------------------------------

def _ci(d: dict[str, Any], key: str) -> str:
    return (f"{100 * d[key]:+.1f} [{100 * d[key + '_lo']:+.1f}, {100 * d[key + '_hi']:+.1f}] "
            f"{d[key + '_outcome']}")


def estimator_table(rows: dict[str, dict[str, dict[str, float]]], vs_fgpo: dict[str, dict],
                    estimators: list[str]) -> str:
    """Setting x estimator at the main cost: test accuracy and reward (mean +- std over seeds),
    the paired difference to fgpo, tools, zero signal observed / exact, reward evaluations."""
    lines = ["| setting | estimator | test accuracy | test reward | minus fgpo: accuracy (pt) "
             "| tools / question | zero signal observed | zero signal exact (G=8) "
             "| reward evals |", "|---|---|---|---|---|---|---|---|---|"]
    for setting, per in rows.items():
        for m in estimators:
            r = per[m]
            diff = _ci(vs_fgpo[setting][m], "accuracy") if m in vs_fgpo[setting] else "-"
            obs = "-" if np.isnan(r["zero_signal_observed"]) else f"{r['zero_signal_observed']:.2f}"
            lines.append(f"| {setting} | {m} | {r['accuracy']:.3f} ± {r['accuracy_std']:.3f} "
                         f"| {r['reward']:.3f} ± {r['reward_std']:.3f} | {diff} "
                         f"| {r['tools']:.2f} | {obs} | {r['zero_signal_exact']:.2f} "
                         f"| {r['reward_evals']:,.0f} |")
    return "\n".join(lines)


def decomposition_table(rows: list[dict[str, Any]]) -> str:
    """Each term pooled over the settings, then per setting (accuracy, points, 95% interval)."""
    settings = list(rows[0]["settings"]) if rows else []
    head = "| term | pooled accuracy (pt) | pooled reward (pt) | " + " | ".join(settings) + " |"
    lines = [head, "|" + "---|" * (3 + len(settings))]
    for r in rows:
        cells = [_ci(r["settings"][s], "accuracy") for s in settings]
        lines.append(f"| {r['term']} | {_ci(r['pooled'], 'accuracy')} "
                     f"| {_ci(r['pooled'], 'reward')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def frontier_table(frontier: pd.DataFrame) -> str:
    """Tool cost x estimator x reasoner: test accuracy and tools per question (seed means)."""
    lines = ["| setting | estimator | " + " | ".join(
        f"cost {c:g}: accuracy / tools" for c in sorted(frontier.cost.unique())) + " |"]
    lines.append("|" + "---|" * (2 + frontier.cost.nunique()))
    for (setting, m), g in frontier.groupby(["setting", "estimator"], sort=False):
        by = {row.cost: f"{row.accuracy:.3f} / {row.tools:.2f}" for row in g.itertuples()}
        lines.append(f"| {setting} | {m} | " + " | ".join(
            by.get(c, "-") for c in sorted(frontier.cost.unique())) + " |")
    return "\n".join(lines)


def plain_reading(decomp: list[dict[str, Any]]) -> list[str]:
    """The decomposition in words, as measured: which terms are distinguishable from zero."""
    out = []
    by = {r["a"] + "-" + r["b"]: r["pooled"] for r in decomp}
    total = by.get("fgpo-grpo")
    if total is None:
        return out
    out.append(f"- The pooled FGPO - GRPO test-accuracy difference is "
               f"{100 * total['accuracy']:+.1f} points ({total['accuracy_outcome']}).")
    for key, words in (("fgpo-fgpo_std", "Removing FGPO's std normalisation (fgpo vs fgpo_std)"),
                       ("fgpo_std-grpo", "Exact enumeration at GRPO's normalisation "
                                         "(fgpo_std vs grpo)"),
                       ("dr_grpo-grpo", "Dropping GRPO's std division (dr_grpo vs grpo)"),
                       ("fgpo-dr_grpo", "Exact enumeration without std (fgpo vs dr_grpo)"),
                       ("dapo_ds-grpo", "DAPO's dynamic sampling (dapo_ds vs grpo)")):
        if key in by:
            d = by[key]
            share = (f", {d['accuracy'] / total['accuracy']:.0%} of the total"  # a share of
                     if total["accuracy_outcome"] != "tie" else "")  # a tie is no share
            out.append(f"- {words}: {100 * d['accuracy']:+.1f} points "
                       f"[{100 * d['accuracy_lo']:+.1f}, {100 * d['accuracy_hi']:+.1f}]"
                       f"{share}; {d['accuracy_outcome']}.")
    return out
