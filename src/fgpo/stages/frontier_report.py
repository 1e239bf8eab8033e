"""Frontier stage `frontier_report`: accuracy against reasoner calls, as measured.

Reads every (K, setting)'s validation points and their test choices (stage `frontier_train`);
writes reports/frontier.md (the protocol, the crossover table, per K the accuracy at budgets),
reports/frontier_figures/K<k>.png per K and summary.png, and metrics/frontier_summary.json
(per K and setting, slash-namespaced: the crossover's calls and ratio, the peaks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.report import figures
from fgpo.report.config import ReportConfig
from fgpo.report.frontier import (FIGURES, FrontierRun, budget_grid, crossover,
                                  frontier_curves, render)
from fgpo.rewards.table import tool_names
from fgpo.seqio import atomic_write_text, read_parquet
from fgpo.train.config import TrainConfig
from fgpo.train.frontier import FrontierConfig, train_dir


def _read(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise InputError("frontier output missing: run `make frontier` (after `make run`)",
                         file=str(path))
    return read_parquet(path, rebuild="`make frontier`")


def main(params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         metrics: Path = Path("metrics"), out: Path = Path("reports")) -> dict[str, Any]:
    cfg = load_section(FrontierConfig, "frontier", params)
    report_cfg = load_section(ReportConfig, "report", params)
    train = load_section(TrainConfig, "train", params)
    main_tools = tool_names(params)
    cfg.check(main_tools)
    ks = sorted(cfg.ks)
    settings = [f"{r}/{b}" for r, b in cfg.settings()]

    # ---- numbers: per K and setting, the curves and the crossover -------------------------------
    curves: dict[int, dict[str, pd.DataFrame]] = {}
    cross = {}
    for k in ks:
        curves[k] = {}
        for reasoner, benchmark in cfg.settings():
            folder = train_dir(data, k, reasoner, benchmark)
            points = _read(folder / "points.parquet").rename(columns={"fraction": "run"})
            choices = _read(folder / "choices.parquet").rename(columns={"fraction": "run"})
            c = frontier_curves(points, choices, budget_grid(points, cfg.budgets), cfg.exact,
                                cfg.sampled, report_cfg.n_boot, report_cfg.level,
                                report_cfg.bootstrap_seed)
            curves[k][f"{reasoner}/{benchmark}"] = c
            cross[(k, f"{reasoner}/{benchmark}")] = crossover(c, cfg.exact, cfg.sampled)

    # ---- outputs -----------------------------------------------------------------------------
    methods = [cfg.exact, *cfg.sampled]
    for k in ks:
        figures.budget_frontier(curves[k], methods, k, out / FIGURES / f"K{k}.png")
    diff = f"{cfg.exact} - best sampled"
    figures.budget_frontier_summary(
        {s: {k: curves[k][s][curves[k][s].method == diff] for k in ks} for s in settings},
        cfg.exact, out / FIGURES / "summary.png")
    ran = FrontierRun(ks=ks, main_k=len(main_tools), tool_order=cfg.tool_order,
                      settings=settings, exact=cfg.exact, fractions=sorted(cfg.fractions),
                      sampled=cfg.sampled, seeds=cfg.seeds, epochs=train.epochs,
                      evals_per_epoch=train.evals_per_epoch, level=report_cfg.level,
                      n_budgets=cfg.budgets)
    atomic_write_text(render(ran, cross, curves), out / "frontier.md")
    summary: dict[str, float] = {}
    for (k, setting), c in cross.items():
        key = f"frontier/K{k}/{setting}"
        summary |= {f"{key}/sampled_peak_accuracy": c.sampled_peak,
                    f"{key}/exact_peak_accuracy": c.exact_peak,
                    f"{key}/matched_accuracy": c.matched,
                    f"{key}/exact_calls_to_matched": c.exact_calls,
                    f"{key}/sampled_calls_to_matched": c.sampled_calls,
                    f"{key}/calls_ratio_at_matched": c.ratio}
        if c.catch_up is not None:
            summary[f"{key}/catch_up_calls"] = c.catch_up
    atomic_write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                      metrics / "frontier_summary.json")
    return {"crossover": cross, "curves": curves}


def outcome(result: dict[str, Any]) -> list[str]:
    """What `fgpo frontier-report` prints: the crossover per K and setting."""
    lines = []
    for (k, setting), c in sorted(result["crossover"].items()):
        lines.append(f"K = {k:2d} {setting:32s} accuracy {c.matched:.3f}: exact "
                     f"{c.exact_calls:>9,.0f} calls, {c.sampled_cheapest} "
                     f"{c.sampled_calls:>9,.0f} ({c.ratio:.2f}x)")
    return lines
