"""The comparison as numbers: pure functions of loaded results (`SettingData`).

The report stage calls `setting_numbers` for each (reasoner, benchmark) setting and
`overall_numbers` across settings: typed rows (`SettingRow`, `Overall`) whose headline compares
the pair `report.compare`; `report.markdown` renders them, `summary_metrics` flattens them into
metrics/summary.json (slash-named keys, the pair's names in them). The tests drive these with
hand-made data.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd

from fgpo.config import range_fraction
from fgpo.errors import InputError
from fgpo.report.config import ReportConfig
from fgpo.report.data import BASELINES, SettingData, mean_curve
from fgpo.report.paired import (Across, across_settings, cmh_by_seed, holm_verdicts,
                                leave_one_seed_out, paired_bootstrap, verdict)
from fgpo.sweep.plateau import plateau_gain

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
    return comparison(diff, cfg).flat(prefix)


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


# ---- one setting: typed rows --------------------------------------------------------------

@dataclass
class Comparison:
    """A paired difference: mean, bootstrap interval, verdict (win | tie | loss), the
    bootstrap's two-sided p and the verdict after Holm's adjustment over the comparisons of its
    table (`with_holm`; "" until then)."""

    mean: float
    lo: float
    hi: float
    outcome: str
    p: float = 1.0
    holm: str = ""

    def flat(self, prefix: str) -> dict[str, Any]:
        out = {prefix: self.mean, f"{prefix}_lo": self.lo, f"{prefix}_hi": self.hi,
               f"{prefix}_outcome": self.outcome, f"{prefix}_p": self.p}
        if self.holm:
            out[f"{prefix}_outcome_holm"] = self.holm
        return out


def comparison(diff: np.ndarray, cfg: ReportConfig) -> Comparison:
    """Mean difference, paired bootstrap interval, verdict and p."""
    iv = paired_bootstrap(diff, cfg.n_boot, cfg.level, cfg.bootstrap_seed)
    return Comparison(iv.mean, iv.lo, iv.hi, verdict(iv), iv.p)


def seed_stability(diff: np.ndarray, cfg: ReportConfig) -> list[str]:
    """The verdict on `diff` [S, Q] with each seed left out in turn ([] with one seed)."""
    return [verdict(iv) for iv in leave_one_seed_out(diff, cfg.n_boot, cfg.level,
                                                      cfg.bootstrap_seed)]


TEST_KEYS = ("accuracy", "reward", "expected_accuracy", "expected_reward", "tools_per_question",
             "expected_tools_per_question", "zero_signal_frac", "entropy")
"""A method's test metrics the report shows (mean over seeds)."""


@dataclass
class MethodRow:
    """One method on one setting, at its selected checkpoints."""

    test: dict[str, float]
    """TEST_KEYS -> mean over seeds, plus accuracy_std and reward_std."""
    checkpoint_epoch: float
    seeds: int
    vs_family_best: dict[str, Comparison]
    """reward, accuracy -> the method minus the per-family best fixed subset."""
    last_epoch_change: float
    """Seed-mean validation expected reward at the end minus one epoch before."""
    checkpoint_points: list[int]
    """Per seed, which validation point was selected (0 = step 0, the untrained policy; 1 = the
    first point after training began; ...)."""
    val_points: int
    """Validation points after step 0 (the candidates besides the starting policy)."""

    @property
    def at_first_points(self) -> int:
        """Seeds whose selected checkpoint is step 0 or the first validation point: where the
        protocol cannot see whether a better policy lay earlier."""
        return sum(p <= 1 for p in self.checkpoint_points)


def checkpoint_points(curve: pd.DataFrame) -> tuple[list[int], int]:
    """(per seed, the index of the selected validation point, step 0 being 0; the number of
    validation points after step 0) from a method's curves."""
    points, n = [], 0
    for _, c in curve.groupby("seed", sort=True):
        val = c.dropna(subset=["val_expected_reward"]).sort_values("step").reset_index(drop=True)
        chosen = val.index[val["checkpoint_selected"] == 1]
        points.append(int(chosen[0]) if len(chosen) else len(val) - 1)
        n = max(n, len(val) - 1)
    return points, n


