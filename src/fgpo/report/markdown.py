"""The comparison as markdown: the tables of reports/summary.md and the whole document, rendered
from `report.numbers`' rows (pure functions; `fgpo readme` copies some sections)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from fgpo.benchmarks import evidence
from fgpo.benchmarks.config import ImportConfig, PrepareConfig
from fgpo.report.config import EXACT, SAMPLED, ReportConfig
from fgpo.report.data import BASELINES, SettingData, family_methods, row_methods
from fgpo.report.numbers import FLAT
from fgpo.report.paper import PAPER
from fgpo.tools.toolset import ToolsConfig

def _pm(mean: float, std: float, seeds: int) -> str:
    return f"{mean:.3f} ± {std:.3f}" if seeds > 1 else f"{mean:.3f}"


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "—" if x is None else format(x, fmt)


def _heads(methods: list[str]) -> str:
    return " | ".join(m.upper() for m in methods)


def _ci(r: dict[str, Any], key: str, scale: float = 100, fmt: str = "+.1f") -> str:
    """`mean [lo, hi]` of a paired comparison, in points by default."""
    return (f"{format(scale * r[key], fmt)} [{format(scale * r[key + '_lo'], fmt)}, "
            f"{format(scale * r[key + '_hi'], fmt)}]")


def settings_table(rows: list[dict[str, Any]], links: dict[str, str] | None = None) -> str:
    """Test accuracy per setting: every method at its checkpoint, the paired FGPO - GRPO
    difference with its interval and verdict, McNemar's p, and the table's fixed policies."""
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    head = (f"| reasoner | benchmark | {_heads(methods)} | {EXACT.upper()} − {SAMPLED.upper()} "
            "[95% CI] | outcome | McNemar p | no tools | all tools | chance | family best | "
            "oracle (bound) |")
    sep = f"|---|---|{'---:|' * len(methods)}---:|---|---:|---:|---:|---:|---:|---:|"
    if links is not None:
        head, sep = head + " MLflow |", sep + "---|"
    lines = [head, sep]
    for r in rows:
        accs = [_pm(r[f"{m}/test/accuracy"], r[f"{m}/test/accuracy_std"], r[f"{m}/seeds"])
                for m in methods]
        line = (f"| {r['reasoner']} | {r['benchmark']} | " + "".join(f"{a} | " for a in accs) +
                f"{_ci(r, 'diff/test/accuracy')} pt | {r['outcome']} | {r['mcnemar/p']:.3g} | "
                + " | ".join(f"{r[f'baseline/test/{b}_accuracy']:.3f}"
                             for b in ("no_tools", "all_tools", "chance", "family_best",
                                       "oracle")) + " |")
        if links is not None:
            line += f" {links.get(r['reasoner'] + '/' + r['benchmark'], '—')} |"
        lines.append(line)
    return "\n".join(lines)


def outcome_line(o: dict[str, Any]) -> str:
    return (f"FGPO's test accuracy is significantly higher (paired 95% interval above zero) in "
            f"{o['overall/fgpo_wins']}, indistinguishable in {o['overall/ties']} and "
            f"significantly lower in {o['overall/fgpo_losses']} of {o['overall/settings']} "
            f"settings; mean difference {100 * o['overall/mean_diff']:+.2f} points (from "
            f"{100 * o['overall/min_diff']:+.1f} to {100 * o['overall/max_diff']:+.1f}).")


def reward_tools_table(rows: list[dict[str, Any]]) -> str:
    """Test reward and tools per question, greedy (expected under the policy), every method,
    next to the per-family best fixed subset and the fixed policies; the verdict of each method
    against the per-family best subset on reward."""
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    heads = "".join(f"{m.upper()} reward | {m.upper()} tools | {m.upper()} vs family best | "
                    for m in methods)
    lines = [f"| reasoner | benchmark | {heads}family best (acc / reward / tools) | "
             "no tools reward | all tools reward (tools) | chance reward (tools) | "
             f"{EXACT.upper()} − {SAMPLED.upper()} reward [95% CI] |",
             f"|---|---|{'---:|---:|---|' * len(methods)}---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = "".join(
            f"{r[f'{m}/test/reward']:.3f} ({r[f'{m}/test/expected_reward']:.3f}) | "
            f"{r[f'{m}/test/tools_per_question']:.2f} "
            f"({r[f'{m}/test/expected_tools_per_question']:.2f}) | "
            f"{r[f'{m}/vs_family_best/reward_outcome']} | " for m in methods)
        b = "baseline/test/"
        lines.append(
            f"| {r['reasoner']} | {r['benchmark']} | {cells}"
            f"{r[b + 'family_best_accuracy']:.3f} / {r[b + 'family_best_reward']:.3f} / "
            f"{r[b + 'family_best_tools']:.2f} | {r[b + 'no_tools_reward']:.3f} | "
            f"{r[b + 'all_tools_reward']:.3f} ({r[b + 'all_tools_tools']:.0f}) | "
            f"{r[b + 'chance_reward']:.3f} ({r[b + 'chance_tools']:.1f}) | "
            f"{_ci(r, 'diff/test/reward', fmt='+.2f')} pt |")
    return "\n".join(lines)


def family_best_line(o: dict[str, Any], methods: list[str]) -> str:
    parts = [f"{m.upper()} beats it significantly in {o[f'family_best/{m}/reward_wins']} and "
             f"loses in {o[f'family_best/{m}/reward_losses']} settings on reward "
             f"({o[f'family_best/{m}/accuracy_wins']} / "
             f"{o[f'family_best/{m}/accuracy_losses']} on accuracy)" for m in methods]
    return ("Against the per-family best fixed subset (a policy that reads only the question's "
            f"family): {'; '.join(parts)}, of {o['overall/settings']}.")


def budget_table(rows: list[dict[str, Any]]) -> str:
    """The declared schedule's evaluations against the table, and evaluations to target."""
    seeds = rows[0]["target/seed_ids"] if rows else []
    lines = ["| reasoner | benchmark | table cells (train) | GRPO schedule evals (distinct) | "
             "schedule ÷ table | target val acc (per seed) | GRPO evals to target (per seed) "
             "| to target ÷ table |", "|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        cells = r["schedule/table_cells_train"]
        hits = [r[f"target/seed{s}/grpo_reward_evals"] for s in seeds]
        total = r["target/grpo_total_evals"]
        evals = "; ".join(f"> {total:,.0f}" if h is None else f"{h:,.0f}" for h in hits)
        ratio = "; ".join("—" if h is None else f"{h / cells:.2f}" for h in hits)
        targets = "; ".join(f"{r[f'target/seed{s}/val_accuracy']:.3f}" for s in seeds)
        lines.append(
            f"| {r['reasoner']} | {r['benchmark']} | {cells:,.0f} | "
            f"{r['schedule/grpo_reward_evals']:,.0f} "
            f"({r['schedule/grpo_reward_evals_unique']:,.0f}) | "
            f"{r['schedule/measured_ratio']:.3f} | {targets} | {evals} | {ratio} |")
    return "\n".join(lines)


def convergence_table(rows: list[dict[str, Any]]) -> str:
    """Where each method's checkpoint lies, how much its validation curve still moved in the
    last epoch, and its policy's entropy at the checkpoint."""
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    lines = ["| reasoner | benchmark | " + "".join(
        f"{m.upper()} checkpoint epoch | {m.upper()} Δ val reward, last epoch | "
        f"{m.upper()} test entropy | " for m in methods).rstrip(" |") + " |",
        "|---|---|" + "---:|---:|---:|" * len(methods)]
    for r in rows:
        lines.append(f"| {r['reasoner']} | {r['benchmark']} | " + "".join(
            f"{r[f'{m}/checkpoint/epoch']:.2f} | {r[f'{m}/val/last_epoch_change']:+.4f} | "
            f"{r[f'{m}/test/entropy']:.2f} | " for m in methods).rstrip(" |") + " |")
    return "\n".join(lines)


def zero_signal_table(rows: list[dict[str, Any]], overall: dict[str, Any]) -> str:
    """Share of questions whose G-sample GRPO group has equal rewards (no gradient)."""
    lines = ["| reasoner | benchmark | uniform policy (exact) | GRPO first steps (observed) | "
             "GRPO last steps (observed) | GRPO at its checkpoint (exact) | FGPO at its "
             "checkpoint (exact) | FGPO signal-less rows |", "|---|---|---:|---:|---:|---:|---:|---:|"]
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
             "family best | oracle (bound) |",
             f"|---|---|{'---:|' * len(methods)}---:|---:|---:|---:|---:|"]
    for _, r in mean.iterrows():
        lines.append(f"| {r.benchmark} | {r.family} | " + " | ".join(
            f"{r[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines)


# ---- what ran ----------------------------------------------------------------------------------

def what_ran(prepare: PrepareConfig, tools: ToolsConfig, train: dict[str, Any],
             settings: list[SettingData]) -> str:
    """What the pipeline ran, from params.yaml (`train` as declared: the train stage checked it)
    and the reward tables' own records (each table's reasoner backend and tool cost), set against
    what the paper ran."""
    built = list(dict.fromkeys(s.reasoner for s in settings))
    backends = {s.table_meta["spec"]["backend"] for s in settings}
    tool_cost = settings[0].table_meta["tool_cost"]
    questions = {s.benchmark: s.n_questions for s in settings}
    if backends == {"rule"}:
        reasoners = (f"{len(built)} embedded rule-based reasoner profiles "
                     f"({', '.join(built)}): deterministic programs that read the "
                     "evidence a prompt would carry and differ in strength; no LLM ran. The "
                     "paper used five frozen LLM reasoners")
    else:
        reasoners = f"{len(built)} reasoners ({', '.join(built)})"
    generated, imported = [], []
    for b, cfg in prepare.benchmarks.items():
        split = "/".join(f"{100 * x:.0f}" for x in cfg.split)
        if isinstance(cfg, ImportConfig):
            imported.append(f"{b} ({questions[b]} {cfg.organism} {cfg.family} questions from "
                            f"`{cfg.source}`, train/val/test {split}%)")
        else:
            generated.append(f"{b} ({cfg.n_questions} questions, {len(evidence(b))} families, "
                             f"train/val/test {split}%)")
    bench_lines = []
    if generated:
        bench_lines.append(
            f"- **Benchmarks**: {', '.join(generated)}, generated offline from JASPAR matrices, "
            "splice consensus and organism composition models. The paper used GenomeQA "
            "(5,200 real sequence questions) and two further genomic benchmarks.")
    if imported:
        bench_lines.append(f"- **Imported collections** (real labelled sequences, yes/no "
                           f"questions): {', '.join(imported)}.")
    p, grpo = train.get("policy") or {}, train.get("grpo") or {}
    layers = f"layers {p['lora_layers']}" if p.get("lora_layers", []) else "all layers"
    return "\n".join([
        f"- **Reasoners**: {reasoners}.",
        *bench_lines,
        f"- **Tools**: K = {len(tools.names)} ({', '.join(tools.names)}), so 2^K = "
        f"{2 ** len(tools.names)} subsets; reward = correct − {tool_cost} × tools.",
        f"- **Policy**: `{_get(p, 'kind')}` on `{_get(p, 'backbone')}` + LoRA r = "
        f"{_get(p, 'lora_r')} on {', '.join(_get(p, 'lora_target_modules', []))} of {layers}, "
        f"`{_get(p, 'head')}` head; KL β = {_get(train, 'beta')} to the `{_get(p, 'reference')}` "
        "reference. The paper trained LLM-sized policies on GPUs.",
        f"- **Training**: {_get(train, 'epochs')} epochs in batches of "
        f"{_get(train, 'batch_size')} questions (every train question visited that many times "
        f"by both methods), seeds {_get(train, 'seeds')}; GRPO with G = "
        f"{_get(grpo, 'group_size')}, μ = {_get(grpo, 'inner_epochs')} optimiser steps per "
        f"rollout batch, clip {_get(grpo, 'clip_eps')}, temperature "
        f"{_get(grpo, 'temperature')}. Each run is tested at the checkpoint its "
        f"`{_get(train, 'checkpoint_rule')}` rule selects ({_get(train, 'evals_per_epoch')} "
        "validation points per epoch, the same for both). Both read the same reward table; "
        "GRPO's lookups are counted as the reasoner calls an on-demand schedule makes.",
    ])


def _get(section: dict[str, Any], key: str, default: Any = "(default)") -> Any:
    """A declared training setting; one left to its default is shown as such (the report
    imports no training code, so it does not know the defaults)."""
    return section.get(key, default)


# ---- the whole report --------------------------------------------------------------------------

def paper_table(o: dict[str, Any]) -> str:
    """The paper's headline numbers next to this run's, each row one quantity on both sides."""
    target = ("not reached in any run" if o["target/median_over_table"] is None else
              f"{o['target/median_over_table']:.3f}x (median of the {o['target/reached']} runs "
              "that reached it)")
    lines = ["| quantity | paper | this run |", "|---|---|---|",
             f"| settings where FGPO's mean test accuracy is higher | {PAPER['wins']} | "
             f"{o['overall/fgpo_higher_mean']} of {o['overall/settings']} |",
             "| settings where FGPO is significantly higher / tied / lower (paired 95% CI over "
             "test questions and seeds) | not reported | "
             f"{o['overall/fgpo_wins']} / {o['overall/ties']} / {o['overall/fgpo_losses']} |",
             f"| mean / max FGPO − GRPO test accuracy | {PAPER['mean_diff']} / "
             f"{PAPER['max_diff']} pt | {100 * o['overall/mean_diff']:+.2f} / "
             f"{100 * o['overall/max_diff']:+.2f} pt |",
             "| on-demand evaluations of the GRPO schedule ÷ table cells (epochs × G / 2^K) | "
             f"{PAPER['budget']} | {o['schedule/ratio']:.3f}x ({o['schedule/epochs']:g} × "
             f"{o['schedule/group_size']:g} / {o['schedule/subsets']:g}) |",
             "| GRPO evaluations until FGPO's validation accuracy − 1 question ÷ table cells | "
             f"not reported | {target}; {o['target/runs'] - o['target/reached']} of "
             f"{o['target/runs']} runs never reached it |"]
    if "genomeqa/grpo/test/tools_per_question" in o:
        lines.append(f"| GenomeQA tools per test question (greedy), GRPO -> FGPO | "
                     f"{PAPER['tools']} | {o['genomeqa/grpo/test/tools_per_question']:.2f} -> "
                     f"{o['genomeqa/fgpo/test/tools_per_question']:.2f} |")
    lines.append(f"| zero-signal fraction, uniform policy -> GRPO after training | "
                 f"{PAPER['zero_signal']} | {100 * o['mean/zero_signal/uniform']:.2f}% -> "
                 f"{100 * o['mean/zero_signal/grpo_trained']:.2f}% (exact for G = "
                 f"{o['zero_signal/group_size']:g}, at its checkpoint); "
                 f"{100 * o['mean/zero_signal/grpo_last_steps']:.2f}% observed in its last "
                 f"steps (its own G = {o['schedule/group_size']:g}) |")
    return "\n".join(lines)


def mechanisms(o: dict[str, Any], window: int, tuned: bool = False) -> str:
    """Where this run differs from the paper, each difference tied to a measured quantity."""
    n = o["overall/settings"]
    k_bits = math.log2(o["schedule/subsets"])
    uniform_entropy = k_bits * math.log(2)
    epochs_for_paper = 2.4 * o["schedule/subsets"] / o["schedule/group_size"]
    return "\n".join([
        f"- **Budget ratio.** The schedule ratio is a property of the declared schedule, "
        f"epochs × G / 2^K = {o['schedule/epochs']:g} × {o['schedule/group_size']:g} / "
        f"{o['schedule/subsets']:g} = {o['schedule/ratio']:.3f} (measured from the runs' own "
        f"counters: {o['schedule/measured_ratio']:.3f}); the paper's 2.4x would need "
        f"{epochs_for_paper:g} epochs at this G and K. The measured cost of learning is the "
        "evaluations-to-target column.",
        f"- **Zero signal.** In its last {window} steps GRPO observed "
        f"{100 * o['mean/zero_signal/grpo_last_steps']:.1f}% of its groups tied, with a "
        f"training-batch policy entropy of {o['mean/zero_signal/grpo_last_steps_entropy']:.2f} "
        f"nats (uniform: {uniform_entropy:.2f}): a policy concentrated on one subset draws it in "
        "all G samples, so the group ties whatever the reasoner answers, and the fraction "
        "measures that concentration as much as the table. At the selected checkpoints the "
        f"exact fraction is {100 * o['mean/zero_signal/grpo_trained']:.1f}% for GRPO (entropy "
        f"{o['mean/grpo/test/entropy']:.2f}) and {100 * o['mean/zero_signal/fgpo_trained']:.1f}% "
        f"for FGPO (entropy {o['mean/fgpo/test/entropy']:.2f}), against "
        f"{100 * o['mean/zero_signal/uniform']:.2f}% for the uniform policy.",
        f"- **Checkpoints and convergence.** GRPO's selected checkpoints lie at epoch "
        f"{o['mean/grpo/checkpoint/epoch']:.2f} on average, FGPO's at "
        f"{o['mean/fgpo/checkpoint/epoch']:.2f} (of {o['schedule/epochs']:g}). The seed-mean "
        f"validation expected reward moved by at most {FLAT} over the last epoch in "
        f"{o['count/fgpo/val/flat']} of {n} settings for FGPO and {o['count/grpo/val/flat']} "
        f"for GRPO (largest change {o['max/fgpo/val/last_epoch_change']:.4f} and "
        f"{o['max/grpo/val/last_epoch_change']:.4f}).",
        f"- **Tools per question.** GRPO's greedy subsets use {o['mean/grpo/test/tools_per_question']:.2f} "
        f"tools per question on average against FGPO's {o['mean/fgpo/test/tools_per_question']:.2f} "
        f"and the per-family best fixed subset's {o['mean/baseline/test/family_best_tools']:.2f}; "
        f"GRPO uses fewer tools than that subset in {o['count/grpo/fewer_tools_than_family_best']} "
        f"of {n} settings (FGPO in {o['count/fgpo/fewer_tools_than_family_best']}), the reverse of "
        "the paper's direction. A candidate mechanism, GRPO's group std normalisation turning the "
        "per-tool cost into a unit-size advantage whenever a group's correctness ties, is not "
        "measured by this run; the ablation with Dr. GRPO and tool cost 0 measures it.",
        f"- **Reasoners, scale and tuning.** The reasoners here are rule-based programs and the "
        "policy a small encoder with LoRA, "
        + ("each method with its own values from an equal-budget study (the Tuning section)"
           if tuned else "both methods with the same, untuned hyperparameters")
        + ": the gap is a property of this setup, not a replication of the paper's LLM "
        "numbers.",
    ])


def tuning_section(tuning: list[dict[str, Any]], tune: dict[str, Any]) -> str:
    """What was tuned: each method's trials, budget, best objective and chosen values."""
    if not tuning:
        return ("Not tuned: every method trains with `params.yaml`'s shared `train` values "
                "(`make tune` runs the equal-budget studies and writes `tune/tuned.yaml`).")
    settings = ", ".join(tune.get("settings", []))
    lines = [f"Each method's own Optuna study (TPE, no pruning, so every trial spends the same): "
             f"{tune.get('epochs')} epochs of every train question of each tuning setting "
             f"({settings}) per trial with the first training seed, scored by the validation "
             "expected reward at the best-validation checkpoint averaged over those settings. The chosen values "
             "(`tune/tuned.yaml`) are what every setting above trained with.", "",
             "| method | trials (complete) | question visits per trial | reward evaluations per "
             "trial (median) | best objective | chosen values |", "|---|---:|---:|---:|---:|---|"]
    for t in tuning:
        visits = " / ".join(f"{v:,.0f}" for v in t["question_visits"]) or "—"
        chosen = ", ".join(f"`{k}` = {v:.4g}" if isinstance(v, float) else f"`{k}` = {v}"
                           for k, v in sorted(t["chosen"].items())) or "(not written)"
        lines.append(f"| {t['method'].upper()} | {t['trials']} ({t['complete']}) | {visits} | "
                     f"{_n(t['reward_evals_median'])} | "
                     f"{'—' if t['best'] is None else format(t['best'], '.4f')} | {chosen} |")
    return "\n".join(lines)


def render_summary(rows: list[dict[str, Any]], overall: dict[str, Any], fam: pd.DataFrame,
                   what_ran: str, figures: dict[str, str], cfg: ReportConfig,
                   tuning: list[dict[str, Any]] | None = None,
                   tune: dict[str, Any] | None = None) -> str:
    """reports/summary.md. Sections start with `## `; `fgpo readme` copies some of them."""
    g = rows[0]["zero_signal/group_size"] if rows else 8
    methods = row_methods(rows[0]) if rows else [EXACT, SAMPLED]
    level = f"{100 * cfg.level:g}%"
    parts = [
        "# FGPO vs GRPO: comparison report",
        "Generated by `fgpo report` (the `report` DVC stage) from `metrics/train`, "
        "`plots/train`, `data/selections` and the reward tables. Run ids and MLflow compare "
        "links for every row: `reports/mlflow_runs.md` (written beside this file from the local "
        "tracking store; not versioned, since run ids differ per machine).",
        "## What ran", what_ran,
        "## Tuning", tuning_section(tuning or [], tune or {}),
        "## Paper vs this run", paper_table(overall),
        "## Test accuracy per setting",
        "Greedy (argmax) subset on the test split, each run at its best-validation checkpoint; "
        "mean ± spread over seeds. The difference is paired: both methods answer the same test "
        f"questions under the same seeds, and its {level} interval comes from a two-way "
        f"bootstrap ({cfg.n_boot:,} replicates) that resamples test questions and seeds. "
        "*win* / *loss*: the interval excludes zero; *tie* otherwise. McNemar's exact test on "
        "the paired correctness is shown beside it. Fixed policies from the reward table: no "
        "tools, all tools, chance (a uniformly random subset, expected), the per-family best "
        "fixed subset (the best subset for each question family, chosen on train), and the "
        "per-question oracle: an upper bound that picks each question's best subset after "
        "seeing its answers (including lucky guesses of the no-evidence fallback), not a "
        "reachable target.",
        settings_table(rows), outcome_line(overall),
        "## Test reward and tools",
        "Reward = correct − tool cost × tools, the quantity both methods maximise. Each method's "
        "greedy choice, and in brackets its expectation under the policy. *vs family best*: the "
        f"paired {level} interval of the method's reward minus the per-family best fixed "
        "subset's on the same questions (win = significantly higher).",
        reward_tools_table(rows), family_best_line(overall, methods),
        "## Reward-evaluation budgets",
        "FGPO reads the train split's whole table (questions × 2^K cells, built once before "
        "training). GRPO pays one on-demand reasoner call per sampled subset over its declared "
        "schedule (distinct (question, subset) pairs in brackets: what a cache would pay); "
        "*schedule ÷ table* is epochs × G / 2^K. *Evaluations to target*, per seed: GRPO's "
        "cumulative on-demand evaluations until its validation accuracy first reaches FGPO's "
        "validation accuracy at FGPO's selected checkpoint minus one validation question "
        "(same seed); *> X* means not reached within its whole schedule of X evaluations.",
        budget_table(rows),
        "## Zero-signal fraction",
        f"Share of questions whose G = {g} sampled subsets all get the same reward, so GRPO's "
        "normalised advantage is zero. *Exact* values are the probability under the policy "
        "(uniform, or the method's policy at its checkpoint on test); *observed* values are "
        f"GRPO's training batches (seed mean over the first / last {cfg.zero_signal_window} "
        "steps). FGPO loses the signal only on rows whose rewards are all equal (last column).",
        zero_signal_table(rows, overall),
        "## Convergence and checkpoints",
        "Each run is tested at the validation point with the highest expected reward (step 0 "
        "included). *Δ val reward, last epoch*: the seed-mean validation expected reward at the "
        "end minus one epoch earlier (near zero: the curve has flattened). Entropy in nats of "
        "the policy at its checkpoint, mean over test questions and seeds. The validation "
        "curves are the first figure.",
        convergence_table(rows),
        "## Why this run differs from the paper",
        mechanisms(overall, cfg.zero_signal_window, tuned=bool(tuning)),
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
