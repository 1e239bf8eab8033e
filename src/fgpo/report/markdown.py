"""The comparison as markdown: the tables of reports/summary.md and the whole document, rendered
from `report.numbers`' typed rows (`SettingRow`, `Overall`; pure functions; `fgpo readme` copies
some sections). The headline pair is `report.compare` (FGPO and GRPO by default): its names
head the columns and the prose."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from fgpo.benchmarks import evidence
from fgpo.benchmarks.config import ImportConfig, PrepareConfig
from fgpo.report.config import ReportConfig
from fgpo.report.data import BASELINES, SettingData, family_methods
from fgpo.report.numbers import FLAT, Comparison, Group, Overall, SettingRow
from fgpo.report.paper import PAPER
from fgpo.sweep.plateau import still_improving
from fgpo.tools.toolset import ToolsConfig

def _pm(mean: float, std: float, seeds: int) -> str:
    return f"{mean:.3f} ± {std:.3f}" if seeds > 1 else f"{mean:.3f}"


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "—" if x is None else format(x, fmt)


def _heads(methods: list[str]) -> str:
    return " | ".join(m.upper() for m in methods)


def _ci(iv: Comparison, scale: float = 100, fmt: str = "+.1f") -> str:
    """`mean [lo, hi]` of a paired comparison, in points by default."""
    return (f"{format(scale * iv.mean, fmt)} [{format(scale * iv.lo, fmt)}, "
            f"{format(scale * iv.hi, fmt)}]")


def _level(cfg: ReportConfig | None) -> str:
    return f"{100 * (cfg or ReportConfig()).level:g}%"


def settings_table(rows: list[SettingRow], links: dict[str, str] | None = None,
                   cfg: ReportConfig | None = None) -> str:
    """Test accuracy per setting: every method at its checkpoint, the compared pair's paired
    difference with its interval, its verdict unadjusted and after Holm's adjustment over the
    settings, how many leave-one-seed-out verdicts agree, the seed-stratified CMH p, and the
    table's fixed policies."""
    methods = list(rows[0].methods) if rows else list((cfg or ReportConfig()).compare)
    a, b = (rows[0].headline.exact, rows[0].headline.sampled) if rows else \
        tuple((cfg or ReportConfig()).compare)
    head = (f"| reasoner | benchmark | {_heads(methods)} | {a.upper()} − {b.upper()} "
            f"[{_level(cfg)} CI] | outcome | Holm | seed-stable | CMH p | no tools | all tools | "
            "chance | family best | oracle (bound) |")
    sep = f"|---|---|{'---:|' * len(methods)}---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
    if links is not None:
        head, sep = head + " MLflow |", sep + "---|"
    lines = [head, sep]
    for r in rows:
        accs = [_pm(r.methods[m].test["accuracy"], r.methods[m].test["accuracy_std"],
                    r.methods[m].seeds) for m in methods]
        line = (f"| {r.reasoner} | {r.benchmark} | " + "".join(f"{x} | " for x in accs) +
                f"{_ci(r.headline.accuracy)} pt | {r.headline.accuracy.outcome} | "
                f"{r.headline.accuracy.holm or '—'} | {_stable(r)} | {r.headline.cmh_p:.3g} | "
                + " | ".join(f"{r.baselines[f'{k}_accuracy']:.3f}"
                             for k in ("no_tools", "all_tools", "chance", "family_best",
                                       "oracle")) + " |")
        if links is not None:
            line += f" {links.get(r.name, '—')} |"
        lines.append(line)
    return "\n".join(lines)


def _stable(r: SettingRow) -> str:
    """`agree/of` leave-one-seed-out verdicts equal to the full one (— with one seed)."""
    h = r.headline
    return f"{h.stable}/{len(h.leave_one_out)}" if h.leave_one_out else "—"


def outcome_line(o: Overall, cfg: ReportConfig | None = None) -> str:
    return (f"{o.exact.upper()}'s test accuracy is significantly higher (paired {_level(cfg)} "
            f"interval above zero) in {o.accuracy.wins}, indistinguishable in {o.accuracy.ties} "
            f"and significantly lower in {o.accuracy.losses} of {o.settings} settings; mean "
            f"difference {100 * o.mean_diff:+.2f} points (from {100 * o.min_diff:+.1f} to "
            f"{100 * o.max_diff:+.1f}).")


