"""The report's PNG figures, from numbers `report.numbers` already computed (each training
run's own learning curve is `fgpo.train.curve`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fgpo.report.config import EXACT, SAMPLED  # noqa: E402
from fgpo.report.data import (SettingData, family_methods, mean_curve,  # noqa: E402
                              subset_label)

STYLE = {EXACT: {"ls": "-", "marker": "o"}, SAMPLED: {"ls": "--", "marker": "s"}}
OTHER_STYLES = [{"ls": "-.", "marker": "^"}, {"ls": ":", "marker": "v"},
                {"ls": (0, (5, 1, 1, 1)), "marker": "D"}, {"ls": (0, (1, 2)), "marker": "x"}]


def style(m: str, methods: list[str]) -> dict:
    """The headline pair's fixed line styles; every other method one of its own."""
    others = [x for x in methods if x not in STYLE]
    return STYLE.get(m) or OTHER_STYLES[others.index(m) % len(OTHER_STYLES)]


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, dpi=100, format="png", metadata={"Software": None})
    plt.close(fig)
    tmp.replace(path)
    return path


def _panels(benchmarks: list[str], height: float = 3.6) -> tuple[plt.Figure, dict]:
    fig, axes = plt.subplots(1, len(benchmarks), figsize=(5.2 * len(benchmarks), height),
                             squeeze=False)
    return fig, dict(zip(benchmarks, axes[0]))


def _legend_below(fig: plt.Figure, ax: dict, title: str) -> None:
    """One legend for all panels under them, and the figure's title."""
    handles, labels = next(iter(ax.values())).get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)), fontsize=7,
               frameon=False)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.12 if len(labels) > 5 else 0.08, 1, 1))


def accuracy_vs_evals(settings: list[SettingData], path: Path) -> Path:
    """Validation accuracy against reward evaluations, one panel per benchmark.

    GRPO's x is its on-demand evaluations; FGPO's is the table rows of the questions it has
    drawn so far x 2^K (what a lazily built table costs); the dotted line is the whole train
    table that FGPO actually reads (paid once, before step 1).
    """
    benchmarks = sorted({s.benchmark for s in settings})
    reasoners = sorted({s.reasoner for s in settings})
    colors = dict(zip(reasoners, plt.cm.tab10.colors))
    fig, ax = _panels(benchmarks)
    for s in settings:
        n_sub = s.test.correct.shape[1]
        for m in s.methods:
            c = mean_curve(s.curves[m]).dropna(subset=["val_accuracy"])
            x = c["train_questions_seen"] * n_sub if m == EXACT else c["train_reward_evals"]
            ax[s.benchmark].plot(x, c["val_accuracy"], color=colors[s.reasoner], ms=3,
                                 label=f"{s.reasoner} {m.upper()}", **style(m, s.methods))
        ax[s.benchmark].axvline(s.metrics[EXACT]["budget/table_cells_train"], color="grey",
                                ls=":", lw=1)
    right = 2 * max(s.metrics[EXACT]["budget/table_cells_train"] for s in settings)
    for b, a in ax.items():
        a.set(title=b, xlabel="reward evaluations (linear to 1000, then log)",
              ylabel="validation accuracy")
        a.set_xscale("symlog", linthresh=1000)
        a.set_xlim(0, right)
        a.grid(alpha=0.3)
    _legend_below(fig, ax, "Validation accuracy vs reward evaluations (solid FGPO: table rows "
                  "seen x 2^K; dashed GRPO: on-demand; dotted: FGPO's train table)")
    return _save(fig, path)


def validation_curves(settings: list[SettingData], path: Path) -> Path:
    """Validation expected reward against epochs, a panel per setting (rows: reasoners,
    columns: benchmarks): each method's seed-mean curve, and each seed's selected checkpoint
    as an open marker, so a reader sees that both curves flattened and where the test ran."""
    benchmarks = list(dict.fromkeys(s.benchmark for s in settings))
    reasoners = list(dict.fromkeys(s.reasoner for s in settings))
    fig, axes = plt.subplots(len(reasoners), len(benchmarks), squeeze=False, sharex=True,
                             figsize=(3.6 * len(benchmarks), 2.3 * len(reasoners)))
    for s in settings:
        a = axes[reasoners.index(s.reasoner)][benchmarks.index(s.benchmark)]
        for m in s.methods:
            st = style(m, s.methods)
            c = mean_curve(s.curves[m]).dropna(subset=["val_expected_reward"])
            line, = a.plot(c["train_epoch"], c["val_expected_reward"], ls=st["ls"], lw=1.2,
                           label=m.upper())
            if "checkpoint_selected" in s.curves[m]:
                ck = s.curves[m][s.curves[m]["checkpoint_selected"] == 1]
                a.plot(ck["train_epoch"], ck["val_expected_reward"], ls="none",
                       marker=st["marker"], mfc="none", color=line.get_color(), ms=6)
        a.set_title(s.name, fontsize=8)
        a.tick_params(labelsize=7)
        a.grid(alpha=0.3)
    for a in axes[-1]:
        a.set_xlabel("epoch (train question visits / N)", fontsize=7)
    for row in axes:
        row[0].set_ylabel("val expected reward", fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               frameon=False)
    fig.suptitle("Validation expected reward per epoch, mean over seeds (open markers: each "
                 "seed's selected checkpoint)", fontsize=9)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return _save(fig, path)