@dataclass
class Headline:
    """The compared pair (`report.compare`) on one setting, paired over questions x seeds."""

    exact: str
    sampled: str
    accuracy: Comparison
    reward: Comparison
    leave_one_out: list[str]
    """The accuracy verdict with each seed left out in turn (seed order; [] with one seed)."""
    cmh_p: float
    """Cochran-Mantel-Haenszel p of correctness by method, stratified by seed."""
    cmh_odds_ratio: float

    @property
    def stable(self) -> int:
        """Leave-one-seed-out verdicts that equal the full one."""
        return sum(v == self.accuracy.outcome for v in self.leave_one_out)


@dataclass
class Target:
    """Per seed: the sampled method's evaluations until it reaches the exact one's validation
    accuracy at its checkpoint minus one validation question (None: never)."""

    seed: int
    val_accuracy: float
    evals: float | None


@dataclass
class Budget:
    """The sampled method's declared schedule against the exact method's table."""

    epochs: float
    group_size: float
    subsets: int
    reward_evals: float
    reward_evals_unique: float
    table_cells_train: float
    ratio: float
    """epochs x G / 2^K."""
    measured_ratio: float
    targets: list[Target]
    total_evals: float


@dataclass
class ZeroSignal:
    """Share of G-subset groups whose rewards tie (exact under a policy, or observed)."""

    uniform: float
    sampled_first_steps: float
    sampled_last_steps: float
    sampled_last_steps_entropy: float
    sampled_trained: float
    exact_trained: float
    exact_constant_rows: float
    group_size: float


@dataclass
class SettingRow:
    """Every number the report shows for one setting."""

    reasoner: str
    benchmark: str
    baselines: dict[str, float]
    """`baselines`' keys without the baseline/test/ prefix (no_tools_accuracy, ...)."""
    methods: dict[str, MethodRow]
    """Every trained method, in train.methods order."""
    headline: Headline
    budget: Budget
    zero_signal: ZeroSignal

    @property
    def name(self) -> str:
        return f"{self.reasoner}/{self.benchmark}"

    def flat(self) -> dict[str, Any]:
        """The row under slash-namespaced keys (metrics/summary.json, under settings/<name>/),
        the compared pair's names in them: diff/test/accuracy, schedule/<sampled>_reward_evals,
        ..."""
        a, b = self.headline.exact, self.headline.sampled
        out: dict[str, Any] = {"reasoner": self.reasoner, "benchmark": self.benchmark}
        out.update({f"baseline/test/{k}": v for k, v in self.baselines.items()})
        for m, r in self.methods.items():
            out.update({f"{m}/test/{k}": r.test[k] for k in (*TEST_KEYS, "accuracy_std",
                                                              "reward_std")})
            out[f"{m}/checkpoint/epoch"] = r.checkpoint_epoch
            out[f"{m}/checkpoint/points"] = list(r.checkpoint_points)
            out[f"{m}/checkpoint/at_first_points"] = r.at_first_points
            out[f"{m}/seeds"] = r.seeds
            for key, iv in r.vs_family_best.items():
                out.update(iv.flat(f"{m}/vs_family_best/{key}"))
        h = self.headline
        out.update(h.accuracy.flat("diff/test/accuracy"))
        out.update(h.reward.flat("diff/test/reward"))
        out["outcome"] = h.accuracy.outcome
        out["outcome_holm"] = h.accuracy.holm
        out.update({"stability/agree": h.stable, "stability/of": len(h.leave_one_out),
                    "stability/verdicts": list(h.leave_one_out),
                    "cmh/p": h.cmh_p, "cmh/odds_ratio": h.cmh_odds_ratio})
        g = self.budget
        out.update({"schedule/epochs": g.epochs, "schedule/group_size": g.group_size,
                    "schedule/subsets": g.subsets, f"schedule/{b}_reward_evals": g.reward_evals,
                    f"schedule/{b}_reward_evals_unique": g.reward_evals_unique,
                    "schedule/table_cells_train": g.table_cells_train,
                    "schedule/ratio": g.ratio, "schedule/measured_ratio": g.measured_ratio})
        for t in g.targets:
            out[f"target/seed{t.seed}/val_accuracy"] = t.val_accuracy
            out[f"target/seed{t.seed}/{b}_reward_evals"] = t.evals
        out["target/seed_ids"] = [t.seed for t in g.targets]
        out["target/reached"] = sum(t.evals is not None for t in g.targets)
        out[f"target/{b}_total_evals"] = g.total_evals
        z = self.zero_signal
        out.update({"zero_signal/uniform": z.uniform,
                    f"zero_signal/{b}_first_steps": z.sampled_first_steps,
                    f"zero_signal/{b}_last_steps": z.sampled_last_steps,
                    f"zero_signal/{b}_last_steps_entropy": z.sampled_last_steps_entropy,
                    f"zero_signal/{b}_trained": z.sampled_trained,
                    f"zero_signal/{a}_trained": z.exact_trained,
                    f"zero_signal/{a}_constant_rows": z.exact_constant_rows,
                    "zero_signal/group_size": z.group_size})
        for m, r in self.methods.items():
            out[f"{m}/val/last_epoch_change"] = r.last_epoch_change
        return out


