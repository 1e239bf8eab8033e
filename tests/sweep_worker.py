"""A sweep worker process for the tests:
`python tests/sweep_worker.py BACKBONE STORAGE N [GRACE] [hold]` (study $FGPO_TEST_STUDY,
default grpo-synthetic; TPE startup trials $FGPO_TEST_STARTUP_TRIALS, default 1).

Runs `run_sweep` on the synthetic setting of test_training (tiny encoder, 3 families) so that
several processes can share one study; MLflow goes where MLFLOW_TRACKING_URI points. With
`hold`, the first trial blocks inside training until the process is killed, so a test that kills
the worker mid-trial does not race a trial that takes only seconds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_training import synthetic_data, tiny_cfg  # noqa: E402

import fgpo.sweep.study  # noqa: E402
from fgpo.sweep.study import SweepConfig, run_sweep  # noqa: E402

# A small space and two-epoch trials on 24 questions: the worker's code paths in seconds per trial.
SPACE = {"learning_rate": {"type": "float", "low": 3e-3, "high": 3e-2, "log": True},
         "policy.lora_r": {"type": "categorical", "choices": [2, 4]},
         "grpo.clip_eps": {"type": "float", "low": 0.1, "high": 0.3}}


def sweep_config(grace: int = 120, **kw) -> SweepConfig:
    base = dict(epochs=2, evals_per_epoch=1, n_startup_trials=1, n_warmup_steps=0, space=SPACE,
                heartbeat_interval=1 if grace < 120 else 30, grace_period=grace)
    base.update(kw)
    return SweepConfig(**base)


if __name__ == "__main__":
    backbone, storage, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    grace = int(sys.argv[4]) if len(sys.argv) > 4 else 120
    if sys.argv[5:] == ["hold"]:
        def _held(*args, **kwargs):  # the trial is RUNNING, its MLflow run open: wait for the kill
            while True:
                time.sleep(1)
        fgpo.sweep.study.train_run = _held
    # FGPO_TEST_STARTUP_TRIALS: random startup trials (the ones a seed race duplicates)
    startup = int(os.environ.get("FGPO_TEST_STARTUP_TRIALS", "1"))
    run_sweep("grpo", "synthetic", "synthetic", tiny_cfg(backbone),
              sweep_config(grace, n_startup_trials=startup),
              synthetic_data(), n, storage, os.environ.get("FGPO_TEST_STUDY", "grpo-synthetic"))
