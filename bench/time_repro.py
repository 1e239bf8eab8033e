"""`dvc repro` with its wall time recorded: reports/repro_time.json (what `make run` calls).

Records the seconds, the stages that were stale before it (`dvc status`) and the machine, so
`make bench` can report the whole default pipeline's time without rerunning it. Exit status is
dvc's.
Usage: python bench/time_repro.py [dvc repro arguments...]
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from fgpo.seqio import atomic_write_text

OUT = Path("reports/repro_time.json")


def main() -> int:
    dvc = Path(sys.executable).with_name("dvc")
    status = subprocess.run([str(dvc), "status", "--json"], capture_output=True, text=True)
    ran = sorted(json.loads(status.stdout or "{}")) if status.returncode == 0 else []
    t0 = time.perf_counter()
    rc = subprocess.call([str(dvc), "repro", *sys.argv[1:]])  # dvc's output straight through
    seconds = time.perf_counter() - t0
    if rc == 0 and ran:  # a no-op repro would overwrite a real timing with ~0 s
        atomic_write_text(json.dumps({
            "seconds": round(seconds, 1), "stale_stages": len(ran),
            "stale_train_stages": sum(s.startswith("train@") for s in ran),
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        }, indent=2) + "\n", OUT)
        print(f"dvc repro: {len(ran)} stale stages in {seconds / 60:.1f} min (-> {OUT})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