def _group_line(name: str, g: Group, exact: str) -> str:
    c = g.across
    interval = ("" if math.isnan(c.lo) else
                f" [{100 * c.lo:+.2f}, {100 * c.hi:+.2f}] ({100 * c.level:g}% t interval over "
                "settings)")
    return (f"| {name} | {len(g.names)} | {g.accuracy.wins} / {g.accuracy.ties} / "
            f"{g.accuracy.losses} | {g.holm.wins} / {g.holm.ties} / {g.holm.losses} | "
            f"{g.stable} of {len(g.names)} | {100 * c.mean:+.2f}{interval} | "
            f"{c.positive} of {c.positive + c.negative}: p = {c.sign_p:.2g} |")


def across_table(o: Overall) -> str:
    """The verdicts over settings: every setting, and the settings no study tuned on."""
    a = o.exact.upper()
    lines = [f"| settings | n | {a} wins / ties / losses | after Holm | verdict seed-stable | "
             f"mean {a} − {o.sampled.upper()} (pt) | settings favouring {a}: sign test |",
             "|---|---:|---|---|---|---|---|", _group_line("all", o.everywhere, o.exact)]
    if o.held_out is not None:
        lines.append(_group_line("not tuned on", o.held_out, o.exact))
    return "\n".join(lines)


def reward_tools_table(rows: list[SettingRow], cfg: ReportConfig | None = None) -> str:
    """Test reward and tools per question, greedy (expected under the policy), every method,
    next to the per-family best fixed subset and the fixed policies; the verdict of each method
    against the per-family best subset on reward."""
    methods = list(rows[0].methods)
    a, b = rows[0].headline.exact, rows[0].headline.sampled
    heads = "".join(f"{m.upper()} reward | {m.upper()} tools | {m.upper()} vs family best | "
                    for m in methods)
    lines = [f"| reasoner | benchmark | {heads}family best (acc / reward / tools) | "
             "no tools reward | all tools reward (tools) | chance reward (tools) | "
             f"{a.upper()} − {b.upper()} reward [{_level(cfg)} CI] |",
             f"|---|---|{'---:|---:|---|' * len(methods)}---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = "".join(
            f"{t['reward']:.3f} ({t['expected_reward']:.3f}) | "
            f"{t['tools_per_question']:.2f} ({t['expected_tools_per_question']:.2f}) | "
            f"{r.methods[m].vs_family_best['reward'].outcome} | "
            for m in methods for t in [r.methods[m].test])
        base = r.baselines
        lines.append(
            f"| {r.reasoner} | {r.benchmark} | {cells}"
            f"{base['family_best_accuracy']:.3f} / {base['family_best_reward']:.3f} / "
            f"{base['family_best_tools']:.2f} | {base['no_tools_reward']:.3f} | "
            f"{base['all_tools_reward']:.3f} ({base['all_tools_tools']:.0f}) | "
            f"{base['chance_reward']:.3f} ({base['chance_tools']:.1f}) | "
            f"{_ci(r.headline.reward, fmt='+.2f')} pt |")
    return "\n".join(lines)


def family_best_line(o: Overall) -> str:
    parts = [f"{m.upper()} beats it significantly in {r.family_best['reward'].wins} and "
             f"loses in {r.family_best['reward'].losses} settings on reward "
             f"({r.family_best['accuracy'].wins} / {r.family_best['accuracy'].losses} on "
             "accuracy)" for m, r in o.methods.items()]
    return ("Against the per-family best fixed subset (a policy that reads only the question's "
            f"family): {'; '.join(parts)}, of {o.settings}.")


