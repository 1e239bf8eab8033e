"""Accuracy against reasoner calls: the budget frontier's selection rule.

Every run contributes its validation points (fgpo.evaluate.evaluate_validation_points): the
distinct reasoner calls spent by then, the validation numbers, the test numbers of its weights.
At a budget B, a method's point for one seed is the validation point with the highest
validation expected reward among all of that method's points (every run of the seed: FGPO's
sub-tables and its whole table alike) reached with at most B calls; the test numbers are read
only from the point so chosen. A budget below a method's first point (step 0 costs nothing, so
only a budget below 0) has no point.

On top of that rule: `budget_grid` (the budgets of the report's axis), `frontier_curves` (per
method and budget, the mean test accuracy over seeds and questions of the chosen points, with a
two-way bootstrap interval, and FGPO minus the best sampled method at the same budget, paired
by seed and question) and `crossover` (the budgets at which FGPO catches up, and the calls each
side needs for the same accuracy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fgpo.report.paired import Interval, paired_bootstrap

SELECT = "val/expected_reward"  # the checkpoint rule's quantity, as in training
CALLS = "reward_evals_unique"    # distinct (question, subset) cells: the calls with a cache


def frontier_points(points: pd.DataFrame, budgets: Sequence[float]) -> pd.DataFrame:
    """`points`: one row per validation point, with columns method, seed, run (any label of
    the run within its method and seed, e.g. its train fraction), step, CALLS, SELECT and the
    test columns. Returns one row per (method, seed, budget) that has a point: the budget, the
    chosen point's run, step and calls, and its other columns. Ties in SELECT go to the point
    reached with fewer calls, then the earlier step, then the first run in `points`' order."""
    need = {"method", "seed", "run", "step", CALLS, SELECT}
    if missing := need - set(points.columns):
        raise ValueError(f"validation points lack the columns {sorted(missing)}")
    # one order for every budget: best SELECT first, then fewer calls, earlier step, first run
    ranked = (points.reset_index(drop=True).rename_axis("order").reset_index()
              .sort_values([SELECT, CALLS, "step", "order"],
                           ascending=[False, True, True, True], kind="mergesort"))
    rows = []
    for budget in budgets:
        within = ranked[ranked[CALLS] <= budget]
        best = within.groupby(["method", "seed"], sort=True).head(1)
        rows.append(best.assign(budget=float(budget)))
    if not rows:
        return pd.DataFrame(columns=["budget", *points.columns])
    out = pd.concat(rows, ignore_index=True).drop(columns="order")
    first = ["budget", "method", "seed", "run", "step", CALLS]
    return (out[first + [c for c in out.columns if c not in first]]
            .sort_values(["method", "seed", "budget"], kind="mergesort")
            .reset_index(drop=True))


def budget_grid(points: pd.DataFrame, n: int) -> list[float]:
    """`n` budgets, log-spaced from the smallest nonzero calls of any point to the largest
    (whole calls, distinct), so every method's last point is on the axis."""
    calls = points[CALLS].to_numpy(dtype=float)
    positive = calls[calls > 0]
    if positive.size == 0:
        return [0.0]
    grid = np.unique(np.round(np.geomspace(positive.min(), positive.max(), n)))
    return [float(b) for b in grid]


def chosen_matrix(chosen: pd.DataFrame, choices: pd.DataFrame, column: str = "correct"
                  ) -> np.ndarray:
    """The [seed, question] matrix of `column` of the chosen points (one per seed: rows of
    `frontier_points` for one method and budget), questions in sorted order."""
    keys = chosen[["seed", "run", "step"]]
    rows = choices.merge(keys, on=["seed", "run", "step"], how="inner")
    matrix = rows.pivot_table(index="seed", columns="question_id", values=column,
                              aggfunc="first").sort_index()
    if matrix.isna().any().any() or len(matrix) != len(keys):
        raise ValueError("the chosen points' test choices do not cover every seed and question")
    return matrix.to_numpy(dtype=float)


def frontier_curves(points: pd.DataFrame, choices: pd.DataFrame, budgets: Sequence[float],
                    exact: str, sampled: Sequence[str], n_boot: int, level: float,
                    seed: int = 0) -> pd.DataFrame:
    """One row per (budget, method) where every seed of the method has a point: the test
    accuracy of the chosen points (mean over seeds and questions, two-way bootstrap interval),
    the mean calls those points had spent; and per budget a row `method = "exact - best
    sampled"`: `exact` minus the sampled method with the highest mean accuracy at that budget
    (named in `versus`), paired by seed and question. `points` and `choices` carry `method`,
    `run` (the train fraction), `seed`, `step`; `choices` also `question_id` and `correct`."""
    chosen = frontier_points(points, budgets)
    n_seeds = points.groupby("method")["seed"].nunique()
    rows = []
    for budget, at in chosen.groupby("budget", sort=True):
        matrices = {}
        for method, picked in at.groupby("method", sort=False):
            if len(picked) < n_seeds[method]:
                continue  # a seed without a point this cheap: no mean over all seeds
            matrices[method] = chosen_matrix(picked, choices[choices.method == method])
            ci = paired_bootstrap(matrices[method], n_boot, level, seed)
            rows.append(_row(budget, method, ci, picked[CALLS].mean()))
        rivals = [m for m in sampled if m in matrices]
        if exact in matrices and rivals:
            best = max(rivals, key=lambda m: (matrices[m].mean(), -rivals.index(m)))
            if matrices[best].shape == matrices[exact].shape:
                ci = paired_bootstrap(matrices[exact] - matrices[best], n_boot, level, seed)
                rows.append({**_row(budget, f"{exact} - best sampled", ci, np.nan),
                             "versus": best})
    out = pd.DataFrame(rows)
    if "versus" not in out:
        out["versus"] = None
    return out


