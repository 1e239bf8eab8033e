"""One setting's train stage, timed whole, under today's and the earlier ways of running it.

Each variant runs `fgpo train <setting> --no-mlflow` as the train stage does (the pipeline's
reward table, params.yaml's tuned `train:` section, every method, --seeds seeds) in a scratch
folder, one after another in this run, so the ratios compare like with like. Each variant adds
one change to the one before it:

  * before: one process, `threads: 2`, runs one after another, no projection cache, subnormal
    floats kept (the stage as it was: torch's two threads inside each run);
  * + projection cache: the lowest adapted layer's frozen q/k/v kept
    (`policy.cache_frozen_projections`);
  * + subnormals flushed: floats below 1.2e-38 computed as zero (what training does now; a
    GRPO run whose policy collapses otherwise takes x86's slow path for them, 10x slower
    per step);
  * + 2 workers: `threads: 1`, `workers: 2` (each run single-threaded in one of two processes
    forked after the frozen layers are computed).

The variant whose threads, workers and cache are params.yaml's is the pipeline's way (marked).
"Subnormals kept" runs `fgpo train` with torch's flush switch made a no-op, the code otherwise
as it is.

The variants take turns (A B C A B C ...) --repeats times and each is quoted by its median, so
a drift of the machine's speed falls on all of them alike. Also the seconds per (method, seed)
run, so five seeds the new way against three the old way reads off directly. Writes
reports/bench_setting.json.
Usage: python bench/bench_setting.py [--setting careful_expert/genomeqa] [--seeds 5]
                                     [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from fgpo.policy.base import PolicyConfig
from fgpo.seqio import atomic_write_text

VARIANTS = {
    "before": {"threads": 2, "workers": 1, "cache_frozen_projections": False,
               "flush_denormal": False},
    "+ projection cache": {"threads": 2, "workers": 1, "cache_frozen_projections": True,
                           "flush_denormal": False},
    "+ subnormals flushed": {"threads": 2, "workers": 1, "cache_frozen_projections": True,
                             "flush_denormal": True},
    "+ 2 workers": {"threads": 1, "workers": 2, "cache_frozen_projections": True,
                    "flush_denormal": True},
}
KEEP_SUBNORMALS = ("import sys, torch; torch.set_flush_denormal = lambda on: False; "
                   "from fgpo.cli import app; sys.argv[0] = 'fgpo'; app()")
"""`fgpo` with training's flush switch a no-op: the stage as it ran before the flush."""


def run_variant(name: str, change: dict, setting: str, seeds: int, root: Path) -> float:
    """Seconds of `fgpo train` for the setting under `change`, in a scratch folder."""
    work = Path(tempfile.mkdtemp(prefix="bench_setting_"))
    try:
        params = yaml.safe_load((root / "params.yaml").read_text())
        train = params["train"]
        train.update(seeds=list(range(seeds)), threads=change["threads"],
                     workers=change["workers"])
        train["policy"]["cache_frozen_projections"] = change["cache_frozen_projections"]
        (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        for hand_off in ("tune/tuned.yaml", "sweeps/best.yaml"):  # read beside params.yaml
            (work / hand_off).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / hand_off, work / hand_off)
        (work / "data").mkdir()
        for part in ("benchmarks", "reward_tables"):  # read only; selections go to the scratch
            (work / "data" / part).symlink_to(root / "data" / part)
        reasoner, benchmark = setting.split("/")
        env = {**os.environ, "FGPO_CACHE_DIR": str(root / ".cache" / "fgpo")}
        start = time.perf_counter()
        fgpo = [str(Path(sys.executable).parent / "fgpo")] if change["flush_denormal"] else \
            [sys.executable, "-c", KEEP_SUBNORMALS]
        subprocess.run([*fgpo, "train", reasoner, benchmark, "--params", "params.yaml",
                        "--no-mlflow"], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        print(f"{name:30s} {seconds:6.1f} s")
        return seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--setting", default="careful_expert/genomeqa", help="reasoner/benchmark")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("reports/bench_setting.json"))
    args = ap.parse_args()
    root = Path.cwd()
    reasoner, benchmark = args.setting.split("/")
    if not (root / "data" / "reward_tables" / reasoner / f"{benchmark}.parquet").exists():
        print(f"setting bench skipped: the table of {args.setting} is not built (`make run`)")
        return
    train = yaml.safe_load((root / "params.yaml").read_text())["train"]
    methods = train["methods"]
    ours = {"threads": train["threads"], "workers": train["workers"],
            "cache_frozen_projections": train["policy"].get(  # absent: the config's default
                "cache_frozen_projections", PolicyConfig.cache_frozen_projections),
            "flush_denormal": True}
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name, change in VARIANTS.items():
            times[name].append(run_variant(name, change, args.setting, args.seeds, root))
    seconds = {name: statistics.median(t) for name, t in times.items()}
    before = seconds["before"]
    report = {"setting": args.setting, "seeds": args.seeds, "methods": methods,
              "runs": args.seeds * len(methods), "cpus": os.cpu_count(),
              "repeats": args.repeats,
              "variants": [{"name": n, **VARIANTS[n], "seconds": s, "all_seconds": times[n],
                            "s_per_run": s / (args.seeds * len(methods)),
                            "before_over_this": before / s, "pipeline": VARIANTS[n] == ours}
                           for n, s in seconds.items()]}
    atomic_write_text(json.dumps(report, indent=2) + "\n", args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