def setting_numbers(s: SettingData, cfg: ReportConfig) -> SettingRow:
    """Every number the report shows for one setting; the headline compares `cfg.compare`."""
    exact, sampled = cfg.compare
    for m in cfg.compare:
        if m not in s.metrics:
            raise InputError(f"{s.name}: report.compare names {m!r}, which was not trained "
                             f"(methods {list(s.metrics)})", field="report.compare")
    f, g = s.metrics[exact], s.metrics[sampled]
    n_sub = s.test.correct.shape[1]
    # ---- every method at its selected checkpoint (test split) ----
    fam = family_best_masks(s.test.families, s.table_stats)
    rows = np.arange(len(fam))
    test_ids = list(s.test.question_ids)
    methods = {}
    for m, met in s.metrics.items():
        test = {k: met[f"test/{k}"] for k in TEST_KEYS}
        test["accuracy_std"] = met.get("test/accuracy_std", 0.0)
        test["reward_std"] = met.get("test/reward_std", 0.0)
        vs = {("reward" if col == "reward" else "accuracy"): comparison(
                  against(s.selections[m], test_ids, base[rows, fam], col), cfg)
              for col, base in (("reward", s.test.reward), ("correct", s.test.correct))}
        methods[m] = MethodRow(test, met["checkpoint/epoch"], len(met.get("seeds", [0])), vs,
                               last_epoch_change(s.curves[m]), *checkpoint_points(s.curves[m]))
    # ---- the headline: exact - sampled, paired over test questions and seeds ----
    diff = paired(s.selections[exact], s.selections[sampled], "correct", s.name)
    right = [score_matrix(s.selections[m], "correct") for m in (exact, sampled)]
    cmh = cmh_by_seed(right[0].to_numpy() > 0, right[1][right[0].columns].to_numpy() > 0)
    headline = Headline(
        exact, sampled, comparison(diff, cfg),
        comparison(paired(s.selections[exact], s.selections[sampled], "reward", s.name), cfg),
        seed_stability(diff, cfg), cmh.p, cmh.odds_ratio)
    # ---- budgets: the declared sampled schedule against the table, and evaluations to target ----
    n_train = int(s.table_stats["train/n_questions"])
    visits, evals = float(g["budget/question_visits"]), float(g["budget/reward_evals"])
    cells = float(f["budget/table_cells_train"])
    hits = evals_to_target(s.curves[exact], s.curves[sampled],
                           int(s.table_stats["val/n_questions"]))
    budget = Budget(visits / n_train, evals / visits, n_sub, evals,
                    float(g["budget/reward_evals_unique"]), cells,
                    schedule_ratio(visits / n_train, evals / visits, n_sub), evals / cells,
                    [Target(h["seed"], h["target"], h["evals"]) for h in hits],
                    max(h["total"] for h in hits))
    # ---- zero-signal fraction ----
    w = cfg.zero_signal_window
    steps = mean_curve(s.curves[sampled]).dropna(subset=["train_zero_signal_frac"])
    zero = ZeroSignal(s.table_stats["table/uniform_zero_signal_frac"],
                      float(steps["train_zero_signal_frac"].head(w).mean()),
                      float(steps["train_zero_signal_frac"].tail(w).mean()),
                      float(steps["train_entropy"].tail(w).mean()),
                      g["test/zero_signal_frac"], f["test/zero_signal_frac"],
                      s.table_stats["table/constant_reward_row_frac"],
                      s.table_stats["table/group_size"])
    return SettingRow(s.reasoner, s.benchmark,
                      {k.removeprefix("baseline/test/"): v for k, v in baselines(s).items()},
                      methods, headline, budget, zero)


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