def budget_table(rows: list[SettingRow]) -> str:
    """The declared schedule's evaluations against the table, and evaluations to target."""
    b = rows[0].headline.sampled.upper() if rows else "GRPO"
    lines = ["| reasoner | benchmark | table cells (train) | "
             f"{b} schedule evals (distinct) | schedule ÷ table | target val acc (per seed) | "
             f"{b} evals to target (per seed) | to target ÷ table |",
             "|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        g = r.budget
        cells = g.table_cells_train
        evals = "; ".join(f"> {g.total_evals:,.0f}" if t.evals is None else f"{t.evals:,.0f}"
                          for t in g.targets)
        ratio = "; ".join("—" if t.evals is None else f"{t.evals / cells:.2f}"
                          for t in g.targets)
        targets = "; ".join(f"{t.val_accuracy:.3f}" for t in g.targets)
        lines.append(
            f"| {r.reasoner} | {r.benchmark} | {cells:,.0f} | {g.reward_evals:,.0f} "
            f"({g.reward_evals_unique:,.0f}) | {g.measured_ratio:.3f} | {targets} | {evals} | "
            f"{ratio} |")
    return "\n".join(lines)


def convergence_table(rows: list[SettingRow]) -> str:
    """Where each method's checkpoint lies (mean epoch, and per seed which validation point),
    how much its validation curve still moved in the last epoch, and its policy's entropy at
    the checkpoint."""
    methods = list(rows[0].methods)
    lines = ["| reasoner | benchmark | " + "".join(
        f"{m.upper()} checkpoint epoch | {m.upper()} checkpoint point per seed | "
        f"{m.upper()} Δ val reward, last epoch | {m.upper()} test entropy | "
        for m in methods).rstrip(" |") + " |",
        "|---|---|" + "---:|---|---:|---:|" * len(methods)]
    for r in rows:
        lines.append(f"| {r.reasoner} | {r.benchmark} | " + "".join(
            f"{x.checkpoint_epoch:.2f} | {', '.join(map(str, x.checkpoint_points))} of "
            f"{x.val_points} | {x.last_epoch_change:+.4f} | {x.test['entropy']:.2f} | "
            for x in r.methods.values()).rstrip(" |") + " |")
    return "\n".join(lines)


def checkpoint_line(o: Overall) -> str:
    """How many runs' checkpoints sit on the first validation points, per method."""
    parts = [f"{m.upper()} {r.at_first_points} of {r.runs}" for m, r in o.methods.items()]
    return ("Runs whose selected checkpoint is step 0 or the first validation point (where the "
            "schedule cannot see whether a better policy lay earlier): " + ", ".join(parts)
            + ".")


ZERO_SIGNAL_COLUMNS = ("uniform", "sampled_first_steps", "sampled_last_steps",
                       "sampled_trained", "exact_trained", "exact_constant_rows")


def zero_signal_table(rows: list[SettingRow], overall: Overall) -> str:
    """Share of questions whose G-sample group has equal rewards (no gradient)."""
    a, b = overall.exact.upper(), overall.sampled.upper()
    lines = [f"| reasoner | benchmark | uniform policy (exact) | {b} first steps (observed) | "
             f"{b} last steps (observed) | {b} at its checkpoint (exact) | {a} at its "
             f"checkpoint (exact) | {a} signal-less rows |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.reasoner} | {r.benchmark} | " + " | ".join(
            f"{100 * getattr(r.zero_signal, k):.2f}%" for k in ZERO_SIGNAL_COLUMNS) + " |")
    lines.append("| **mean** | | " + " | ".join(
        f"**{100 * getattr(overall.zero_signal, k):.2f}%**" for k in ZERO_SIGNAL_COLUMNS)
        + " |")
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

def paper_table(o: Overall) -> str:
    """The paper's headline numbers next to this run's, each row one quantity on both sides
    (the paper compared FGPO with GRPO; the right column compares the pair of
    `report.compare`)."""
    a, b, g, z = o.exact.upper(), o.sampled.upper(), o.schedule, o.zero_signal
    target = ("not reached in any run" if o.target_median_over_table is None else
              f"{o.target_median_over_table:.3f}x (median of the {o.target_reached} runs "
              "that reached it)")
    lines = ["| quantity | paper | this run |", "|---|---|---|",
             f"| settings where {a}'s mean test accuracy is higher | {PAPER['wins']} | "
             f"{o.exact_higher_mean} of {o.settings} |",
             f"| settings where {a} is significantly higher / tied / lower (paired "
             f"{100 * o.everywhere.across.level:g}% CI over test questions and seeds; after "
             "Holm over settings) | not reported | "
             f"{o.accuracy.wins} / {o.accuracy.ties} / {o.accuracy.losses}; "
             f"{o.everywhere.holm.wins} / {o.everywhere.holm.ties} / "
             f"{o.everywhere.holm.losses} |",
             f"| mean / max {a} − {b} test accuracy | {PAPER['mean_diff']} / "
             f"{PAPER['max_diff']} pt | {100 * o.mean_diff:+.2f} / "
             f"{100 * o.max_diff:+.2f} pt |",
             f"| on-demand evaluations of the {b} schedule ÷ table cells (epochs × G / 2^K) | "
             f"{PAPER['budget']} | {g.ratio:.3f}x ({g.epochs:g} × "
             f"{g.group_size:g} / {g.subsets:g}) |",
             f"| {b} evaluations until {a}'s validation accuracy − 1 question ÷ table cells | "
             f"not reported | {target}; {o.target_runs - o.target_reached} of "
             f"{o.target_runs} runs never reached it |"]
    genomeqa = o.per_benchmark.get("genomeqa")
    if genomeqa is not None:
        lines.append(f"| GenomeQA tools per test question (greedy), {b} -> {a} | "
                     f"{PAPER['tools']} | "
                     f"{genomeqa[f'{o.sampled}/test/tools_per_question']:.2f} -> "
                     f"{genomeqa[f'{o.exact}/test/tools_per_question']:.2f} |")
    lines.append(f"| zero-signal fraction, uniform policy -> {b} after training | "
                 f"{PAPER['zero_signal']} | {100 * z.uniform:.2f}% -> "
                 f"{100 * z.sampled_trained:.2f}% (exact for G = "
                 f"{z.group_size:g}, at its checkpoint); "
                 f"{100 * z.sampled_last_steps:.2f}% observed in its last "
                 f"steps (its own G = {g.group_size:g}) |")
    return "\n".join(lines)


def mechanisms(o: Overall, window: int, tuned: bool = False) -> str:
    """Where this run differs from the paper, each difference tied to a measured quantity."""
    n, g, z = o.settings, o.schedule, o.zero_signal
    a, b = o.methods[o.exact], o.methods[o.sampled]
    A, B = o.exact.upper(), o.sampled.upper()
    k_bits = math.log2(g.subsets)
    uniform_entropy = k_bits * math.log(2)
    epochs_for_paper = 2.4 * g.subsets / g.group_size
    return "\n".join([
        f"- **Budget ratio.** The schedule ratio is a property of the declared schedule, "
        f"epochs × G / 2^K = {g.epochs:g} × {g.group_size:g} / "
        f"{g.subsets:g} = {g.ratio:.3f} (measured from the runs' own "
        f"counters: {g.measured_ratio:.3f}); the paper's 2.4x would need "
        f"{epochs_for_paper:g} epochs at this G and K. The measured cost of learning is the "
        "evaluations-to-target column.",
        f"- **Zero signal.** In its last {window} steps {B} observed "
        f"{100 * z.sampled_last_steps:.1f}% of its groups tied, with a "
        f"training-batch policy entropy of {z.sampled_last_steps_entropy:.2f} "
        f"nats (uniform: {uniform_entropy:.2f}): a policy concentrated on one subset draws it in "
        "all G samples, so the group ties whatever the reasoner answers, and the fraction "
        "measures that concentration as much as the table. At the selected checkpoints the "
        f"exact fraction is {100 * z.sampled_trained:.1f}% for {B} (entropy "
        f"{b.entropy:.2f}) and {100 * z.exact_trained:.1f}% "
        f"for {A} (entropy {a.entropy:.2f}), against "
        f"{100 * z.uniform:.2f}% for the uniform policy.",
        f"- **Checkpoints and convergence.** {B}'s selected checkpoints lie at epoch "
        f"{b.checkpoint_epoch:.2f} on average, {A}'s at "
        f"{a.checkpoint_epoch:.2f} (of {g.epochs:g}). The seed-mean "
        f"validation expected reward moved by at most {FLAT} over the last epoch in "
        f"{a.flat} of {n} settings for {A} and {b.flat} "
        f"for {B} (largest change {a.max_last_epoch_change:.4f} and "
        f"{b.max_last_epoch_change:.4f}).",
        f"- **Tools per question.** {B}'s greedy subsets use {b.tools_per_question:.2f} "
        f"tools per question on average against {A}'s {a.tools_per_question:.2f} "
        f"and the per-family best fixed subset's {o.mean_family_best_tools:.2f}; "
        f"{B} uses fewer tools than that subset in {b.fewer_tools_than_family_best} "
        f"of {n} settings ({A} in {a.fewer_tools_than_family_best}), the reverse of "
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
    """What was tuned: each method's trials, budget, best objective, whether its study had
    stopped improving, and the chosen values (those at a bound of the range flagged)."""
    if not tuning:
        return ("Not tuned: every method trains with `params.yaml`'s shared `train` values "
                "(`make tune` runs the equal-budget studies and writes `tune/tuned.yaml`).")
    settings = ", ".join(tune.get("settings", []))
    seed = tune.get("train_seed")
    window, tolerance = tuning[0]["plateau_trials"], tune.get("tie_tolerance", 0)
    lines = [f"Each method's own Optuna study (TPE, no pruning, so every trial spends the same; "
             "the same dimensions for every method, each method's ranges in `tune.space`): "
             f"{tune.get('epochs')} epochs of every train question of each tuning setting "
             f"({settings}) per trial, trained with seed {seed} (none of the evaluation seeds), "
             "scored by the validation expected reward at the best-validation checkpoint "
             "averaged over those settings. The chosen values (`tune/tuned.yaml`) are what "
             "every setting above trained with: of the trials within "
             f"{tolerance} of the best objective (one seed per trial: smaller "
             "differences are noise), the one farthest inside the search ranges. *Best at*: the "
             "complete trial that set the best objective; *last N add*: how much the study's last "
             f"N = {window} complete trials (`tune.plateau_trials`) raised the best of the "
             "trials before them; under the tie tolerance the study had stopped improving, "
             "otherwise the value is marked ↑ (the tuning figure shows the curves). "
             "A value marked † lies "
             "within 10% of its range's bound (log scale where the range is).", "",
             "| method | trials (complete) | question visits per trial | reward evaluations per "
             f"trial (median) | best objective | best at | last {window} add | chosen trial "
             "(objective) | chosen values |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for t in tuning:
        visits = " / ".join(f"{v:,.0f}" for v in t["question_visits"]) or "—"
        bound = set(t.get("at_bound", []))
        chosen = ", ".join((f"`{k}` = {v:.4g}" if isinstance(v, float) else f"`{k}` = {v}")
                           + (" †" if k in bound else "")
                           for k, v in sorted(t["chosen"].items())) or "(not written)"
        best_at = "—" if t.get("best_at") is None else f"{t['best_at']} of {t['complete']}"
        gain = "—" if t.get("plateau_gain") is None else f"{t['plateau_gain']:+.4f}" + (
            " ↑" if still_improving(t["plateau_gain"], tolerance) else "")
        picked = ("—" if t.get("chosen_trial") is None else
                  f"{t['chosen_trial']} ({t['chosen_value']:.4f})")
        lines.append(f"| {t['method'].upper()} | {t['trials']} ({t['complete']}) | {visits} | "
                     f"{_n(t['reward_evals_median'])} | "
                     f"{'—' if t['best'] is None else format(t['best'], '.4f')} | {best_at} | "
                     f"{gain} | {picked} | {chosen} |")
    return "\n".join(lines)


def render_summary(rows: list[SettingRow], overall: Overall, fam: pd.DataFrame,
                   what_ran: str, figures: dict[str, str], cfg: ReportConfig,
                   tuning: list[dict[str, Any]] | None = None,
                   tune: dict[str, Any] | None = None) -> str:
    """reports/summary.md. Sections start with `## `; `fgpo readme` copies some of them."""
    g = overall.zero_signal.group_size
    a, b = overall.exact.upper(), overall.sampled.upper()
    level = f"{100 * cfg.level:g}%"
    parts = [
        f"# {a} vs {b}: comparison report",
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
        "*win* / *loss*: the interval excludes zero; *tie* otherwise. *Holm*: the verdict "
        f"after Holm's step-down adjustment of the bootstrap p-values over the {overall.settings}"
        " settings (family-wise error rate at the same level). *Seed-stable*: how many of the "
        "verdicts recomputed with one seed left out equal the full one; a verdict that is not "
        "stable hangs on one training run, and may differ on another CPU, where float noise "
        "moves sampled runs onto other trajectories. *CMH p*: the Cochran-Mantel-Haenszel test "
        "of correctness by method stratified by seed (each seed its own 2 × 2 table over the "
        "test questions; unadjusted): it asks whether, within these trained runs, one method is "
        "right more often, and so says nothing about another seed's run; a small CMH p beside "
        "an interval that reaches zero means the runs differ but their seed-to-seed spread "
        "hides the direction. Fixed policies from the reward table: no "
        "tools, all tools, chance (a uniformly random subset, expected), the per-family best "
        "fixed subset (the best subset for each question family, chosen on train), and the "
        "per-question oracle: an upper bound that picks each question's best subset after "
        "seeing its answers (including lucky guesses of the no-evidence fallback), not a "
        "reachable target.",
        settings_table(rows, cfg=cfg), outcome_line(overall, cfg),
        "Over settings, each setting one observation: the verdicts, the mean difference with a "
        "Student t interval over settings, and a two-sided sign test of how many settings "
        f"favour {a}" + (" (also without the settings the tuning studies ran on, whose "
                         "values were chosen on them)." if overall.held_out else "."),
        across_table(overall),
        "## Test reward and tools",
        "Reward = correct − tool cost × tools, the quantity both methods maximise. Each method's "
        "greedy choice, and in brackets its expectation under the policy. *vs family best*: the "
        f"paired {level} interval of the method's reward minus the per-family best fixed "
        "subset's on the same questions (win = significantly higher).",
        reward_tools_table(rows, cfg), family_best_line(overall),
        "## Reward-evaluation budgets",
        f"{a} reads the train split's whole table (questions × 2^K cells, built once before "
        f"training). {b} pays one on-demand reasoner call per sampled subset over its declared "
        "schedule (distinct (question, subset) pairs in brackets: what a cache would pay); "
        f"*schedule ÷ table* is epochs × G / 2^K. *Evaluations to target*, per seed: {b}'s "
        f"cumulative on-demand evaluations until its validation accuracy first reaches {a}'s "
        f"validation accuracy at {a}'s selected checkpoint minus one validation question "
        "(same seed); *> X* means not reached within its whole schedule of X evaluations.",
        budget_table(rows),
        "## Zero-signal fraction",
        f"Share of questions whose G = {g} sampled subsets all get the same reward, so {b}'s "
        "normalised advantage is zero. *Exact* values are the probability under the policy "
        "(uniform, or the method's policy at its checkpoint on test); *observed* values are "
        f"{b}'s training batches (seed mean over the first / last {cfg.zero_signal_window} "
        f"steps). {a} loses the signal only on rows whose rewards are all equal (last column).",
        zero_signal_table(rows, overall),
        "## Convergence and checkpoints",
        "Each run is tested at the validation point with the highest expected reward (step 0 "
        "included). *Δ val reward, last epoch*: the seed-mean validation expected reward at the "
        "end minus one epoch earlier (near zero: the curve has flattened). Entropy in nats of "
        "the policy at its checkpoint, mean over test questions and seeds. *Checkpoint point "
        "per seed*: which validation point each seed's run was tested at (0 = step 0, 1 = the "
        "first point after training began, of the run's points after step 0). The validation "
        "curves are the first figure.",
        convergence_table(rows), checkpoint_line(overall),
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