def tuning_curves(best: pd.DataFrame, path: Path) -> Path:
    """Best objective so far against trial number, one line per tuned method: flat at the end
    means more trials would not have helped."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    methods = list(dict.fromkeys(best["method"]))
    for m in methods:
        b = best[best["method"] == m]
        st = style(m, methods)
        ax.plot(b["trial"], b["best"], ls=st["ls"], marker=st["marker"], ms=4, label=m.upper())
    ax.set(xlabel="trial number", ylabel="best val expected reward so far")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle("Equal-budget tuning: best objective per trial", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def zero_signal_vs_step(settings: list[SettingData], path: Path, smooth: int = 5) -> Path:
    """Share of batch questions whose sampled GRPO group had equal rewards, per step (rolling
    mean over `smooth` steps); FGPO's counterpart counts truly constant reward rows."""
    benchmarks = sorted({s.benchmark for s in settings})
    reasoners = sorted({s.reasoner for s in settings})
    colors = dict(zip(reasoners, plt.cm.tab10.colors))
    fig, ax = _panels(benchmarks)
    for s in settings:
        for m in s.methods:
            c = mean_curve(s.curves[m]).dropna(subset=["train_zero_signal_frac"])
            y = c["train_zero_signal_frac"].rolling(smooth, min_periods=1).mean()
            ax[s.benchmark].plot(c["step"], y, color=colors[s.reasoner], lw=1.2,
                                 ls=style(m, s.methods)["ls"], label=f"{s.reasoner} {m.upper()}")
    for b, a in ax.items():
        uniform = np.mean([s.table_stats["table/uniform_zero_signal_frac"] for s in settings
                           if s.benchmark == b])
        a.axhline(uniform, color="black", lw=0.8, ls=":")
        a.set(title=b, xlabel="optimiser step", ylabel="zero-signal fraction", ylim=(-0.02, 1.02))
        a.grid(alpha=0.3)
    _legend_below(fig, ax, "Zero-signal fraction per step (dashed GRPO, solid FGPO; dotted: "
                  "uniform policy, exact)")
    return _save(fig, path)