def _row(budget: float, method: str, ci: Interval, calls: float) -> dict:
    return {"budget": float(budget), "method": method, "accuracy": ci.mean, "lo": ci.lo,
            "hi": ci.hi, "calls": float(calls)}


@dataclass(frozen=True)
class Crossover:
    """Where the exact method catches up with the sampled ones on one (K, setting)."""

    catch_up: float | None
    """Smallest budget from which on exact - best sampled is never significantly below 0."""
    first_win: float | None
    """Smallest budget at which exact - best sampled is significantly above 0."""
    sampled_best: str
    """The sampled method with the highest mean accuracy at any budget, and that accuracy."""
    sampled_peak: float
    exact_peak: float
    """The exact method's highest mean accuracy at any budget."""
    matched: float
    """The accuracy both sides reach: the lower of the two peaks."""
    exact_calls: float
    """The smallest budget at which the exact method's mean reaches `matched`."""
    sampled_calls: float
    """The smallest budget at which any sampled method's mean reaches `matched`, and which:"""
    sampled_cheapest: str
    first_budget: float
    """The smallest budget at which both sides have a point (where the comparison starts)."""

    @property
    def ratio(self) -> float:
        """Calls the exact method needs over calls the cheapest sampled method needs, for the
        same accuracy (`matched`)."""
        return self.exact_calls / self.sampled_calls


def _first_reaching(curve: pd.DataFrame, accuracy: float) -> float | None:
    reached = curve[curve.accuracy >= accuracy - 1e-12]  # the peak itself, despite rounding
    return float(reached.budget.min()) if len(reached) else None


def crossover(curves: pd.DataFrame, exact: str, sampled: Sequence[str]) -> Crossover:
    """The crossover of one (K, setting)'s `frontier_curves`."""
    diff = curves[curves.method == f"{exact} - best sampled"].sort_values("budget")
    below = diff[diff.hi < 0]
    later = diff[diff.budget > below.budget.max()] if len(below) else diff
    wins = diff[diff.lo > 0]
    rivals = curves[curves.method.isin(list(sampled))]
    peak = rivals.loc[rivals.accuracy.idxmax()]
    own = curves[curves.method == exact]
    matched = min(float(peak.accuracy), float(own.accuracy.max()))
    reach = {m: _first_reaching(rivals[rivals.method == m], matched) for m in sampled}
    cheapest = min((m for m in sampled if reach[m] is not None), key=lambda m: reach[m])
    return Crossover(float(later.budget.min()) if len(later) else None,
                     float(wins.budget.min()) if len(wins) else None,
                     str(peak.method), float(peak.accuracy), float(own.accuracy.max()),
                     matched, _first_reaching(own, matched), reach[cheapest], cheapest,
                     float(diff.budget.min()))


# ---- the report's Markdown ------------------------------------------------------------------

FIGURES = "frontier_figures"  # under reports/: K<k>.png per K, summary.png


@dataclass(frozen=True)
class FrontierRun:
    """What the frontier ran, for the report's protocol paragraph."""

    ks: list[int]
    main_k: int
    tool_order: list[str]
    settings: list[str]
    exact: str
    fractions: list[float]
    sampled: list[str]
    seeds: list[int]
    epochs: int
    evals_per_epoch: int
    level: float
    n_budgets: int


def _calls(x: float | None) -> str:
    return "never" if x is None else f"{x:,.0f}"


def _acc(row: pd.Series) -> str:
    return f"{row.accuracy:.3f} [{row.lo:.3f}, {row.hi:.3f}]"


