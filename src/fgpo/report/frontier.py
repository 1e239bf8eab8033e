"""Accuracy against reasoner calls: the budget frontier's selection rule.

Every run contributes its validation points (fgpo.evaluate.evaluate_validation_points): the
distinct reasoner calls spent by then, the validation numbers, the test numbers of its weights.
At a budget B, a method's point for one seed is the validation point with the highest
validation expected reward among all of that method's points (every run of the seed: FGPO's
sub-tables and its whole table alike) reached with at most B calls; the test numbers are read
only from the point so chosen. A budget below a method's first point (step 0 costs nothing, so
only a budget below 0) has no point.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

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
