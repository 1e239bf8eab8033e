"""Generated README sections: each lives between `<!-- fgpo:NAME -->` markers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fgpo.benchmarks import evidence
from fgpo.benchmarks.config import ImportConfig, PrepareConfig, load_prepare
from fgpo.config import load_section
from fgpo.errors import InputError
from fgpo.rewards.table import TableSettings
from fgpo.seqio import atomic_write_text, read_parquet
from fgpo.tools.toolset import TOOL_REGISTRY, ToolsConfig


def evidence_map(prepare: PrepareConfig) -> dict[str, dict[str, list[str]] | None]:
    """Declared benchmark -> family -> its planted evidence tools (None: an imported collection,
    whose labels come from real data)."""
    return {name: None if isinstance(cfg, ImportConfig) else evidence(name)
            for name, cfg in prepare.benchmarks.items()}


def benchmark_table(bench_dir: Path, tools_cfg: ToolsConfig, prepare: PrepareConfig) -> str:
    """Markdown: per benchmark and family, question counts per split and the evidence tools."""
    lines = ["| benchmark | family | questions | train / val / test | options | evidence tools "
             "(in the default K=6 set) |", "|---|---|---:|---|---:|---|"]
    for name, planted in evidence_map(prepare).items():
        path = bench_dir / f"{name}.parquet"
        if not path.exists():
            raise InputError("benchmark missing: run `dvc repro` first", file=str(path))
        df = read_parquet(path, rebuild="`dvc repro`", columns=["family", "split", "options"])
        for fam, g in df.groupby("family", sort=False):
            splits = " / ".join(str(int((g.split == s).sum())) for s in ("train", "val", "test"))
            if planted is None:
                what = "(imported: real labels, no planted evidence)"
            else:
                tools = [t if t in tools_cfg.names else f"{t} (extended)" for t in planted[fam]]
                what = ", ".join(tools) or "(none: answer from the sequence itself)"
            lines.append(f"| {name} | {fam} | {len(g)} | {splits} | {len(g.options.iloc[0])} | "
                         f"{what} |")
    return "\n".join(lines)


def reward_table_stats(metrics_dir: Path, reasoners: list[str], benchmarks: list[str]) -> str:
    """Markdown: `table-stats` of every built (reasoner, benchmark) table, test split.

    The per-question oracle is labelled an upper bound: it picks each question's best subset
    after seeing the answers, lucky guesses of the no-evidence fallback included."""
    lines = ["| reasoner | benchmark | chance | no tools | all tools | random subset | best fixed "
             "subset (mask, tools) | best fixed per family | per-question oracle (upper bound) | "
             "constant correctness rows | uniform zero-signal (G) | flags |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in reasoners:
        for b in benchmarks:
            path = metrics_dir / r / f"{b}.json"
            if not path.exists():
                raise InputError("table stats missing: run `dvc repro` first", file=str(path))
            s = json.loads(path.read_text())
            chance = s.get("test/chance_accuracy")
            flags = "; ".join(w.split(":")[0] for w in s.get("table/warnings", [])) or "-"
            lines.append(
                f"| {r} | {b} | {'-' if chance is None else f'{chance:.3f}'} | "
                f"{s['test/no_tools_accuracy']:.3f} | "
                f"{s['test/all_tools_accuracy']:.3f} | {s['test/random_accuracy']:.3f} | "
                f"{s['test/best_fixed_accuracy']:.3f} ({s['table/best_fixed_mask']}, "
                f"{s['table/best_fixed_tools']}) | "
                f"{s.get('test/family_best_fixed_accuracy', float('nan')):.3f} | "
                f"{s['test/oracle_accuracy']:.3f} | "
                f"{s['table/constant_correct_row_frac']:.3f} | "
                f"{100 * s['table/uniform_zero_signal_frac']:.2f}% ({s['table/group_size']}) | "
                f"{flags} |")
    return "\n".join(lines)


README_SECTIONS = ("What ran", "Tuning", "Paper vs this run", "Test accuracy per setting",
                   "Test reward and tools", "Reward-evaluation budgets", "Zero-signal fraction",
                   "Convergence and checkpoints", "Why this run differs from the paper",
                   "Figures")


def results_block(summary_md: str) -> str:
    """The README's results: sections of reports/summary.md copied verbatim (headings one level
    down, figure paths made relative to the repository root), so every number matches."""
    from fgpo.report.markdown import sections
    secs = sections(summary_md)
    missing = [t for t in README_SECTIONS if t not in secs]
    if missing:
        raise InputError(f"report lacks section(s) {missing}; rerun `dvc repro report`",
                         file="reports/summary.md")
    body = "\n\n".join(f"### {t}\n\n{secs[t]}" for t in README_SECTIONS)
    return body.replace("](figures/", "](reports/figures/")


SCHEDULE_ROW = "| on-demand evaluations of the "
"""The Paper vs this run row the budget frontier's measurement replaces, when it exists."""


