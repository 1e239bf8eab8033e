"""Frontier stage `frontier_train`: every frontier run of one (K, reasoner, benchmark) and
their validation points -> data/frontier/train/K<k>/<reasoner>/<benchmark>/.

The train stage's training (`fgpo.runs.setting.train_setting`, its protocol: epochs, the
validation schedule, the best-validation checkpoint, the same question visits) for
frontier.exact on each sub-table fraction of the train split and for each of frontier.sampled
on the whole split, with frontier.seeds. At the main K the table is a copy of the main
pipeline's and, on the whole split, the runs cache is the train stage's (runs/): its runs of
the same seeds (and the ablation's at the main cost) are read back, not trained again. Writes, besides each
fraction's per-method outputs under f<fraction>/, points.parquet (one row per validation
point: method, fraction, seed, step, distinct and repeated reasoner calls by then, its
validation and test numbers) and choices.parquet (each point's greedy test choice per
question): what the frontier report selects from, by validation only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.rewards.table import tool_names
from fgpo.runs.setting import train_setting
from fgpo.seqio import atomic_write_parquet, read_parquet
from fgpo.train.config import TrainConfig
from fgpo.rewards.frontier import derived_params, tables_root
from fgpo.train.frontier import FrontierConfig, runs_root, train_dir

__all__ = ["main", "outcome"]


def main(k: int, reasoner: str, benchmark: str, params: Path = DEFAULT_PARAMS,
         data: Path = Path("data"), tracking: bool = True) -> dict[str, Any]:
    cfg = load_section(FrontierConfig, "frontier", params)
    load_section(TrainConfig, "train", params)  # its errors name params.yaml, not a copy
    main_tools = tool_names(params)
    tools, main_k = cfg.tools_at(k, main_tools), len(main_tools)
    out = train_dir(data, k, reasoner, benchmark)
    points, choices = [], []
    for fraction in sorted({f for _, f in cfg.runs()}):
        methods = [m for m, f in cfg.runs() if f == fraction]
        leaf = out / f"f{fraction}"
        with derived_params(params, tools, cfg.seeds, fraction) as derived:
            train_setting(reasoner, benchmark, methods, derived, data,
                          metrics_root=leaf / "metrics", plots_root=leaf / "plots",
                          runs_root=runs_root(k, fraction, main_k),
                          selections_root=leaf / "selections", tracking=tracking,
                          tables_root=tables_root(data, k), any_method=True,
                          register=False)  # the registry holds make run's best
        for m in methods:
            folder = leaf / "selections" / reasoner / benchmark
            points.append(read_parquet(folder / f"{m}.points.parquet")
                          .assign(method=m, fraction=fraction))
            choices.append(read_parquet(folder / f"{m}.point_choices.parquet")
                           .assign(method=m, fraction=fraction))
    meta = {"K": k, "tools": tools, "reasoner": reasoner, "benchmark": benchmark}
    points_df = pd.concat(points, ignore_index=True)
    atomic_write_parquet(points_df, out / "points.parquet", metadata=meta)
    atomic_write_parquet(pd.concat(choices, ignore_index=True), out / "choices.parquet",
                         metadata=meta)
    return {"K": k, "setting": f"{reasoner}/{benchmark}", "points": points_df}


def outcome(result: dict[str, Any]) -> list[str]:
    """What `fgpo frontier-train` prints: per run (method, fraction), its points' reach."""
    p = result["points"]
    lines = [f"K = {result['K']}, {result['setting']}: {len(p)} validation points"]
    for (m, f), g in p.groupby(["method", "fraction"], sort=False):
        lines.append(f"  {m:8s} fraction {f:<5} calls up to {int(g.reward_evals_unique.max()):>9,}"
                     f"  best val/expected_reward {g['val/expected_reward'].max():.4f}")
    return lines