def with_holm(rows: list[SettingRow], cfg: ReportConfig) -> list[SettingRow]:
    """The rows with every table's verdicts Holm-adjusted over its settings (one family per
    column: the headline's accuracy, its reward, and each method against the per-family best on
    reward and on accuracy); the unadjusted verdicts stay beside them."""
    def adjust(ivs: list[Comparison]) -> list[Comparison]:
        held = holm_verdicts([i.outcome for i in ivs], [i.p for i in ivs], cfg.level)
        return [replace(i, holm=h) for i, h in zip(ivs, held)]

    acc = adjust([r.headline.accuracy for r in rows])
    rew = adjust([r.headline.reward for r in rows])
    out = [replace(r, headline=replace(r.headline, accuracy=a, reward=w), methods=dict(r.methods))
           for r, a, w in zip(rows, acc, rew)]
    for m in (rows[0].methods if rows else {}):
        for key in ("reward", "accuracy"):
            for r, iv in zip(out, adjust([r.methods[m].vs_family_best[key] for r in out])):
                r.methods[m] = replace(r.methods[m],
                                       vs_family_best={**r.methods[m].vs_family_best, key: iv})
    return out


@dataclass
class Tally:
    """Settings where the exact method of the pair is significantly higher / tied / lower."""

    wins: int
    ties: int
    losses: int


def _holm_tally(intervals: list[Comparison]) -> Tally:
    return _tally([i.holm or i.outcome for i in intervals])


@dataclass
class Group:
    """The compared pair over a group of settings (all of them, or those no study tuned on),
    each setting one observation."""

    names: list[str]
    accuracy: Tally
    holm: Tally
    """Verdicts after Holm's adjustment over all the report's settings."""
    stable: int
    """Settings whose every leave-one-seed-out verdict equals the full one."""
    across: Across
    """Sign test and t interval of the per-setting accuracy differences."""

    def flat(self, prefix: str, exact: str) -> dict[str, Any]:
        c = self.across
        return {f"{prefix}/settings": len(self.names), f"{prefix}/{exact}_wins": self.accuracy.wins,
                f"{prefix}/ties": self.accuracy.ties,
                f"{prefix}/{exact}_losses": self.accuracy.losses,
                f"{prefix}/holm_{exact}_wins": self.holm.wins, f"{prefix}/holm_ties": self.holm.ties,
                f"{prefix}/holm_{exact}_losses": self.holm.losses,
                f"{prefix}/stable": self.stable, f"{prefix}/mean_diff": c.mean,
                f"{prefix}/mean_diff_lo": c.lo, f"{prefix}/mean_diff_hi": c.hi,
                f"{prefix}/{exact}_higher": c.positive, f"{prefix}/{exact}_lower": c.negative,
                f"{prefix}/sign_p": c.sign_p}


def group(rows: list[SettingRow], level: float) -> Group:
    """`Group` of `rows` (non-empty)."""
    acc = [r.headline.accuracy for r in rows]
    return Group([r.name for r in rows], _tally([i.outcome for i in acc]), _holm_tally(acc),
                 sum(r.headline.stable == len(r.headline.leave_one_out) for r in rows),
                 across_settings([i.mean for i in acc], level))


@dataclass
class MethodOverall:
    """One method across settings."""

    family_best: dict[str, Tally]
    """reward, accuracy -> significant wins and losses against the per-family best subset."""
    family_best_holm: dict[str, Tally]
    """The same after Holm's adjustment over the settings."""
    checkpoint_epoch: float
    entropy: float
    last_epoch_change: float
    """Mean over settings of the seed-mean last-epoch change of validation expected reward."""
    max_last_epoch_change: float
    """Largest absolute one."""
    flat: int
    """Settings whose validation curve moved by at most FLAT over the last epoch."""
    tools_per_question: float
    fewer_tools_than_family_best: int
    at_first_points: int
    """Runs (settings x seeds) whose checkpoint is step 0 or the first validation point."""
    runs: int