def frontier_row(summary: dict[str, float], k: int, paper: str) -> str | None:
    """The Paper vs this run row on evaluations, measured (metrics/frontier_summary.json of
    `make frontier`): per setting at K = k, the distinct reasoner calls the cheapest sampled
    method needs to reach the accuracy both sides reach over those FGPO needs; None when the
    frontier did not run at K = k."""
    prefix = f"frontier/K{k}/"
    settings = sorted({key[len(prefix):].rsplit("/", 1)[0] for key in summary
                       if key.startswith(prefix)})
    if not settings:
        return None
    cells = []
    for s in settings:
        at = {key.rsplit("/", 1)[1]: v for key, v in summary.items()
              if key.startswith(f"{prefix}{s}/")}
        cells.append(f"{s} {1 / at['calls_ratio_at_matched']:.2f}x (at accuracy "
                     f"{at['matched_accuracy']:.3f})")
    return (f"| distinct reasoner calls, sampled ÷ FGPO, to reach the same test accuracy "
            f"(budget frontier, K = {k}, `reports/frontier.md`) | {paper} (GRPO's schedule ÷ "
            f"FGPO's table, not at matched accuracy) | {'; '.join(cells)} |")


def with_frontier_row(body: str, row: str | None) -> str:
    """`body` with the schedule arithmetic's row replaced by the measured one."""
    if row is None:
        return body
    lines = body.splitlines()
    hits = [i for i, line in enumerate(lines) if line.startswith(SCHEDULE_ROW)]
    if len(hits) != 1:
        raise InputError("the results block has no single schedule row to replace; rerun "
                         "`dvc repro report`", file="reports/summary.md")
    lines[hits[0]] = row
    return "\n".join(lines) + ("\n" if body.endswith("\n") else "")


def tools_table(tools_cfg: ToolsConfig) -> str:
    """Markdown: every registered tool, its description, and its bit in the configured set."""
    lines = ["| tool | version | bit in default set | what it reports |", "|---|---|---|---|"]
    names = tools_cfg.names + [n for n in TOOL_REGISTRY if n not in tools_cfg.names]
    for name in names:
        cls = TOOL_REGISTRY[name]
        bit = str(tools_cfg.names.index(name)) if name in tools_cfg.names else "- (extended)"
        lines.append(f"| `{name}` | {cls.version} | {bit} | {cls.description} |")
    return "\n".join(lines)


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- fgpo:{name} -->\n)(.*?)(<!-- /fgpo:{name} -->)", re.S)
    if not pattern.search(text):
        raise InputError(f"marker <!-- fgpo:{name} --> not found", file="README.md")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(3), text)


def update_readme(path: Path, params: Path, bench_dir: Path,
                  metrics_dir: Path = Path("metrics/reward_tables")) -> None:
    tools_cfg = load_section(ToolsConfig, "tools", params)
    text = path.read_text()
    text = replace_block(text, "tools", tools_table(tools_cfg))
    prepare = load_prepare(params)
    text = replace_block(text, "benchmarks", benchmark_table(bench_dir, tools_cfg, prepare))
    reward_cfg = TableSettings.load(params)
    text = replace_block(text, "reward_tables",
                         reward_table_stats(metrics_dir, reward_cfg.build, prepare.names))
    summary = Path("reports/summary.md")
    if summary.exists():
        block = results_block(summary.read_text())
        frontier = Path("metrics/frontier_summary.json")
        if frontier.exists():
            from fgpo.report.paper import PAPER
            block = with_frontier_row(block, frontier_row(json.loads(frontier.read_text()),
                                                          len(tools_cfg.names), PAPER["budget"]))
        text = replace_block(text, "results", block)
    atomic_write_text(text, path)
