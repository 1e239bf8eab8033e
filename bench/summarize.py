"""Merge the bench scripts' results into reports/bench.json and a short reports/bench.md.

Inputs (written by `make bench` in the same run): reports/bench_tools.json,
reports/bench_reward_tables.json, reports/bench_train.json, reports/bench_setting.json, and
reports/repro_time.json (the
whole default `dvc repro`, timed by `make run`; absent until a `make run` rebuilt something).
Committed inputs: reports/repro_time_baseline.json (the same timing of the code before the
training engine) and reports/repro_time_engine.json (after it, under the same 60-step protocol),
for the before/after rows; reports/bench_train_gpu.json (bench/gpu_check.py on a GPU, when one
was at hand); reports/make_run_time.json and reports/make_tune_time.json (a fresh clone's
whole `make run` and `make tune`, install included).
A bench script's result absent in this run keeps its value from the last reports/bench.json.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from fgpo.seqio import atomic_write_text

REPORTS = Path("reports")


def load(name: str) -> dict | None:
    path = REPORTS / name
    return json.loads(path.read_text()) if path.exists() else None


def training_phase(base: dict, rep: dict) -> list[str]:
    """Before (reports/repro_time_baseline.json) against now (reports/repro_time.json)."""
    def row(code: str, r: dict) -> str:
        return (f"| {code} | {r['train_stages_run']} | {r['train_seconds'] / 60:.1f} min | "
                f"{r['seconds'] / 60:.1f} min ({r['stale_stages']} stages) |")

    now = rep["train_seconds"]
    whole = (f"{base['seconds'] / rep['seconds']:.1f}x"
             if base["stale_stages"] == rep["stale_stages"]
             else f"n/a ({base['stale_stages']} vs {rep['stale_stages']} stale stages)")
    lines = ["## Training phase of `dvc repro` (the train stages' seconds)", "",
             "| code | train stages | training phase | whole `dvc repro` |", "|---|---:|---:|---:|",
             row(f"before: {base['code']} (one process per method, no cache)", base),
             row("now (one process per setting, frozen-layer cache)", rep)]
    quiet = base.get("train_seconds_quiet_estimate")
    if quiet:
        lines += [f"| before, quiet estimate (see below) | 30 | {quiet / 60:.1f} min | |",
                  f"| before (quiet estimate) / now | | **{quiet / now:.1f}x** | |"]
    lines.append(f"| before (as measured) / now | | {base['train_seconds'] / now:.1f}x | {whole} |")
    if base.get("note"):
        lines += ["", base["note"]]
    side = base.get("setting_side_by_side")
    if side:
        lines += ["", f"One setting ({side['setting']}, both methods, MLflow on), whole processes "
                  f"timed side by side ({side['tool']}): before "
                  f"{side['before_wall_s_median']:.1f} s ({side['before_cmd']}), now "
                  f"{side['now_wall_s_median']:.1f} s "
                  f"({side['now_cmd']}): **{side['before_over_now']:.1f}x**."]
    if base.get("why_not_more"):
        lines += ["", base["why_not_more"]]
    return lines


def setting_section(s: dict | None) -> list[str]:
    """One setting's train stage, whole, under each way of running it (bench/bench_setting.py)."""
    if not s:
        return []
    lines = ["", f"## One setting's train stage, whole ({s['setting']}, {s['runs']} runs: "
             f"{len(s['methods'])} methods x {s['seeds']} seeds, no MLflow; median of "
             f"{s.get('repeats', 1)} turns each)", "",
             "| variant | threads per run | workers | projection cache | subnormals | seconds | "
             "s per run | previous / this | before / this |",
             "|---|---:|---:|---|---|---:|---:|---:|---:|"]
    previous = None
    for v in s["variants"]:
        mark = " (the pipeline's way)" if v.get("pipeline") else ""
        step = f"{previous / v['seconds']:.2f}x" if previous else ""
        flushed = "flushed" if v.get("flush_denormal", True) else "kept"
        lines.append(f"| {v['name']}{mark} | {v['threads']} | {v['workers']} | "
                     f"{'yes' if v['cache_frozen_projections'] else 'no'} | {flushed} | "
                     f"{v['seconds']:.1f} | {v['s_per_run']:.1f} | {step} | "
                     f"**{v['before_over_this']:.2f}x** |")
        previous = v["seconds"]
    first = s["variants"][0]
    ours = next((v for v in s["variants"] if v.get("pipeline")), None)
    old = first["seconds"] * 3 / s["seeds"]  # the stage as it was: three seeds, before
    if ours is not None:
        lines += ["", f"The stage as the pipeline runs it now ({s['seeds']} seeds, "
                  f"{ours['name']}) takes {ours['seconds']:.0f} s; as it ran before (3 seeds, the "
                  f"first row's runs scaled to three seeds) {old:.0f} s: "
                  f"{ours['seconds'] / old:.2f}x the time for {s['seeds'] / 3:.2f}x the seeds."]
    return lines