@dataclass
class Overall:
    """Across settings: the pair's verdicts and differences, each method's means, budgets."""

    exact: str
    sampled: str
    settings: int
    accuracy: Tally
    reward: Tally
    mean_diff: float
    max_diff: float
    min_diff: float
    exact_higher_mean: int
    """Settings where the exact method's mean test accuracy is higher."""
    cmh_p05: int
    """Settings whose seed-stratified CMH p is below 0.05 (unadjusted)."""
    mean_reward_diff: float
    everywhere: Group
    """Every setting: Holm verdicts, stability, sign test, interval over settings."""
    held_out: Group | None
    """The settings no tuning study ran on (None when nothing was tuned)."""
    methods: dict[str, MethodOverall]
    mean_family_best_tools: float
    schedule: Budget
    """Medians of the schedule's shape; evaluations and cells summed; targets empty."""
    ratios_differ: bool
    target_runs: int
    target_reached: int
    target_median_over_table: float | None
    zero_signal: ZeroSignal
    """Means over settings."""
    per_benchmark: dict[str, dict[str, float]]
    """Benchmark -> <method>/test/tools_per_question, baseline/test/family_best_tools,
    baseline/test/oracle_tools, diff/test/accuracy (means over its settings)."""

    def flat(self) -> dict[str, Any]:
        """The numbers under slash-namespaced keys (metrics/summary.json, the report's MLflow
        run): overall/<exact>_wins, mean/<method>/test/entropy, ..."""
        a, b = self.exact, self.sampled
        out: dict[str, Any] = {"overall/settings": self.settings}
        for tally, name in ((self.accuracy, ""), (self.reward, "reward_")):
            out[f"overall/{name}{a}_wins"] = tally.wins
            out[f"overall/{name}ties"] = tally.ties
            out[f"overall/{name}{a}_losses"] = tally.losses
        out.update({"overall/mean_diff": self.mean_diff, "overall/max_diff": self.max_diff,
                    "overall/min_diff": self.min_diff,
                    f"overall/{a}_higher_mean": self.exact_higher_mean,
                    "overall/cmh_p05": self.cmh_p05,
                    "overall/mean_reward_diff": self.mean_reward_diff})
        out.update(self.everywhere.flat("overall", a))
        if self.held_out is not None:
            out.update(self.held_out.flat("held_out", a))
        for m, r in self.methods.items():
            for key in ("reward", "accuracy"):
                out[f"family_best/{m}/{key}_wins"] = r.family_best[key].wins
                out[f"family_best/{m}/{key}_losses"] = r.family_best[key].losses
                out[f"family_best/{m}/{key}_holm_wins"] = r.family_best_holm[key].wins
                out[f"family_best/{m}/{key}_holm_losses"] = r.family_best_holm[key].losses
            out.update({f"mean/{m}/checkpoint/epoch": r.checkpoint_epoch,
                        f"mean/{m}/test/entropy": r.entropy,
                        f"mean/{m}/val/last_epoch_change": r.last_epoch_change,
                        f"max/{m}/val/last_epoch_change": r.max_last_epoch_change,
                        f"count/{m}/val/flat": r.flat,
                        f"mean/{m}/test/tools_per_question": r.tools_per_question,
                        f"count/{m}/fewer_tools_than_family_best":
                            r.fewer_tools_than_family_best,
                        f"count/{m}/checkpoint/at_first_points": r.at_first_points,
                        f"count/{m}/runs": r.runs})
        g, z = self.schedule, self.zero_signal
        out["zero_signal/group_size"] = z.group_size
        out["mean/baseline/test/family_best_tools"] = self.mean_family_best_tools
        out.update({"schedule/ratio": g.ratio, "schedule/ratios_differ": self.ratios_differ,
                    "schedule/epochs": g.epochs, "schedule/group_size": g.group_size,
                    "schedule/subsets": g.subsets, f"schedule/{b}_reward_evals": g.reward_evals,
                    "schedule/table_cells_train": g.table_cells_train,
                    "schedule/measured_ratio": g.measured_ratio,
                    "target/runs": self.target_runs, "target/reached": self.target_reached,
                    "target/median_over_table": self.target_median_over_table})
        out.update({"mean/zero_signal/uniform": z.uniform,
                    f"mean/zero_signal/{b}_first_steps": z.sampled_first_steps,
                    f"mean/zero_signal/{b}_last_steps": z.sampled_last_steps,
                    f"mean/zero_signal/{b}_last_steps_entropy": z.sampled_last_steps_entropy,
                    f"mean/zero_signal/{b}_trained": z.sampled_trained,
                    f"mean/zero_signal/{a}_trained": z.exact_trained,
                    f"mean/zero_signal/{a}_constant_rows": z.exact_constant_rows})
        for bench, numbers in self.per_benchmark.items():
            out.update({f"{bench}/{k}": v for k, v in numbers.items()})
        return out