def crossover_table(cross: dict[tuple[int, str], Crossover], exact: str) -> str:
    lines = [f"| K | setting | best sampled: peak | {exact} peak | accuracy both reach | "
             f"{exact} calls to it | sampled calls to it (cheapest method) | ratio | "
             f"{exact} within the interval from | {exact} significantly ahead from |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (k, setting), c in sorted(cross.items()):
        lines.append(f"| {k} | {setting} | {c.sampled_best}: {c.sampled_peak:.3f} | "
                     f"{c.exact_peak:.3f} | {c.matched:.3f} | {_calls(c.exact_calls)} | "
                     f"{_calls(c.sampled_calls)} ({c.sampled_cheapest}) | {c.ratio:.2f}x | "
                     f"{_calls(c.catch_up)} | {_calls(c.first_win)} |")
    return "\n".join(lines)


def budgets_table(curves: pd.DataFrame, methods: list[str], columns: int = 6) -> str:
    """Each method's accuracy at `columns` budgets of the grid (evenly spaced in log)."""
    grid = sorted(curves.budget.unique())
    picks = [grid[round(i)] for i in np.linspace(0, len(grid) - 1, min(columns, len(grid)))]
    picks = list(dict.fromkeys(picks))
    at = curves.set_index(["method", "budget"])
    lines = ["| method | " + " | ".join(f"{b:,.0f} calls" for b in picks) + " |",
             "|---|" + "---:|" * len(picks)]
    for m in methods:
        cells = [_acc(at.loc[(m, b)]) if (m, b) in at.index else "-" for b in picks]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reading(cross: dict[tuple[int, str], Crossover], exact: str) -> list[str]:
    """One plain sentence per (K, setting): the calls each side needs for the same accuracy."""
    out = []
    for (k, setting), c in sorted(cross.items()):
        side = "more" if c.ratio > 1 else "fewer"
        behind = ("never significantly behind" if c.catch_up == c.first_budget else
                  "still significantly behind at the largest budget" if c.catch_up is None
                  else f"no longer significantly behind from {c.catch_up:,.0f} calls on")
        out.append(f"- K = {k}, {setting}: for test accuracy {c.matched:.3f}, {exact} reads "
                   f"{c.exact_calls:,.0f} cells, {c.ratio:.2f}x {side} than "
                   f"{c.sampled_cheapest}'s {c.sampled_calls:,.0f}; {exact} is {behind} "
                   f"(peaks: {exact} {c.exact_peak:.3f}, {c.sampled_best} {c.sampled_peak:.3f}).")
    return out


def render(ran: FrontierRun, cross: dict[tuple[int, str], Crossover],
           curves: dict[int, dict[str, pd.DataFrame]]) -> str:
    methods = [ran.exact, *ran.sampled]
    pct = round(100 * ran.level)
    fractions = ", ".join(f"{f:g}" for f in ran.fractions)
    lines = [
        "# Accuracy against reasoner calls: the budget frontier",
        "",
        "Generated by `make frontier` (frontier/dvc.yaml, stage `frontier_report`) from the "
        "frontier runs' validation points; do not edit by hand.",
        "",
        "## What is measured",
        "",
        f"- **Cost** (x-axis): the distinct (question, subset) cells of the train split a "
        f"method's training has read from the reward table: with a cache, the reasoner calls "
        f"it needed. {ran.exact} reads all 2^K cells of a question the first time it visits "
        f"it; a sampled method reads the subsets it draws. Repeats are free (their count is in "
        f"`points.parquet`, `reward_evals`). Validation, read the same way by every method to "
        f"select checkpoints, and the test are not counted.",
        f"- **Runs**: {ran.exact} on seeded sub-tables holding {fractions} of the train "
        f"questions, trained on them under the train stage's protocol ({ran.epochs} epochs' "
        f"question visits, {ran.evals_per_epoch} validation points per epoch); "
        f"{', '.join(ran.sampled)} on the whole train split. Seeds {ran.seeds}.",
        f"- **Selection**: at a budget B each (method, seed) takes, among all its validation "
        f"points reached with at most B calls ({ran.exact}: over all its sub-tables), the one "
        f"with the highest validation expected reward; the test accuracy is read there only. "
        f"Shown: the mean over seeds and test questions with a {pct}% two-way bootstrap "
        f"interval (seeds and questions resampled), at {ran.n_budgets} log-spaced budgets; "
        f"\"{ran.exact} - best sampled\" pairs {ran.exact} with the sampled method of highest "
        f"mean accuracy at the same budget, by seed and question.",
        f"- **K**: the first K tools of {', '.join(ran.tool_order)}. K = {ran.main_k} is the "
        f"main pipeline's: its tables, and its runs of these seeds on the whole split. Every "
        f"K trains with the values tuned at K = {ran.main_k}.",
        f"- Settings: {', '.join(ran.settings)}; K = {', '.join(map(str, ran.ks))}.",
        "",
        "## Crossover",
        "",
        f"The accuracy both sides reach (the lower of {ran.exact}'s peak and the best sampled "
        f"method's), the calls {ran.exact} needs to reach it against the calls of the sampled "
        f"method that reaches it first (ratio = {ran.exact} / sampled; budgets are the grid's, "
        "so a ratio is exact only to one grid step, and a peak is a mean with the interval "
        f"shown below); the smallest budget from which {ran.exact} - best sampled is never "
        "significantly below zero, and the smallest at which it is significantly above.",
        "",
        crossover_table(cross, ran.exact),
        "",
        *reading(cross, ran.exact),
        "",
        f"![{ran.exact} minus the best sampled method per budget]({FIGURES}/summary.png)",
        "",
    ]
    for k in ran.ks:
        lines += [f"## K = {k}", "", f"![accuracy against calls at K = {k}]({FIGURES}/K{k}.png)",
                  ""]
        for setting, c in curves[k].items():
            lines += [f"**{setting}**: test accuracy [{pct}% interval] at budgets of the grid",
                      "", budgets_table(c, [*methods, f"{ran.exact} - best sampled"]), ""]
    return "\n".join(lines)