def markdown(b: dict) -> str:
    lines = ["# Benchmarks (`make bench`)", "",
             f"One run on {b['machine']['cpus']} CPU(s)"
             + (f" ({b['machine']['cpu']})" if b["machine"].get("cpu") else "")
             + f", Python {b['machine']['python']}; "
             "medians over repeats; ratios compare numbers measured in the same run.", ""]
    t = b.get("train")
    if t:
        lines += ["## FGPO vs GRPO, same MiniLM + LoRA policy and batch", "",
                  "| quantity | FGPO | GRPO | GRPO / FGPO |", "|---|---:|---:|---:|",
                  f"| seconds per optimiser step (batch {t['batch']}, no frozen-layer cache) | "
                  f"{t['fgpo_s_per_step']:.3f} | {t['grpo_s_per_step']:.3f} | "
                  f"{t['grpo_over_fgpo']:.2f} |"]
        tt = t.get("time_to_target")
        if tt:
            ratio = tt["grpo_over_fgpo_to_target"]
            lines.append(
                f"| seconds to val accuracy {tt['target_val_accuracy']:.3f} ({tt['setting']}; "
                f"step FGPO {tt['fgpo_step_to_target']}, GRPO {tt['grpo_step_to_target']}) | "
                f"{tt['fgpo_s_to_target']:.1f} | {tt['grpo_s_to_target']:.1f} | "
                f"{'n/a' if ratio is None else f'{ratio:.2f}'} |")
            span = (f"{tt['epochs']} epochs" if "epochs" in tt  # older results: steps
                    else f"{tt['steps']} steps")
            lines.append(f"| seconds for all {span} (validation included) | "
                         f"{tt['fgpo_s_total']:.1f} | {tt['grpo_s_total']:.1f} | "
                         f"{tt['grpo_s_total'] / tt['fgpo_s_total']:.2f} |")
        lines += ["", "## Cost of exact enumeration vs K (head + FGPO loss, forward and "
                  "backward, against the backbone's)", "",
                  "| K | subsets | subset head ms | % of backbone | factorized head ms | "
                  "% of backbone |", "|---:|---:|---:|---:|---:|---:|"]
        by_k: dict[int, dict] = {}
        for r in t["enumeration_vs_K"]:
            by_k.setdefault(r["K"], {})[r["head"]] = r
        for k, h in sorted(by_k.items()):
            s, f = h["subset"], h["factorized"]
            lines.append(f"| {k} | {s['subsets']} | {1000 * s['head_s']:.2f} | "
                         f"{100 * s['over_backbone']:.1f}% | {1000 * f['head_s']:.2f} | "
                         f"{100 * f['over_backbone']:.1f}% |")
        lines.append(f"\nBackbone forward + backward: {1000 * t['backbone_s_per_step']:.0f} ms "
                     f"per batch of {t['batch']}.")
    lines += setting_section(b.get("setting"))
    steps = (t or {}).get("step_times", []) + (b.get("train_gpu") or {}).get("step_times", [])
    if steps:
        lines += ["", "## The frozen-layer cache: milliseconds per optimiser step", "",
                  "Same questions, policy config and loop step (`bench/step_times.py`); only "
                  "`cache_frozen_layers` differs. GRPO's sampling is amortised over its mu = 2 "
                  "inner steps.", "",
                  "| device | batch | adapted layers | estimator | uncached ms | cached ms | "
                  "uncached / cached |", "|---|---:|---|---|---:|---:|---:|"]
        for r in steps:
            layers = str(r["lora_layers"]) if r["lora_layers"] else "all six"
            cached = (f"{r['cached_ms']:.1f} | {r['speedup']:.1f}x" if r["cached_ms"]
                      else "n/a (nothing frozen) | n/a")
            lines.append(f"| {r['device']} | {r['batch']} | {layers} | {r['method']} | "
                         f"{r['uncached_ms']:.1f} | {cached} |")
    gpu = b.get("train_gpu")
    if gpu:
        runs = gpu["short_runs"]
        lines += ["", f"GPU rows: {gpu['device']}, torch {gpu['torch']}, {gpu['weights']} "
                  f"(`bench/gpu_check.py`). Cached and uncached log-probabilities there differ "
                  f"by at most {gpu['cache_max_abs_diff']:.1e}. `train_run` on CUDA, setup and "
                  "evaluation included: " + "; ".join(
                      f"{m.upper()} {r['steps']} steps in {r['seconds']:.1f} s"
                      for m, r in runs.items()) + "."]
    rt = b.get("reward_tables")
    if rt:
        lines += ["", "## Reward-table build rate (rule reasoners, cells/s)", "",
                  "| benchmark | " + " | ".join(sorted({r["profile"] for r in rt["rates"]}))
                  + " |", "|---|" + "---:|" * len({r["profile"] for r in rt["rates"]})]
        for bench in sorted({r["benchmark"] for r in rt["rates"]}):
            rates = {r["profile"]: r["cells_per_s"] for r in rt["rates"]
                     if r["benchmark"] == bench}
            lines.append(f"| {bench} | " + " | ".join(f"{rates[p]:,}" for p in sorted(rates))
                         + " |")
        saved = statistics.median(r["fraction_saved"] for r in rt["prefix_cache"])
        lines.append(f"\nPrompt characters a prefix cache (vLLM) can reuse: {100 * saved:.1f}% "
                     "(median over benchmarks).")
    tools = b.get("tools")
    if tools:
        lines += ["", f"## Tool outputs (questions/s; {tools['workers']} workers)", "",
                  "| benchmark | serial | parallel | parallel / serial |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {r['benchmark']} | {r['serial_q_per_s']} | {r['parallel_q_per_s']} | "
                  f"{r['parallel_over_serial']} |" for r in tools["results"]]
    rep, base, engine = b.get("repro"), b.get("repro_baseline"), b.get("repro_engine")
    if engine and base and engine.get("train_seconds") and base.get("train_seconds"):
        lines += ["", *training_phase(base, engine)]
        if engine.get("note"):
            lines += ["", engine["note"]]
    lines += ["", "## Whole default pipeline", "",
              "Whole-pipeline times are not remeasured by `make bench`: each is its last "
              "measurement (`make run`, `make tune`), with its date and commit, possibly on "
              "another machine than the tables above.", ""]
    fresh = b.get("make_run")
    if fresh:
        lines.append(f"A fresh clone's `make run` ({fresh['how']}) took "
                     f"**{fresh['seconds'] / 60:.1f} min** on {fresh['cpus']} CPU(s), finished "
                     f"{fresh['finished']} (code {fresh['code']}; the limit is 30 min).")
        lines.append("")
    tuned = b.get("make_tune")
    if tuned:
        lines += [f"`make tune` ({tuned['how']}) took "
                  f"**{tuned['seconds'] / 60:.1f} min** on {tuned['cpus']} CPU(s), finished "
                  f"{tuned['finished']} (code {tuned['code']}; the limit is about 90 min).", ""]
    if rep:
        lines.append(f"`dvc repro` ({rep['stale_stages']} stale stages, "
                     f"{rep['stale_train_stages']} of them training runs) took "
                     f"{rep['seconds'] / 60:.1f} min on {rep['machine']['cpus']} CPU(s) "
                     f"(timed by `make run`, finished {rep['finished']}).")
    else:
        lines.append("Not timed yet: `make run` records it when it rebuilds the pipeline.")
    return "\n".join(lines) + "\n"


def main() -> None:
    tools = load("bench_tools.json")
    previous = load("bench.json") or {}
    bench = {"machine": (tools or {}).get("machine") or previous.get("machine")
             or {"cpus": None, "python": None},
             "tools": tools, "reward_tables": load("bench_reward_tables.json"),
             "train": load("bench_train.json"), "train_gpu": load("bench_train_gpu.json"),
             "setting": load("bench_setting.json"),
             "repro": load("repro_time.json"),
             "repro_baseline": load("repro_time_baseline.json"),
             "repro_engine": load("repro_time_engine.json"),
             "make_run": load("make_run_time.json"),
             "make_tune": load("make_tune_time.json")}
    for key, value in previous.items():  # not measured in this run: the last measurement stays
        if bench.get(key) is None:
            bench[key] = value
    if bench["machine"]["cpus"] is None:
        import os
        import platform
        bench["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    atomic_write_text(json.dumps(bench, indent=2) + "\n", REPORTS / "bench.json")
    atomic_write_text(markdown(bench), REPORTS / "bench.md")
    print(f"wrote {REPORTS / 'bench.json'} and {REPORTS / 'bench.md'}")


if __name__ == "__main__":
    main()
