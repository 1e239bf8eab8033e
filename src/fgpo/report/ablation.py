"""The ablation: where FGPO's lead over GRPO comes from: its numbers and its Markdown (the
`ablation:` section is fgpo.train.ablation). Pure functions of loaded results; the
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

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fgpo.report.config import ReportConfig
from fgpo.report.numbers import compare, paired, seed_stability
from fgpo.report.paired import holm_verdicts

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

FRONTIER_FIGURE = "ablation_figures/frontier.png"
DECOMPOSITION_FIGURE = "ablation_figures/decomposition.png"


@dataclass
class AblationRun:
    """What the ablation ran, as its report states it."""

    settings: list[str]
    """'reasoner/benchmark' of each setting."""
    main_cost: float
    """reward_table.tool_cost: where every estimator trained."""
    estimators: list[str]
    tool_costs: list[float]
    cost_estimators: list[str]
    """Trained at every tool cost."""
    epochs: int
    seeds: list[int]
    level: float
    """Confidence level of the paired intervals (report.level)."""
    group_size: int
    """G of the exact zero-signal metric (train.zero_signal_group_size)."""
    tuned: dict[str, str]
    """Estimator -> where its settings came from (tuned | from <relative> | untuned)."""


def estimator_row(metrics: dict[str, Any], curve: pd.DataFrame) -> dict[str, float]:
    """One estimator on one setting at one cost: test numbers (mean, std over seeds), tools per
    question, the zero-signal fraction it observed in training (sampled: groups whose G rewards
    were equal; exact: constant table rows, the only case without signal), mean over steps, and
    the exact probability that a G-group drawn from the tested policy is constant, and the
    reward evaluations it made (repeats counted; distinct cells: the calls with a cache)."""
    observed = curve["train_zero_signal_frac"].dropna()
    return {"accuracy": metrics["test/accuracy"], "accuracy_std": metrics["test/accuracy_std"],
            "reward": metrics["test/reward"], "reward_std": metrics["test/reward_std"],
            "tools": metrics["test/tools_per_question"],
            "zero_signal_observed": float(observed.mean()) if len(observed) else float("nan"),
            "zero_signal_exact": metrics["test/zero_signal_frac"],
            "reward_evals": metrics["budget/reward_evals"],
            "reward_evals_unique": metrics["budget/reward_evals_unique"]}


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
    by side (the same seeds), one paired bootstrap over all their questions and seeds; the
    accuracy verdict also with each seed left out (accuracy_stable of accuracy_stable_of)."""
    out: dict[str, Any] = {}
    for column, key in (("correct", "accuracy"), ("reward", "reward")):
        diff = np.concatenate([paired(s[a], s[b], column, f"{a} vs {b}") for s in per_setting],
                              axis=1)
        out.update(compare(diff, cfg, key))
        if key == "accuracy":
            loso = seed_stability(diff, cfg)
            out["accuracy_stable"] = sum(v == out["accuracy_outcome"] for v in loso)
            out["accuracy_stable_of"] = len(loso)
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
    # Holm over the pooled terms of the table, one family per column
    for key in ("accuracy", "reward"):
        held = holm_verdicts([r["pooled"][f"{key}_outcome"] for r in rows],
                             [r["pooled"][f"{key}_p"] for r in rows], cfg.level)
        for r, h in zip(rows, held):
            r["pooled"][f"{key}_outcome_holm"] = h
    return rows


# ---- Markdown ----------------------------------------------------------------------------------

def _ci(d: dict[str, Any], key: str) -> str:
    return (f"{100 * d[key]:+.1f} [{100 * d[key + '_lo']:+.1f}, {100 * d[key + '_hi']:+.1f}] "
            f"{d[key + '_outcome']}")


def _pooled(d: dict[str, Any], key: str) -> str:
    """A pooled term: its interval and verdict, the verdict after Holm over the terms, and
    (accuracy) how many leave-one-seed-out verdicts agree."""
    stable = (f", seed-stable {d[key + '_stable']}/{d[key + '_stable_of']}"
              if d.get(key + "_stable_of") else "")
    return f"{_ci(d, key)} (Holm: {d[key + '_outcome_holm']}{stable})"


def estimator_table(rows: dict[str, dict[str, dict[str, float]]], vs_fgpo: dict[str, dict],
                    estimators: list[str]) -> str:
    """Setting x estimator at the main cost: test accuracy and reward (mean +- std over seeds),
    the paired difference to fgpo, tools, zero signal observed / exact, reward evaluations
    (distinct cells in brackets)."""
    lines = ["| setting | estimator | test accuracy | test reward | minus fgpo: accuracy (pt) "
             "| tools / question | zero signal observed | zero signal exact (G=8) "
             "| reward evals (distinct) |", "|---|---|---|---|---|---|---|---|---|"]
    for setting, per in rows.items():
        for m in estimators:
            r = per[m]
            diff = _ci(vs_fgpo[setting][m], "accuracy") if m in vs_fgpo[setting] else "-"
            obs = "-" if np.isnan(r["zero_signal_observed"]) else f"{r['zero_signal_observed']:.2f}"
            lines.append(f"| {setting} | {m} | {r['accuracy']:.3f} ± {r['accuracy_std']:.3f} "
                         f"| {r['reward']:.3f} ± {r['reward_std']:.3f} | {diff} "
                         f"| {r['tools']:.2f} | {obs} | {r['zero_signal_exact']:.2f} "
                         f"| {r['reward_evals']:,.0f} ({r['reward_evals_unique']:,.0f}) |")
    return "\n".join(lines)


