"""Ablation stage `ablation_report`: where FGPO's lead comes from, as measured.

Reads the `ablate` stage's metrics, curves and test selections for every tool cost and setting;
writes reports/ablation.md (the estimator table with paired intervals, the decomposition of the
FGPO - GRPO gap, the accuracy-vs-tools frontier), reports/ablation_figures/*.png and
metrics/ablation_summary.json (the pooled decomposition terms, slash-namespaced).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.report import figures
from fgpo.report.ablation import (DECOMPOSITION_FIGURE, FRONTIER_FIGURE, AblationRun,
                                  decomposition, estimator_row, render, versus)
from fgpo.report.config import ReportConfig
from fgpo.rewards.cost import cost_dir, main_tool_cost
from fgpo.seqio import atomic_write_text, read_parquet
from fgpo.train.ablation import AblationConfig
from fgpo.train.config import TrainConfig


def _read(path: Path) -> Any:
    if not path.exists():
        raise InputError("ablation output missing: run `make ablation` (after `make run`)",
                         file=str(path))
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return pd.read_csv(path) if path.suffix == ".csv" else read_parquet(path,
                                                                        rebuild="`make ablation`")


def main(params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         metrics: Path = Path("metrics"), plots: Path = Path("plots"),
         out: Path = Path("reports")) -> dict[str, Any]:
    cfg = load_section(AblationConfig, "ablation", params)
    report_cfg = load_section(ReportConfig, "report", params)
    main_cost = main_tool_cost(params)
    train = load_section(TrainConfig, "train", params)

    # ---- load: every cost, setting and estimator ------------------------------------------------
    rows: dict[str, dict[str, dict[str, float]]] = {}   # setting -> estimator -> numbers (main)
    sels: dict[str, dict[str, pd.DataFrame]] = {}       # setting -> estimator -> selections (main)
    tuned: dict[str, str] = {}
    frontier = []
    for cost in cfg.tool_costs:
        at = cost_dir(cost)
        for reasoner, benchmark in cfg.settings():
            setting = f"{reasoner}/{benchmark}"
            for m in cfg.methods_at(cost, main_cost, params):
                leaf = Path(at) / reasoner / benchmark
                met = _read(metrics / "ablation" / leaf / f"{m}.json")
                row = estimator_row(met, _read(plots / "ablation" / leaf / f"{m}.csv"))
                frontier.append({"setting": setting, "estimator": m, "cost": cost,
                                 "accuracy": row["accuracy"], "tools": row["tools"],
                                 "reward": row["reward"]})
                if cost == main_cost:
                    rows.setdefault(setting, {})[m] = row
                    sels.setdefault(setting, {})[m] = _read(
                        data / "ablation" / "selections" / leaf / f"{m}.parquet")
                    tuned[m] = met.get("tuned", "untuned")
    frontier_df = pd.DataFrame(frontier)
    frontier_df = frontier_df[frontier_df.estimator.isin(cfg.cost_estimators)]  # at every cost

    # ---- numbers: each estimator vs fgpo, the decomposition -------------------------------------
    vs_fgpo = {s: {m: versus(per, m, "fgpo", report_cfg, f"{s}: {m} vs fgpo")
                   for m in per if m != "fgpo"} if "fgpo" in per else {}
               for s, per in sels.items()}
    terms = decomposition(sels, report_cfg)

    # ---- outputs -----------------------------------------------------------------------------
    figures.ablation_frontier(frontier_df, out / FRONTIER_FIGURE)
    if terms:
        figures.ablation_decomposition(terms, out / DECOMPOSITION_FIGURE)
    ran = AblationRun(settings=[f"{r}/{b}" for r, b in cfg.settings()], main_cost=main_cost,
                      estimators=cfg.methods_at(main_cost, main_cost),
                      tool_costs=cfg.tool_costs, cost_estimators=cfg.cost_estimators,
                      epochs=train.epochs, seeds=train.seeds, level=report_cfg.level,
                      group_size=train.zero_signal_group_size, tuned=tuned)
    text = render(ran, rows, vs_fgpo, terms, frontier_df)
    atomic_write_text(text, out / "ablation.md")
    summary = {f"ablation/{t['a']}-{t['b']}/{k}": v for t in terms
               for k, v in t["pooled"].items() if not k.endswith("_outcome")}
    atomic_write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                      metrics / "ablation_summary.json")
    return {"terms": terms, "frontier": frontier_df}


def outcome(result: dict[str, Any]) -> list[str]:
    """What `fgpo ablation-report` prints: the pooled decomposition."""
    return [f"{t['term']:50s} {100 * t['pooled']['accuracy']:+6.1f} pt "
            f"[{100 * t['pooled']['accuracy_lo']:+.1f}, {100 * t['pooled']['accuracy_hi']:+.1f}]"
            for t in result["terms"]]
