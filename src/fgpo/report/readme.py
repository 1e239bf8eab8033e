"""Generated README sections: each lives between `<!-- fgpo:NAME -->` markers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from fgpo.benchmarks import BENCHMARKS, evidence
from fgpo.config import load_section
from fgpo.errors import InputError
from fgpo.rewards.table import RewardTableConfig
from fgpo.seqio import atomic_write_text
from fgpo.tools import TOOL_REGISTRY, ToolsConfig
from fgpo.train.config import TrainConfig


def evidence_map() -> dict[str, dict[str, list[str]]]:
    return {name: evidence(name) for name in BENCHMARKS}


def benchmark_table(bench_dir: Path, tools_cfg: ToolsConfig) -> str:
    """Markdown: per benchmark and family, question counts per split and the evidence tools."""
    lines = ["| benchmark | family | questions | train / val / test | options | evidence tools "
             "(in the default K=6 set) |", "|---|---|---:|---|---:|---|"]
    for name, evidence in evidence_map().items():
        path = bench_dir / f"{name}.parquet"
        if not path.exists():
            raise InputError("benchmark missing: run `dvc repro` first", file=str(path))
        df = pd.read_parquet(path, columns=["family", "split", "options"])
        for fam, g in df.groupby("family", sort=False):
            splits = " / ".join(str(int((g.split == s).sum())) for s in ("train", "val", "test"))
            tools = [t if t in tools_cfg.names else f"{t} (extended)" for t in evidence[fam]]
            lines.append(f"| {name} | {fam} | {len(g)} | {splits} | {len(g.options.iloc[0])} | "
                         f"{', '.join(tools) or '(none: answer from the sequence itself)'} |")
    return "\n".join(lines)


def reward_table_stats(metrics_dir: Path, reasoners: list[str]) -> str:
    """Markdown: `table-stats` of every built (reasoner, benchmark) table, test split."""
    lines = ["| reasoner | benchmark | no tools | all tools | random subset | best fixed subset "
             "(mask, tools) | oracle | constant correctness rows | uniform zero-signal (G) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in reasoners:
        for b in BENCHMARKS:
            path = metrics_dir / r / f"{b}.json"
            if not path.exists():
                raise InputError("table stats missing: run `dvc repro` first", file=str(path))
            s = json.loads(path.read_text())
            lines.append(
                f"| {r} | {b} | {s['test/no_tools_accuracy']:.3f} | "
                f"{s['test/all_tools_accuracy']:.3f} | {s['test/random_accuracy']:.3f} | "
                f"{s['test/best_fixed_accuracy']:.3f} ({s['table/best_fixed_mask']}, "
                f"{s['table/best_fixed_tools']}) | {s['test/oracle_accuracy']:.3f} | "
                f"{s['table/constant_correct_row_frac']:.3f} | "
                f"{100 * s['table/uniform_zero_signal_frac']:.2f}% ({s['table/group_size']}) |")
    return "\n".join(lines)


def training_table(metrics_dir: Path, plots_dir: Path, reasoners: list[str],
                   methods: list[str]) -> str:
    """Markdown: FGPO vs GRPO per setting at equal optimiser steps, from the train metrics."""
    lines = ["| reasoner | benchmark | FGPO test acc | GRPO test acc | FGPO - GRPO | tools/q "
             "FGPO / GRPO | best fixed / oracle | GRPO zero-signal: first -> last 10 steps | "
             "reward evals FGPO / GRPO (distinct) |", "|---|---|---:|---:|---:|---|---|---|---|"]
    wins = ties = losses = 0
    for r in reasoners:
        for b in BENCHMARKS:
            m = {}
            for meth in methods:
                path = metrics_dir / meth / r / f"{b}.json"
                if not path.exists():
                    raise InputError("training metrics missing: run `dvc repro`", file=str(path))
                m[meth] = json.loads(path.read_text())
            f, g = m["fgpo"], m["grpo"]
            curve = pd.read_csv(plots_dir / "grpo" / r / f"{b}.csv")
            zs = curve.dropna(subset=["train_zero_signal_frac"])["train_zero_signal_frac"]
            diff = f["test/accuracy"] - g["test/accuracy"]
            wins, ties, losses = (wins + (diff > 1e-9), ties + (abs(diff) <= 1e-9),
                                  losses + (diff < -1e-9))
            lines.append(
                f"| {r} | {b} | {f['test/accuracy']:.3f} | {g['test/accuracy']:.3f} | "
                f"{100 * diff:+.1f} pt | {f['test/tools_per_question']:.2f} / "
                f"{g['test/tools_per_question']:.2f} | {f['baseline/test/best_fixed_accuracy']:.3f}"
                f" / {f['baseline/test/oracle_accuracy']:.3f} | {zs.head(10).mean():.2f} -> "
                f"{zs.tail(10).mean():.2f} | {f['budget/reward_evals']:.0f} / "
                f"{g['budget/reward_evals']:.0f} ({g['budget/reward_evals_unique']:.0f}) |")
    lines.append("")
    lines.append(f"FGPO wins {wins}, ties {ties}, loses {losses} of {wins + ties + losses} "
                 "settings on test accuracy (one seed each; `train.seeds` adds more).")
    return "\n".join(lines)


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
    text = replace_block(text, "benchmarks", benchmark_table(bench_dir, tools_cfg))
    reward_cfg = load_section(RewardTableConfig, "reward_table", params)
    text = replace_block(text, "reward_tables", reward_table_stats(metrics_dir, reward_cfg.build))
    train_cfg = load_section(TrainConfig, "train", params)
    if sorted(train_cfg.methods) == ["fgpo", "grpo"]:
        text = replace_block(text, "training", training_table(
            Path("metrics/train"), Path("plots/train"), reward_cfg.build, train_cfg.methods))
    atomic_write_text(text, path)