def decomposition_table(rows: list[dict[str, Any]]) -> str:
    """Each term pooled over the settings, then per setting (accuracy, points, 95% interval)."""
    settings = list(rows[0]["settings"]) if rows else []
    head = "| term | pooled accuracy (pt) | pooled reward (pt) | " + " | ".join(settings) + " |"
    lines = [head, "|" + "---|" * (3 + len(settings))]
    for r in rows:
        cells = [_ci(r["settings"][s], "accuracy") for s in settings]
        lines.append(f"| {r['term']} | {_pooled(r['pooled'], 'accuracy')} "
                     f"| {_pooled(r['pooled'], 'reward')} | " + " | ".join(cells) + " |")
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


def _verdicts(d: dict[str, Any]) -> str:
    extra = [f"Holm: {d['accuracy_outcome_holm']}"] if "accuracy_outcome_holm" in d else []
    if d.get("accuracy_stable_of"):
        extra.append(f"seed-stable {d['accuracy_stable']}/{d['accuracy_stable_of']}")
    return d["accuracy_outcome"] + (f" ({', '.join(extra)})" if extra else "")


def plain_reading(decomp: list[dict[str, Any]]) -> list[str]:
    """The decomposition in words, as measured: which terms are distinguishable from zero."""
    out = []
    by = {r["a"] + "-" + r["b"]: r["pooled"] for r in decomp}
    total = by.get("fgpo-grpo")
    if total is None:
        return out
    out.append(f"- The pooled FGPO - GRPO test-accuracy difference is "
               f"{100 * total['accuracy']:+.1f} points ({_verdicts(total)}).")
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
                       f"{share}; {_verdicts(d)}.")
    return out


def render(ran: AblationRun, rows: dict, vs_fgpo: dict, terms: list[dict],
           frontier: pd.DataFrame) -> str:
    """reports/ablation.md: what ran, the estimator table, the decomposition, the frontier."""
    estimators, main_cost, tuned = ran.estimators, ran.main_cost, ran.tuned
    lines = [
        "# Ablation: where FGPO's lead over GRPO comes from",
        "",
        "Generated by `make ablation` (ablation/dvc.yaml) from the same exhaustive reward tables "
        "as the main comparison. Every estimator trains under the main protocol: "
        f"{ran.epochs} epochs of the same question visits, seeds {ran.seeds}, "
        "the best-validation checkpoint, tested on the same questions; differences are paired "
        f"over test questions x seeds ({100 * ran.level:g}% two-way bootstrap; a win or loss "
        "only when the interval excludes zero).",
        "",
        "## What ran",
        "",
        f"- Settings: {', '.join(ran.settings)}.",
        f"- Estimators at the main tool cost {main_cost:g}: {', '.join(estimators)}; at tool "
        f"costs {', '.join(f'{c:g}' for c in ran.tool_costs)}: "
        f"{', '.join(ran.cost_estimators)}. The other costs' tables are the main tables with "
        "reward = correct - cost x tools recomputed (no reasoner call).",
        "- Settings per estimator (tune/tuned.yaml): " + "; ".join(
            f"{m}: {tuned.get(m, 'untuned')}" for m in estimators) + "." + (
            " 'from X' = the nearest tuned relative's values (no study of its own). Those values "
            "were tuned for the relative's advantage scale: a std-normalised advantage is about "
            "1/std times a raw one, so an estimator that drops or adds the division trains at "
            "another effective step size than its relative's optimum; the normalisation terms "
            "below carry that as well as the change of estimator."
            if any(str(tuned.get(m, "")).startswith("from ") for m in estimators) else
            " Every estimator was tuned in its own equal-budget study, so no term below carries "
            "a borrowed step size."),
        "- MLflow: every run is tagged `estimator` and `tool_cost` (group by them in the UI).",
        "",
        f"## Estimators at tool cost {main_cost:g}",
        "",
        "Zero signal observed: the fraction of training groups whose rewards were all equal "
        "(exact estimators: constant table rows), mean over steps. Exact: the probability that "
        f"{ran.group_size} subsets drawn from the tested policy all get one reward. Reward evals: lookups paid "
        "(a sampled estimator's draws, DAPO's redraws included; an exact one's whole train "
        "table).",
        "",
        estimator_table(rows, vs_fgpo, estimators),
        "",
        "## Decomposition of the FGPO - GRPO gap",
        "",
        "Two paths of single changes from GRPO to FGPO; on each, the terms add up to the "
        "total exactly (per test cell). Test accuracy (points), pooled over the settings and "
        "per setting. Pooled terms: the verdict after Holm's adjustment over the terms of the "
        "column, and how many verdicts recomputed with one seed left out equal the full one.",
        "",
        decomposition_table(terms) if terms else "(the decomposition needs fgpo, grpo, "
        "fgpo_std and dr_grpo among ablation.estimators)",
        "",
        *plain_reading(terms),
        "",
        f"![decomposition]({DECOMPOSITION_FIGURE})" if terms else "",
        "",
        "## Accuracy vs tools across tool costs",
        "",
        frontier_table(frontier),
        "",
        f"![frontier]({FRONTIER_FIGURE})",
        "",
    ]
    return "\n".join(lines)
