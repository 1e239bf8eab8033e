"""Tool-output throughput (questions/s) per benchmark, serial vs parallel, in one run.

Writes reports/bench_tools.json and prints a table. Medians over repeats; the ratio
parallel/serial is the number to compare across machines, not the absolute rates.
Usage: python bench/bench_tools.py [--n 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from dataclasses import replace
from pathlib import Path

from fgpo.benchmarks import declared_samples
from fgpo.seqio import atomic_write_text
from fgpo.tools.outputs import run_tools
from fgpo.tools.toolset import ToolsConfig


def cpu_model() -> str:
    """The CPU's model name and widest vector instructions (/proc/cpuinfo on Linux): the
    'machine kind' that bit-for-bit reproduction is promised on."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    name = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")),
                platform.machine())
    flags = set(next((ln.split(":", 1)[1].split() for ln in lines if ln.startswith("flags")), []))
    simd = next((label for flag, label in (("avx512f", "AVX-512"), ("avx2", "AVX2"),
                                           ("avx", "AVX")) if flag in flags), None)
    return f"{name}, {simd}" if simd else name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=300, help="questions per benchmark")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"),
                    help="its `prepare:` section lists the benchmarks timed")
    ap.add_argument("--out", type=Path, default=Path("reports/bench_tools.json"))
    args = ap.parse_args()
    base = ToolsConfig()
    workers = max(2, min(os.cpu_count() or 1, 8))
    results = []
    for name, qs in declared_samples(args.params, args.n):
        run_tools(qs[:8], base, progress=False)  # warm caches (motif thresholds, imports)
        row = {"benchmark": name, "questions": len(qs)}
        for label, cfg in (("serial", replace(base, workers=1)),
                           ("parallel", replace(base, workers=workers, chunk_size=16))):
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                run_tools(qs, cfg, progress=False)
                times.append(time.perf_counter() - t0)
            row[f"{label}_q_per_s"] = round(len(qs) / statistics.median(times), 1)
        row["parallel_over_serial"] = round(row["parallel_q_per_s"] / row["serial_q_per_s"], 2)
        results.append(row)
        print(f"{name:10s} serial {row['serial_q_per_s']:8.1f} q/s   parallel({workers}) "
              f"{row['parallel_q_per_s']:8.1f} q/s   ratio {row['parallel_over_serial']:.2f}")
    report = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "processor": platform.processor() or platform.machine(),
                          "cpu": cpu_model()},
              "tools": base.names, "workers": workers, "repeats": args.repeats,
              "results": results}
    atomic_write_text(json.dumps(report, indent=2) + "\n", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
