"""`dvc repro` with its wall time recorded: reports/repro_time.json (what `make run` calls).

Records the seconds, the stages that were stale before it (`dvc status` of the same targets),
each stage's seconds (from the moment dvc announces it to the next announcement) and the
training phase (the sum over the `train@`, `ablate@` and `frontier_train@` stages), so
`make bench` can report a whole pipeline's time and its training phase without rerunning it.
Exit status is dvc's.
Usage: python bench/time_repro.py [--out JSON] [targets...]   (default: dvc.yaml, the main
pipeline, -> reports/repro_time.json; `make ablation` and `make frontier` pass their dvc.yaml)
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from fgpo.seqio import atomic_write_text

OUT = Path("reports/repro_time.json")
RUNNING = re.compile(r"Running stage '([^']+)'")
TRAINING = ("train@", "ablate@", "frontier_train@")


def stage_seconds(events: list[tuple[float, str]], end: float) -> dict[str, float]:
    """(time a stage was announced, its name) in order -> seconds each stage took."""
    bounds = [t for t, _ in events[1:]] + [end]
    return {name: round(stop - start, 1) for (start, name), stop in zip(events, bounds)}


def main(argv: list[str]) -> int:
    out = OUT
    if argv[:1] == ["--out"]:
        out, argv = Path(argv[1]), argv[2:]
    targets = argv or ["dvc.yaml"]  # `dvc status` alone would also count other pipelines
    dvc = Path(sys.executable).with_name("dvc")
    status = subprocess.run([str(dvc), "status", "--json", *targets], capture_output=True,
                            text=True)
    ran = sorted(json.loads(status.stdout or "{}")) if status.returncode == 0 else []
    t0 = time.perf_counter()
    events: list[tuple[float, str]] = []
    proc = subprocess.Popen([str(dvc), "repro", *targets], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    for line in proc.stdout:  # dvc's output straight through, stage announcements timed
        sys.stdout.write(line)
        if m := RUNNING.search(line):
            events.append((time.perf_counter(), m.group(1)))
    rc = proc.wait()
    end = time.perf_counter()
    seconds = end - t0
    stages = stage_seconds(events, end)
    train = {k: v for k, v in stages.items() if k.split(":")[-1].startswith(TRAINING)}
    if rc == 0 and ran:  # a no-op repro would overwrite a real timing with ~0 s
        atomic_write_text(json.dumps({
            "seconds": round(seconds, 1), "stale_stages": len(ran),
            "stale_train_stages": sum(s.split(":")[-1].startswith(TRAINING) for s in ran),
            "train_seconds": round(sum(train.values()), 1), "train_stages_run": len(train),
            "stage_seconds": stages,
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        }, indent=2) + "\n", out)
        print(f"dvc repro: {len(ran)} stale stages in {seconds / 60:.1f} min, training phase "
              f"{sum(train.values()) / 60:.1f} min (-> {out})")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