def family_accuracy(fam: pd.DataFrame, path: Path) -> Path:
    """Per-family test accuracy bars (mean over reasoners), one panel per benchmark."""
    cols = {**{m: m.upper() for m in family_methods(fam)}, "no_tools": "no tools",
            "family_best": "family best", "oracle": "oracle (bound)"}
    mean = fam.groupby(["benchmark", "family"], sort=True)[list(cols)].mean().reset_index()
    benchmarks = sorted(mean.benchmark.unique())
    fig, ax = _panels(benchmarks, height=3.8)
    width = 0.8 / len(cols)
    for b, a in ax.items():
        sub = mean[mean.benchmark == b]
        x = np.arange(len(sub))
        for i, (c, label) in enumerate(cols.items()):
            a.bar(x + (i - (len(cols) - 1) / 2) * width, sub[c], width, label=label)
        a.set_xticks(x, sub.family, rotation=30, ha="right", fontsize=8)
        a.set(title=b, ylabel="test accuracy", ylim=(0, 1.05))
        a.grid(axis="y", alpha=0.3)
    handles, labels = next(iter(ax.values())).get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(cols), fontsize=8, frameon=False)
    fig.suptitle("Per-family test accuracy, mean over reasoners", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return _save(fig, path)


def subset_heatmaps(choices: dict[str, dict[str, pd.DataFrame]], tool_names: list[str],
                    reasoner: str, path: Path) -> Path:
    """Family x subset share of greedy test choices: a row per benchmark, a column per method."""
    benchmarks = sorted(choices)
    methods = list(choices[benchmarks[0]]) if benchmarks else []
    fig, axes = plt.subplots(len(benchmarks), len(methods), squeeze=False,
                             figsize=(6.2 * len(methods), 2.9 * len(benchmarks)))
    for i, b in enumerate(benchmarks):
        for j, m in enumerate(methods):
            share, a = choices[b][m], axes[i][j]
            a.imshow(share.to_numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto")
            a.set_xticks(range(share.shape[1]),
                         [subset_label(int(k), tool_names) for k in share.columns],
                         rotation=40, ha="right", fontsize=6)
            a.set_yticks(range(share.shape[0]), share.index, fontsize=7)
            for (r, c), v in np.ndenumerate(share.to_numpy()):
                if v >= 0.05:
                    a.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=5,
                           color="white" if v < 0.6 else "black")
            a.set_title(f"{b}: {m.upper()}", fontsize=9)
    fig.suptitle(f"Greedy subset per test question, share of each family ({reasoner})",
                 fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def ablation_frontier(frontier: pd.DataFrame, path: Path) -> Path:
    """Test accuracy against tools per question, one panel per setting: each estimator's points
    at the ablation's tool costs (labelled), joined in cost order: the accuracy-tool frontier."""
    settings = list(dict.fromkeys(frontier.setting))
    methods = list(dict.fromkeys(frontier.estimator))
    fig, ax = _panels(settings, height=3.4)
    for setting, a in ax.items():
        here = frontier[frontier.setting == setting]
        for m in methods:
            pts = here[here.estimator == m].sort_values("cost")
            if pts.empty:
                continue
            st = style(m, methods)
            a.plot(pts.tools, pts.accuracy, ls=st["ls"], marker=st["marker"], ms=4, lw=1,
                   label=m)
            for p in pts.itertuples():
                a.annotate(f"{p.cost:g}", (p.tools, p.accuracy), fontsize=6,
                           textcoords="offset points", xytext=(3, 3))
        a.set_title(setting, fontsize=8)
        a.set_xlabel("test tools / question (greedy)", fontsize=7)
        a.set_ylabel("test accuracy (greedy)", fontsize=7)
        a.tick_params(labelsize=6)
    _legend_below(fig, ax, "Accuracy vs tools at tool costs (point labels), mean of seeds")
    return _save(fig, path)


def ablation_decomposition(terms: list[dict], path: Path) -> Path:
    """Each decomposition term's pooled paired accuracy difference with its interval."""
    fig, a = plt.subplots(figsize=(7.5, 0.45 * len(terms) + 1.2))
    y = np.arange(len(terms))[::-1]
    mean = np.array([100 * t["pooled"]["accuracy"] for t in terms])
    lo = np.array([100 * t["pooled"]["accuracy_lo"] for t in terms])
    hi = np.array([100 * t["pooled"]["accuracy_hi"] for t in terms])
    a.errorbar(mean, y, xerr=[mean - lo, hi - mean], fmt="o", ms=4, capsize=3, lw=1)
    a.axvline(0, color="grey", lw=0.8)
    a.set_yticks(y, [t["term"] for t in terms], fontsize=7)
    a.set_xlabel("test accuracy difference, points (pooled over settings, 95% paired interval)",
                 fontsize=7)
    a.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return _save(fig, path)


def budget_frontier(curves: dict[str, pd.DataFrame], methods: list[str], k: int,
                    path: Path) -> Path:
    """Test accuracy against distinct reasoner calls (log axis) at one K, one panel per
    setting: each method's mean over seeds and questions at the budgets, its 95% interval as a
    band (`fgpo.report.frontier.frontier_curves`)."""
    fig, ax = _panels(list(curves), height=3.6)
    for setting, a in ax.items():
        here = curves[setting]
        for m in methods:
            c = here[here.method == m].sort_values("budget")
            if c.empty:
                continue
            st = style(m, methods)
            line, = a.plot(c.budget, c.accuracy, ls=st["ls"], marker=st["marker"], ms=3, lw=1,
                           label=m)
            a.fill_between(c.budget, c.lo, c.hi, color=line.get_color(), alpha=0.15, lw=0)
        a.set_xscale("log")
        a.set_title(f"{setting}, K = {k}", fontsize=8)
        a.set_xlabel("budget: distinct reasoner calls (train cells read)", fontsize=7)
        a.set_ylabel("test accuracy of the best-validation point within it", fontsize=7)
        a.tick_params(labelsize=6)
    _legend_below(fig, ax, f"K = {k}: test accuracy against reasoner calls\n(mean of seeds "
                           "and questions, 95% two-way bootstrap band)")
    return _save(fig, path)


def budget_frontier_summary(diffs: dict[str, dict[int, pd.DataFrame]], exact: str,
                            path: Path) -> Path:
    """Per setting, the exact method minus the best sampled one at each budget (paired 95%
    interval as a band), one line per K."""
    fig, ax = _panels(list(diffs), height=3.6)
    for setting, a in ax.items():
        for i, (k, d) in enumerate(sorted(diffs[setting].items())):
            d = d.sort_values("budget")
            st = OTHER_STYLES[i % len(OTHER_STYLES)]
            line, = a.plot(d.budget, 100 * d.accuracy, ls=st["ls"], marker=st["marker"], ms=3,
                           lw=1, label=f"K = {k}")
            a.fill_between(d.budget, 100 * d.lo, 100 * d.hi, color=line.get_color(),
                           alpha=0.15, lw=0)
        a.axhline(0, color="grey", lw=0.8)
        a.set_xscale("log")
        a.set_title(setting, fontsize=8)
        a.set_xlabel("budget: distinct reasoner calls (train cells read)", fontsize=7)
        a.set_ylabel(f"{exact} - best sampled, accuracy points", fontsize=7)
        a.tick_params(labelsize=6)
    _legend_below(fig, ax, f"{exact} minus the best sampled method at each budget\n(paired "
                           "by seed and question, 95% band)")
    return _save(fig, path)
