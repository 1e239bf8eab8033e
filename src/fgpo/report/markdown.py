"""The comparison as markdown: the tables of reports/summary.md and the whole document, rendered
from `report.numbers`' rows (pure functions; `fgpo readme` copies some sections)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from fgpo.benchmarks import evidence
from fgpo.benchmarks.config import ImportConfig, PrepareConfig
from fgpo.report.config import EXACT, SAMPLED, ReportConfig
from fgpo.report.data import BASELINES, SettingData, family_methods, row_methods
from fgpo.report.paper import PAPER
from fgpo.tools import ToolsConfig

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
        accs = [_pm(r[f"{m}/test/accuracy"], r[f"{m}/test/accuracy_std"], r[f"{m}/seeds"])
                for m in methods]
        line = (f"| {r['reasoner']} | {r['benchmark']} | " + "".join(f"{a} | " for a in accs) +
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
