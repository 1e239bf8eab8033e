"""Reward-table build rate (cells/s) per rule profile, and what prefix caching saves.

All profiles are timed on the same questions in one run (median of repeats). The prompt
statistics count, over every (question, subset) prompt, the distinct shared prefixes and the
share of prompt characters that lie in a prefix already computed for that question: the work
vLLM's prefix cache skips. Writes reports/bench_reward_tables.json.
Usage: python bench/bench_reward_tables.py [--n 120] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from fgpo.benchmarks import declared_samples
from fgpo.reasoners import ReasonerSpec
from fgpo.reasoners.prompt import render_prefix, render_prompt
from fgpo.reasoners.rule import PROFILES
from fgpo.rewards.build import RewardTableConfig, build_table, subset_evidence
from fgpo.seqio import atomic_write_text
from fgpo.tools.base import ToolOutput
from fgpo.tools.outputs import run_tools
from fgpo.tools.toolset import ToolsConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=120, help="questions per benchmark")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"),
                    help="its `prepare:` section lists the benchmarks timed")
    ap.add_argument("--out", type=Path, default=Path("reports/bench_reward_tables.json"))
    args = ap.parse_args()
    tools_cfg = ToolsConfig(workers=1)
    n_sub = 2 ** len(tools_cfg.names)
    report: dict = {"questions_per_benchmark": args.n, "subsets": n_sub, "rates": [],
                    "prefix_cache": []}
    with tempfile.TemporaryDirectory() as tmp:
        for bench, qs in declared_samples(args.params, args.n):
            df = run_tools(qs, tools_cfg, progress=False)
            outputs = {}
            for r in df.itertuples(index=False):
                outputs.setdefault(r.question_id, {})[r.tool] = ToolOutput(r.text, json.loads(r.data))
            # ---- prefix sharing --------------------------------------------------------------
            total = shared = 0
            for q in qs:
                prefix = len(render_prefix(q))
                for m in range(n_sub):
                    total += len(render_prompt(q, subset_evidence(outputs[q.id], tools_cfg.names, m)))
                shared += prefix * (n_sub - 1)
            report["prefix_cache"].append({
                "benchmark": bench, "prompts": len(qs) * n_sub, "distinct_prefixes": len(qs),
                "prompt_chars": total, "prefix_chars_reusable": shared,
                "fraction_saved": round(shared / total, 3)})
            # ---- build rate per profile ------------------------------------------------------
            for profile in PROFILES:
                spec = ReasonerSpec(backend="rule", profile=profile)
                cfg = RewardTableConfig(reasoners={profile: spec})
                times = []
                for k in range(args.repeats):
                    out = Path(tmp) / f"{bench}-{profile}-{k}.parquet"
                    t0 = time.perf_counter()
                    build_table(qs, outputs, tools_cfg, profile, spec, cfg, out, bench,
                                progress=False)
                    times.append(time.perf_counter() - t0)
                rate = len(qs) * n_sub / statistics.median(times)
                report["rates"].append({"benchmark": bench, "profile": profile,
                                        "cells_per_s": round(rate)})
                print(f"{bench:9s} {profile:22s} {rate:9.0f} cells/s")
    for row in report["prefix_cache"]:
        print(f"{row['benchmark']:9s} {row['prompts']} prompts share {row['distinct_prefixes']} "
              f"prefixes: {100 * row['fraction_saved']:.1f}% of prompt characters reusable")
    atomic_write_text(json.dumps(report, indent=2) + "\n", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