def _tally(outcomes: list[str]) -> Tally:
    return Tally(outcomes.count("win"), outcomes.count("tie"), outcomes.count("loss"))


def overall_numbers(rows: list[SettingRow], tuned_on: Sequence[str] = (),
                    level: float = 0.95) -> Overall:
    """Across settings: significant wins/ties/losses, differences, budgets, baselines, means;
    the same for the settings not in `tuned_on` (the tuning studies' 'reasoner/benchmark');
    `level` of the interval over settings."""
    diffs = np.array([r.headline.accuracy.mean for r in rows])
    exact, sampled = rows[0].headline.exact, rows[0].headline.sampled
    methods = {}
    for m in rows[0].methods:
        per = [r.methods[m] for r in rows]
        change = [p.last_epoch_change for p in per]
        methods[m] = MethodOverall(
            {key: _tally([p.vs_family_best[key].outcome for p in per])
             for key in ("reward", "accuracy")},
            {key: _holm_tally([p.vs_family_best[key] for p in per])
             for key in ("reward", "accuracy")},
            float(np.mean([p.checkpoint_epoch for p in per])),
            float(np.mean([p.test["entropy"] for p in per])),
            float(np.mean(change)), float(np.max([abs(c) for c in change])),
            sum(abs(c) <= FLAT for c in change),
            float(np.mean([p.test["tools_per_question"] for p in per])),
            sum(r.methods[m].test["tools_per_question"] < r.baselines["family_best_tools"]
                for r in rows),
            sum(p.at_first_points for p in per), sum(len(p.checkpoint_points) for p in per))
    # the declared schedule is one for every setting; its ratio is reported once
    budgets = [r.budget for r in rows]
    ratios = sorted({round(g.ratio, 9) for g in budgets})
    evals = float(sum(g.reward_evals for g in budgets))
    cells = float(sum(g.table_cells_train for g in budgets))
    schedule = Budget(float(np.median([g.epochs for g in budgets])),
                      float(np.median([g.group_size for g in budgets])),
                      float(np.median([g.subsets for g in budgets])), evals,
                      float(sum(g.reward_evals_unique for g in budgets)), cells,
                      float(np.median([g.ratio for g in budgets])), evals / cells, [],
                      max(g.total_evals for g in budgets))
    reached = [t.evals / g.table_cells_train for g in budgets for t in g.targets
               if t.evals is not None]
    zs = [r.zero_signal for r in rows]
    zero = ZeroSignal(*(float(np.mean([getattr(z, f) for z in zs])) for f in (
        "uniform", "sampled_first_steps", "sampled_last_steps", "sampled_last_steps_entropy",
        "sampled_trained", "exact_trained", "exact_constant_rows")), zs[0].group_size)
    per_benchmark = {}
    for bench in sorted({r.benchmark for r in rows}):
        sub = [r for r in rows if r.benchmark == bench]
        numbers = {f"{m}/test/tools_per_question": float(np.mean(
            [r.methods[m].test["tools_per_question"] for r in sub])) for m in methods}
        for key in ("family_best_tools", "oracle_tools"):
            numbers[f"baseline/test/{key}"] = float(np.mean([r.baselines[key] for r in sub]))
        numbers["diff/test/accuracy"] = float(np.mean([r.headline.accuracy.mean for r in sub]))
        per_benchmark[bench] = numbers
    return Overall(
        exact, sampled, len(rows), _tally([r.headline.accuracy.outcome for r in rows]),
        _tally([r.headline.reward.outcome for r in rows]), float(diffs.mean()),
        float(diffs.max()), float(diffs.min()), int((diffs > 0).sum()),
        sum(r.headline.cmh_p < 0.05 for r in rows),
        float(np.mean([r.headline.reward.mean for r in rows])), group(rows, level),
        group(held, level) if (held := [r for r in rows if r.name not in set(tuned_on)])
        and len(held) < len(rows) else None, methods,
        float(np.mean([r.baselines["family_best_tools"] for r in rows])), schedule,
        len(ratios) > 1, sum(len(g.targets) for g in budgets), len(reached),
        float(np.median(reached)) if reached else None, zero, per_benchmark)


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


