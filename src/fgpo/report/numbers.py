"""The comparison as numbers: pure functions of loaded results (`SettingData`).

The report stage calls `setting_numbers` for each (reasoner, benchmark) setting and
`overall_numbers` across settings; `report.markdown` renders them, `summary_metrics` flattens
them into metrics/summary.json. The tests drive these with hand-made data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from fgpo.errors import InputError
from fgpo.report.config import EXACT, SAMPLED, ReportConfig
from fgpo.report.data import BASELINES, SettingData, mean_curve, row_methods
from fgpo.report.paired import mcnemar, paired_bootstrap, verdict

# ---- paired test-set scores -----------------------------------------------------------------

def score_matrix(sel: pd.DataFrame, column: str) -> pd.DataFrame:
    """A method's test selections as a [seed, question_id] matrix of `column` (correct/reward)."""
    return sel.pivot(index="seed", columns="question_id", values=column).sort_index(axis=0)


def paired(a: pd.DataFrame, b: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """diff[s, q] = a - b on `column`, the two methods' cells aligned by seed and question."""
    ma, mb = score_matrix(a, column), score_matrix(b, column)
    if list(ma.index) != list(mb.index) or set(ma.columns) != set(mb.columns):
        raise InputError(f"{what}: the two methods were tested on different seeds or questions "
                         f"(seeds {list(ma.index)} vs {list(mb.index)}); rerun `dvc repro`",
                         field="data/selections")
    return ma.to_numpy(float) - mb[ma.columns].to_numpy(float)


def against(sel: pd.DataFrame, question_ids: list[str], values: np.ndarray, column: str
            ) -> np.ndarray:
    """diff[s, q] = a method's `column` - a fixed baseline's per-question `values` (the same
    for every seed)."""
    m = score_matrix(sel, column)
    base = pd.Series(values, index=question_ids)[m.columns].to_numpy(float)
    return m.to_numpy(float) - base[None, :]


def compare(diff: np.ndarray, cfg: ReportConfig, prefix: str) -> dict[str, Any]:
    """Mean difference, paired bootstrap interval and verdict under `prefix`."""
    iv = paired_bootstrap(diff, cfg.n_boot, cfg.level, cfg.bootstrap_seed)
    return {f"{prefix}": iv.mean, f"{prefix}_lo": iv.lo, f"{prefix}_hi": iv.hi,
            f"{prefix}_outcome": verdict(iv)}


# ---- the table's own baselines ---------------------------------------------------------------

def family_best_masks(families: np.ndarray, table_stats: dict[str, Any]) -> np.ndarray:
    """Each question's subset under the per-family best fixed policy (chosen on train by the
    table stage: the subset with the highest train reward within the question's family)."""
    try:
        return np.array([int(table_stats[f"family/{f}/best_fixed_mask"]) for f in families])
    except KeyError as exc:
        raise InputError(f"table stats lack {exc.args[0]}; rerun `dvc repro table_stats`",
                         field="metrics/reward_tables") from None


def baselines(s: SettingData) -> dict[str, Any]:
    """Accuracy, reward and tools per question of the fixed policies on test, from the table:
    no tools, all tools, chance (a uniformly random subset, in expectation), the best fixed
    subset, the per-family best fixed subset, and the per-question oracle (an upper bound)."""
    t, rows = s.test, np.arange(len(s.test.families))
    fam = family_best_masks(t.families, s.table_stats)
    policies = {"no_tools": np.zeros(len(rows), int),
                "all_tools": np.full(len(rows), t.correct.shape[1] - 1),
                "best_fixed": np.full(len(rows), t.best_fixed_mask), "family_best": fam}
    out: dict[str, Any] = {}
    for name, masks in policies.items():
        out[f"baseline/test/{name}_accuracy"] = float(t.correct[rows, masks].mean())
        out[f"baseline/test/{name}_reward"] = float(t.reward[rows, masks].mean())
        out[f"baseline/test/{name}_tools"] = float(t.n_tools[masks].mean())
    out["baseline/test/chance_accuracy"] = float(t.correct.mean())
    out["baseline/test/chance_reward"] = float(t.reward.mean())
    out["baseline/test/chance_tools"] = float(t.n_tools.mean())
    out["baseline/test/oracle_accuracy"] = float(t.correct.max(1).mean())
    out["baseline/test/oracle_reward"] = float(t.reward.max(1).mean())
    out["baseline/test/oracle_tools"] = oracle_tools(t.reward, t.n_tools)
    return out


def oracle_tools(reward: np.ndarray, n_tools: np.ndarray) -> float:
    """Tools per question of the per-question oracle: fewest tools among the best subsets."""
    best = reward == reward.max(1, keepdims=True)
    return float(np.where(best, n_tools[None, :], np.iinfo(np.int64).max).min(1).mean())


# ---- budgets: the declared schedule, and evaluations to a target -----------------------------

def schedule_ratio(epochs: float, group_size: float, n_subsets: int) -> float:
    """On-demand reasoner evaluations of a GRPO schedule over the table's cells: each of N
    train questions is visited `epochs` times and each visit samples G subsets, against N x 2^K
    cells built once, so (epochs x N x G) / (N x 2^K) = epochs x G / 2^K."""
    return epochs * group_size / n_subsets


def evals_to_target(fgpo: pd.DataFrame, grpo: pd.DataFrame, n_val: int
                    ) -> list[dict[str, Any]]:
    """Per seed: GRPO's cumulative on-demand evaluations until its validation accuracy first
    reaches FGPO's validation accuracy at FGPO's selected checkpoint minus one validation
    question (`n_val` questions); None = censored (not reached within GRPO's whole schedule).
    The 1e-9 slack absorbs float noise in accuracies that are fractions of the split."""
    out = []
    for seed, gs in grpo.groupby("seed", sort=True):
        fs = fgpo[fgpo["seed"] == seed]
        chosen = fs[fs["checkpoint_selected"] == 1]
        if len(chosen) != 1:
            raise InputError(f"FGPO's curve for seed {seed} marks {len(chosen)} selected "
                             "checkpoints (expected one); retrain with this version",
                             field="plots/train")
        target = float(chosen["val_accuracy"].iloc[0]) - 1 / n_val
        val = gs.dropna(subset=["val_accuracy"]).sort_values("step")
        hit = val[val["val_accuracy"] >= target - 1e-9]
        out.append({"seed": int(seed), "target": target,
                    "evals": float(hit["train_reward_evals"].iloc[0]) if len(hit) else None,
                    "total": float(gs["train_reward_evals"].max())})
    return out


# ---- one setting ----------------------------------------------------------------------------

def setting_numbers(s: SettingData, cfg: ReportConfig) -> dict[str, Any]:
    """Every number the report shows for one setting, under slash-namespaced keys."""
    f, g = s.metrics[EXACT], s.metrics[SAMPLED]
    n_sub = s.test.correct.shape[1]
    out: dict[str, Any] = {"reasoner": s.reasoner, "benchmark": s.benchmark}
    out.update(baselines(s))
    # ---- every method at its selected checkpoint (test split) ----
    fam = family_best_masks(s.test.families, s.table_stats)
    rows = np.arange(len(fam))
    test_ids = list(s.test.question_ids)
    for m, met in s.metrics.items():
        for k in ("accuracy", "reward", "expected_accuracy", "expected_reward",
                  "tools_per_question", "expected_tools_per_question", "zero_signal_frac",
                  "entropy"):
            out[f"{m}/test/{k}"] = met[f"test/{k}"]
        out[f"{m}/test/accuracy_std"] = met.get("test/accuracy_std", 0.0)
        out[f"{m}/test/reward_std"] = met.get("test/reward_std", 0.0)
        out[f"{m}/checkpoint/epoch"] = met["checkpoint/epoch"]
        out[f"{m}/seeds"] = len(met.get("seeds", [0]))
        for col, base in (("reward", s.test.reward), ("correct", s.test.correct)):
            key = "reward" if col == "reward" else "accuracy"
            out.update(compare(against(s.selections[m], test_ids, base[rows, fam], col), cfg,
                               f"{m}/vs_family_best/{key}"))
    # ---- the headline: FGPO - GRPO, paired over test questions and seeds ----
    for col, key in (("correct", "accuracy"), ("reward", "reward")):
        out.update(compare(paired(s.selections[EXACT], s.selections[SAMPLED], col, s.name),
                           cfg, f"diff/test/{key}"))
    out["outcome"] = out["diff/test/accuracy_outcome"]
    b, c, p = mcnemar(score_matrix(s.selections[EXACT], "correct").to_numpy() > 0,
                      score_matrix(s.selections[SAMPLED], "correct").to_numpy() > 0)
    out.update({"mcnemar/fgpo_only": b, "mcnemar/grpo_only": c, "mcnemar/p": p})
    # ---- budgets: the declared GRPO schedule against the table, and evaluations to target ----
    n_train = int(s.table_stats["train/n_questions"])
    visits, evals = float(g["budget/question_visits"]), float(g["budget/reward_evals"])
    out["schedule/epochs"] = visits / n_train
    out["schedule/group_size"] = evals / visits
    out["schedule/subsets"] = n_sub
    out["schedule/grpo_reward_evals"] = evals
    out["schedule/grpo_reward_evals_unique"] = float(g["budget/reward_evals_unique"])
    out["schedule/table_cells_train"] = float(f["budget/table_cells_train"])
    out["schedule/ratio"] = schedule_ratio(out["schedule/epochs"], out["schedule/group_size"],
                                           n_sub)
    out["schedule/measured_ratio"] = evals / out["schedule/table_cells_train"]
    hits = evals_to_target(s.curves[EXACT], s.curves[SAMPLED],
                           int(s.table_stats["val/n_questions"]))
    for h in hits:
        out[f"target/seed{h['seed']}/val_accuracy"] = h["target"]
        out[f"target/seed{h['seed']}/grpo_reward_evals"] = h["evals"]
    out["target/seed_ids"] = [h["seed"] for h in hits]
    out["target/reached"] = sum(h["evals"] is not None for h in hits)
    out["target/grpo_total_evals"] = max(h["total"] for h in hits)
    # ---- zero-signal fraction ----
    w = cfg.zero_signal_window
    steps = mean_curve(s.curves[SAMPLED]).dropna(subset=["train_zero_signal_frac"])
    out["zero_signal/uniform"] = s.table_stats["table/uniform_zero_signal_frac"]
    out["zero_signal/grpo_first_steps"] = float(steps["train_zero_signal_frac"].head(w).mean())
    out["zero_signal/grpo_last_steps"] = float(steps["train_zero_signal_frac"].tail(w).mean())
    out["zero_signal/grpo_last_steps_entropy"] = float(steps["train_entropy"].tail(w).mean())
    out["zero_signal/grpo_trained"] = g["test/zero_signal_frac"]
    out["zero_signal/fgpo_trained"] = f["test/zero_signal_frac"]
    out["zero_signal/fgpo_constant_rows"] = s.table_stats["table/constant_reward_row_frac"]
    out["zero_signal/group_size"] = s.table_stats["table/group_size"]
    # ---- convergence: how much the validation curve still moved in its last epoch ----
    for m, curve in s.curves.items():
        out[f"{m}/val/last_epoch_change"] = last_epoch_change(curve)
    return out


def last_epoch_change(curve: pd.DataFrame) -> float:
    """Seed-mean validation expected reward at the end minus one epoch before the end: near
    zero when the curve has flattened."""
    c = mean_curve(curve).dropna(subset=["val_expected_reward"])
    end = float(c["train_epoch"].iloc[-1])
    before = c[c["train_epoch"] <= end - 1 + 1e-9]
    ref = before["val_expected_reward"].iloc[-1] if len(before) else c["val_expected_reward"].iloc[0]
    return float(c["val_expected_reward"].iloc[-1] - ref)


FLAT = 0.01
"""A validation curve counts as flat when its seed-mean expected reward moved by at most this
over the last epoch (one point of reward; the curves' seed spread is of that order)."""


# ---- across settings ------------------------------------------------------------------------

def overall_numbers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Across settings: significant wins/ties/losses, differences, budgets, baselines, means."""
    diffs = np.array([r["diff/test/accuracy"] for r in rows])
    methods = row_methods(rows[0])
    out: dict[str, Any] = {"overall/settings": len(rows)}
    for key, name in (("accuracy", ""), ("reward", "reward_")):
        outcomes = [r[f"diff/test/{key}_outcome"] for r in rows]
        out[f"overall/{name}fgpo_wins"] = outcomes.count("win")
        out[f"overall/{name}ties"] = outcomes.count("tie")
        out[f"overall/{name}fgpo_losses"] = outcomes.count("loss")
    out["overall/mean_diff"] = float(diffs.mean())
    out["overall/max_diff"] = float(diffs.max())
    out["overall/min_diff"] = float(diffs.min())
    out["overall/fgpo_higher_mean"] = int((diffs > 0).sum())
    out["overall/mcnemar_p05"] = sum(r["mcnemar/p"] < 0.05 for r in rows)
    out["overall/mean_reward_diff"] = float(np.mean([r["diff/test/reward"] for r in rows]))
    for m in methods:
        for key in ("reward", "accuracy"):
            outcomes = [r[f"{m}/vs_family_best/{key}_outcome"] for r in rows]
            out[f"family_best/{m}/{key}_wins"] = outcomes.count("win")
            out[f"family_best/{m}/{key}_losses"] = outcomes.count("loss")
        out[f"mean/{m}/checkpoint/epoch"] = float(np.mean([r[f"{m}/checkpoint/epoch"]
                                                           for r in rows]))
        out[f"mean/{m}/test/entropy"] = float(np.mean([r[f"{m}/test/entropy"] for r in rows]))
        out[f"mean/{m}/val/last_epoch_change"] = float(np.mean(
            [r[f"{m}/val/last_epoch_change"] for r in rows]))
        out[f"max/{m}/val/last_epoch_change"] = float(np.max(
            [abs(r[f"{m}/val/last_epoch_change"]) for r in rows]))
        out[f"count/{m}/val/flat"] = sum(abs(r[f"{m}/val/last_epoch_change"]) <= FLAT
                                         for r in rows)
        out[f"mean/{m}/test/tools_per_question"] = float(np.mean(
            [r[f"{m}/test/tools_per_question"] for r in rows]))
        out[f"count/{m}/fewer_tools_than_family_best"] = sum(
            r[f"{m}/test/tools_per_question"] < r["baseline/test/family_best_tools"]
            for r in rows)
    out["zero_signal/group_size"] = rows[0]["zero_signal/group_size"]  # the exact measure's G
    out["mean/baseline/test/family_best_tools"] = float(np.mean(
        [r["baseline/test/family_best_tools"] for r in rows]))
    # the declared schedule is one for every setting; its ratio is reported once
    ratios = sorted({round(r["schedule/ratio"], 9) for r in rows})
    out["schedule/ratio"] = float(np.median([r["schedule/ratio"] for r in rows]))
    out["schedule/ratios_differ"] = len(ratios) > 1
    for k in ("epochs", "group_size", "subsets"):
        out[f"schedule/{k}"] = float(np.median([r[f"schedule/{k}"] for r in rows]))
    out["schedule/grpo_reward_evals"] = float(sum(r["schedule/grpo_reward_evals"] for r in rows))
    out["schedule/table_cells_train"] = float(sum(r["schedule/table_cells_train"] for r in rows))
    out["schedule/measured_ratio"] = (out["schedule/grpo_reward_evals"]
                                      / out["schedule/table_cells_train"])
    reached = [r[k] / r["schedule/table_cells_train"] for r in rows for k in r
               if k.startswith("target/seed") and k.endswith("/grpo_reward_evals")
               and r[k] is not None]
    out["target/runs"] = sum(len(r["target/seed_ids"]) for r in rows)
    out["target/reached"] = len(reached)
    out["target/median_over_table"] = float(np.median(reached)) if reached else None
    for key in ("zero_signal/uniform", "zero_signal/grpo_first_steps",
                "zero_signal/grpo_last_steps", "zero_signal/grpo_last_steps_entropy",
                "zero_signal/grpo_trained",
                "zero_signal/fgpo_trained", "zero_signal/fgpo_constant_rows"):
        out[f"mean/{key}"] = float(np.mean([r[key] for r in rows]))
    for b in sorted({r["benchmark"] for r in rows}):
        sub = [r for r in rows if r["benchmark"] == b]
        for key in (*[f"{m}/test/tools_per_question" for m in methods],
                    "baseline/test/family_best_tools", "baseline/test/oracle_tools",
                    "diff/test/accuracy"):
            out[f"{b}/{key}"] = float(np.mean([r[key] for r in sub]))
    return out


# ---- per family and per subset --------------------------------------------------------------

def family_accuracy(s: SettingData) -> pd.DataFrame:
    """Test accuracy per family: every method (mean over seeds) and the table's baselines."""
    t = s.test
    fam = family_best_masks(t.families, s.table_stats)
    base = pd.DataFrame({
        "family": t.families, "no_tools": t.correct[:, 0], "all_tools": t.correct[:, -1],
        "best_fixed": t.correct[:, t.best_fixed_mask],
        "family_best": t.correct[np.arange(len(fam)), fam], "oracle": t.correct.max(1)})
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


# ---- tuning (`make tune`) ---------------------------------------------------------------------

def tuning_numbers(trials: pd.DataFrame, tuned: dict[str, dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """Per tuned method: its trials (complete / all), the budget of one trial (question visits,
    reward evaluations), the best objective and the chosen values; [] when nothing was tuned."""
    out = []
    for method, t in trials.groupby("method", sort=False):
        done = t[t["state"] == "COMPLETE"]
        out.append({
            "method": method, "trials": len(t), "complete": len(done),
            "question_visits": sorted(set(done["question_visits"].astype(float))),
            "reward_evals_median": float(done["reward_evals"].median()) if len(done) else None,
            "best": float(done["value"].max()) if len(done) else None,
            "chosen": dict(tuned.get(method) or {})})
    return out


def best_so_far(trials: pd.DataFrame) -> pd.DataFrame:
    """Per method and trial number, the best objective among its complete trials so far (the
    curve that shows whether more trials would have helped)."""
    done = trials[trials["state"] == "COMPLETE"].sort_values(["method", "trial"])
    return done.assign(best=done.groupby("method")["value"].cummax())[["method", "trial",
                                                                        "best"]]