def summary_metrics(rows: list[SettingRow], overall: Overall) -> dict[str, Any]:
    """metrics/summary.json: the overall numbers and every setting's, flat and slash-named."""
    out = overall.flat()
    for r in rows:
        for k, v in r.flat().items():
            if k not in ("reasoner", "benchmark"):
                out[f"settings/{r.reasoner}/{r.benchmark}/{k}"] = v
    return out


# ---- tuning (`make tune`) ---------------------------------------------------------------------

BOUND_MARGIN = 0.1
"""A chosen value within this fraction of its range of a bound (on the log scale for a log
range) counts as at the bound: the search may have stopped where the range did."""


def at_bound(value: Any, spec: dict[str, Any]) -> bool:
    """Whether a chosen value lies within BOUND_MARGIN of its range's ends (never for a
    categorical dimension)."""
    if "low" not in spec or "high" not in spec or spec.get("type") == "categorical":
        return False
    frac = range_fraction(value, spec["low"], spec["high"], bool(spec.get("log")))
    return bool(frac < BOUND_MARGIN or frac > 1 - BOUND_MARGIN)


def same_values(trial: dict[str, Any], chosen: dict[str, Any]) -> bool:
    """A trial's values are the chosen ones: the same keys, floats equal to 1e-12 relative
    (the tuned file may hold a float rounded in its last digits, `fgpo.sweep.handoff`)."""
    return trial.keys() == chosen.keys() and all(
        math.isclose(v, chosen[k], rel_tol=1e-12) if isinstance(v, float) else v == chosen[k]
        for k, v in trial.items())


def tuning_numbers(trials: pd.DataFrame, tuned: dict[str, dict[str, Any]],
                   space: dict[str, dict[str, dict[str, Any]]] | None = None,
                   window: int = 12) -> list[dict[str, Any]]:
    """Per tuned method: its trials (complete / all), the budget of one trial (question visits,
    reward evaluations), the best objective and the chosen values; whether the study had
    stopped improving (the complete trial that set the best, and what its last `window` trials,
    tune.plateau_trials, added to the best of the trials before them) and which chosen values
    sit at a bound of `space` (tune.space); [] when nothing was tuned."""
    out = []
    for method, t in trials.groupby("method", sort=False):
        done = t[t["state"] == "COMPLETE"].sort_values("trial")
        values = done["value"].astype(float).to_numpy()
        chosen = dict(tuned.get(method) or {})
        dims = (space or {}).get(method) or {}
        picked = done[[same_values(json.loads(p), chosen) for p in done["params"]]] \
            if chosen else done[:0]
        out.append({
            "method": method, "trials": len(t), "complete": len(done),
            "question_visits": sorted(set(done["question_visits"].astype(float))),
            "reward_evals_median": float(done["reward_evals"].median()) if len(done) else None,
            "best": float(values.max()) if len(values) else None,
            "best_at": int(np.argmax(values)) + 1 if len(values) else None,
            "plateau_gain": plateau_gain(values, window), "plateau_trials": window,
            "at_bound": sorted(k for k, v in chosen.items() if k in dims and at_bound(v, dims[k])),
            "chosen_trial": int(picked["trial"].iloc[0]) if len(picked) else None,
            "chosen_value": float(picked["value"].iloc[0]) if len(picked) else None,
            "chosen": chosen})
    return out


def best_so_far(trials: pd.DataFrame) -> pd.DataFrame:
    """Per method and trial number, the best objective among its complete trials so far (the
    curve that shows whether more trials would have helped)."""
    done = trials[trials["state"] == "COMPLETE"].sort_values(["method", "trial"])
    return done.assign(best=done.groupby("method")["value"].cummax())[["method", "trial",
                                                                        "best"]]
