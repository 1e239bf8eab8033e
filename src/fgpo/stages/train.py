"""DVC stage `train`: one (reasoner, benchmark) setting, every method and seed in one process.

The process loads the reward table once and computes the policy's frozen layers once (the
encoder's in-memory cache), then trains each (method, seed) run in turn. Every run keeps its own
seed stream, MLflow run, checkpoint and result, so a run's numbers do not depend on which runs
share the process, and after a kill each run resumes on its own: a finished run is read back
from runs/<method>/<reasoner>/<benchmark>/seed<s>/result.json (when its key, which covers the
config, the table's md5 and the code, still matches), an interrupted one continues from its
checkpoint.

Writes, per method <m>: metrics/train/<reasoner>/<benchmark>/<m>.json (final metrics, mean and
spread over seeds), plots/train/<reasoner>/<benchmark>/<m>.csv (the per-step curves) and
data/selections/<reasoner>/<benchmark>/<m>.parquet (every seed's greedy test-set choice per
question, which the report breaks down by family and subset).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fgpo.config import DEFAULT_PARAMS, load_section
from fgpo.errors import InputError
from fgpo.evaluate import evaluate_test
from fgpo.policy.pyfunc import log_policy, save_policy
from fgpo.report import figures
from fgpo.rewards.data import benchmark_path, load_run_data, table_path
from fgpo.rewards.stats import require_trainable
from fgpo.rewards.table import RunData
from fgpo.seqio import atomic_write_parquet, atomic_write_text
from fgpo.tools import ToolsConfig
from fgpo.tracking.datasets import split_inputs
from fgpo.tracking.provenance import EXPERIMENT, file_md5, git_commit
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.settings import resolve_device
from fgpo.train.loop import RunResult, check_run_data, config_hash, train_run
from fgpo.train.overrides import (BEST_PARAMS, TUNED_PARAMS, apply, apply_best,
                                  apply_tuned, read_best, read_tuned, tuned_source)

log = logging.getLogger(__name__)


def swept_params(method: str, reasoner: str, benchmark: str, params: Path,
                 best: Path = BEST_PARAMS) -> dict | None:
    """The setting's best sweep params when `sweep.apply_best` is on and a sweep recorded them
    in the best-params file (a params file of this stage in dvc.yaml)."""
    return read_best(method, reasoner, benchmark, best) if apply_best(params) else None


def resumable_run_id(ckpt: Path, chash: str) -> str | None:
    """The MLflow run of an interrupted run with the same configuration, to continue it."""
    if not ckpt.exists():
        return None
    import torch
    ck = torch.load(ckpt, weights_only=False)
    return ck["state"].get("run_id") if ck["config_hash"] == chash else None


def code_digest() -> str:
    """A digest of the fgpo package's source: a finished run is reused only under the same code."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def summarise(results: list[RunResult], seeds: list[int]) -> dict[str, Any]:
    """Mean and standard deviation over seeds of every final metric, plus the per-seed values."""
    out: dict[str, Any] = {}
    for key in results[0].final:
        vals = np.array([r.final[key] for r in results], dtype=float)
        out[key] = float(vals.mean())
        out[f"{key}_std"] = float(vals.std())
    out["seeds"] = seeds
    return out


def main(reasoner: str, benchmark: str, methods: list[str] | None = None,
         params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         metrics_root: Path = Path("metrics/train"), plots_root: Path = Path("plots/train"),
         runs_root: Path = Path("runs"), selections_root: Path = Path("data/selections"),
         tracking: bool = True, force: bool = False, tables_root: Path | None = None,
         any_method: bool = False, register: bool = True) -> dict[str, dict[str, Any]]:
    """Train every seed of every method in `methods` (default: train.methods) on one setting;
    `force` trains even on a degenerate table (allow_degenerate_table). The table is read from
    `tables_root` (default data/reward_tables; the ablation's tables at other tool costs live
    elsewhere); `any_method` admits every registered estimator, not only train.methods (the
    ablation's); `register` puts the setting's best run's policy in MLflow's model registry.
    Returns method -> summary."""
    from fgpo.tracking import sigterm_as_exit
    with sigterm_as_exit(), setting_lock(runs_root, reasoner, benchmark):
        # a `kill` ends the MLflow run as KILLED, not RUNNING for good
        return _main(reasoner, benchmark, methods, params, data, metrics_root, plots_root,
                     runs_root, selections_root, tracking, force,
                     tables_root or data / "reward_tables", any_method, register)


@contextmanager
def setting_lock(runs_root: Path, reasoner: str, benchmark: str) -> Iterator[None]:
    """One training of a setting at a time: a second `fgpo train` of it waits here, then reads
    back the runs the first one finished (no run trained or logged twice, no second registry
    version). An OS file lock, released when its process dies, so a kill leaves none behind."""
    from filelock import FileLock, Timeout

    path = runs_root / ".locks" / f"{reasoner}--{benchmark}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.warning("%s/%s is being trained by another process (lock %s); waiting for it, "
                    "then its finished runs are read back", reasoner, benchmark, path)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _main(reasoner: str, benchmark: str, methods: list[str] | None, params: Path, data: Path,
          metrics_root: Path, plots_root: Path, runs_root: Path, selections_root: Path,
          tracking: bool, force: bool, tables_root: Path, any_method: bool, register: bool
          ) -> dict[str, dict[str, Any]]:
    # ---- once per setting: config, reward table, the degenerate-table gate ---------------------
    tools_cfg = load_section(ToolsConfig, "tools", params)
    base_cfg = load_section(TrainConfig, "train", params)
    allowed = list(ESTIMATORS) if any_method else base_cfg.methods
    for method in methods or []:
        if method not in allowed:
            raise InputError(f"method {method!r} not in {allowed}", file=str(params),
                             field="train.methods")
    methods = methods or base_cfg.methods
    try:  # e.g. cuda on a machine without one: before any table or model is read
        resolve_device(base_cfg.device)
    except InputError as exc:
        raise InputError(exc.message, file=str(params), field=exc.field) from None
    if force:
        base_cfg = replace(base_cfg, allow_degenerate_table=True)
    # fails before training
    run_data = load_run_data(reasoner, benchmark, tools_cfg, data, tables_root)
    table_file = table_path(reasoner, benchmark, tables_root)
    configs = {m: method_config(base_cfg, m, reasoner, benchmark, params) for m in methods}
    for cfg, _ in configs.values():
        check_run_data(cfg, run_data)  # e.g. batch_size > the train split: before any run
    stats = require_trainable(run_data, base_cfg.allow_degenerate_table,  # before any model
                              str(table_file))
    baselines = {f"baseline/{k}": v for k, v in stats.items()
                 if k.startswith("test/") and isinstance(v, float)}
    table_md5 = file_md5(table_file)
    context = RunContext(reasoner, benchmark, run_data, table_md5, code_digest(),
                         baselines, runs_root, tracking,
                         run_inputs(run_data, benchmark_path(benchmark, data), table_file,
                                    table_md5) if tracking else [])

    # ---- every method, every seed: one run each, outputs per method ---------------------------
    out: dict[str, dict[str, Any]] = {}
    finished: list[tuple[str, int, RunResult]] = []
    for method, (cfg, best) in configs.items():
        results = [train_seed(context, method, cfg, seed, best) for seed in cfg.seeds]
        finished += [(method, seed, r) for seed, r in zip(cfg.seeds, results)]
        out[method] = write_method_outputs(results, cfg.seeds, method, reasoner, benchmark,
                                           best, metrics_root, plots_root, selections_root,
                                           tuned_label(method, params))
    if set(methods) == set(base_cfg.methods):  # a method dropped from train.methods: its files go
        for root, ext in ((metrics_root, "json"), (plots_root, "csv")):
            for stale in (root / reasoner / benchmark).glob(f"*.{ext}"):
                if stale.stem not in methods:
                    stale.unlink()
    if tracking and register:
        register_best(finished, reasoner, benchmark, table_md5)
    return out


def run_inputs(run_data: RunData, bench_file: Path, table_file: Path, table_md5: str) -> list:
    """A training run's MLflow dataset inputs: each split of the benchmark and of the reward
    table, named `<file>:<split>`, digest the DVC md5, context the split's role."""
    splits, counts = np.unique(run_data.table.splits, return_counts=True)
    per_split = {str(s): int(n) for s, n in zip(splits, counts)}
    n_sub = 2 ** len(run_data.tool_names)
    setting = f"{run_data.table.meta.get('reasoner', table_file.parent.name)}/{bench_file.stem}"
    return (split_inputs(bench_file, f"benchmark {bench_file.stem}", per_split)
            + split_inputs(table_file, f"reward table {setting}",
                           {s: n * n_sub for s, n in per_split.items()}, table_md5))


def table_test_input(inputs: list) -> Any:
    """Of a run's dataset inputs, the reward table's test split (what test metrics measure)."""
    return next(i for i in inputs if i.dataset.name.startswith("reward table")
                and i.dataset.name.endswith(":test"))


CHAMPION = "champion"
"""The registry alias of each setting's best version so far on the validation criterion: what
`models:/fgpo-<reasoner>-<benchmark>@champion` loads. A new version takes it only by beating it."""


def validation_score(final: dict[str, float]) -> tuple[float, float]:
    """The registry's criterion: val/accuracy, then val/expected_reward (never test)."""
    return final.get("val/accuracy", float("-inf")), final.get("val/expected_reward",
                                                               float("-inf"))


def _version_score(version: Any) -> tuple[float, float]:
    tags = version.tags or {}
    return (float(tags.get("val/accuracy", "-inf")),
            float(tags.get("val/expected_reward", "-inf")))


def register_best(finished: list[tuple[str, int, RunResult]], reasoner: str,
                  benchmark: str, table_md5: str = "") -> str | None:
    """Register the setting's best run's policy (chosen on validation: `validation_score`) as a
    version of model `fgpo-<reasoner>-<benchmark>`, unless that run's model is registered
    already, and move the `champion` alias to it only when it beats the current champion
    (strictly: a tie keeps the earlier one). Returns the model name, or None."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from fgpo.tracking import default_tracking_uri

    ranked = [(validation_score(r.final), method, seed, r) for method, seed, r in finished
              if r.model_uri]
    if not ranked:
        return None
    score, method, seed, best = max(ranked, key=lambda t: t[0])
    name = f"fgpo-{reasoner}-{benchmark}"
    client = MlflowClient(default_tracking_uri())
    found = client.search_model_versions(f"name = '{name}' and run_id = '{best.run_id}'")
    if found:
        version = found[0]
    else:
        mlflow.set_tracking_uri(default_tracking_uri())
        version = mlflow.register_model(best.model_uri, name, tags={
            "method": method, "seed": str(seed), "setting": f"{reasoner}/{benchmark}",
            # repr: exact floats, so the champion comparison reads back what was measured
            "val/accuracy": repr(score[0]), "val/expected_reward": repr(score[1]),
            "table_md5": table_md5,
            "chosen_by": "val/accuracy, then val/expected_reward"})
    try:
        champion = client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:  # no champion yet
        champion = None
    if champion is None or score > _version_score(champion):
        client.set_registered_model_alias(name, CHAMPION, version.version)
    return name


def tuned_label(method: str, params: Path) -> str:
    """Where the method's settings came from: tuned | from <relative> | untuned, or
    'off (tune.apply: false)' when the tuned values were not applied."""
    if not apply_tuned(params):
        return "off (tune.apply: false)"
    return tuned_source(method, Path(params).parent / TUNED_PARAMS)


def sweep_label(best: dict | None) -> str:
    """'study#trial' of the sweep whose best params a run used, or 'none'."""
    return f"{best['study']}#{best['trial']}" if best else "none"


def method_config(cfg: TrainConfig, method: str, reasoner: str, benchmark: str, params: Path,
                  tuned: Path | None = None) -> tuple[TrainConfig, dict | None]:
    """The config `method` trains with on this setting: params.yaml's train section, the
    method's tuned values (tune/tuned.yaml, from `make tune`) over it, and the setting's best
    sweep params over those when sweep.apply_best is on; plus the sweep record used."""
    # tune/tuned.yaml sits beside the params file (the repository root under `dvc repro`)
    if apply_tuned(params):
        tuned = tuned or Path(params).parent / TUNED_PARAMS
        cfg = apply(cfg, read_tuned(method, tuned), tuned, method)
    best = swept_params(method, reasoner, benchmark, params)
    if best:
        cfg = apply(cfg, best["params"], BEST_PARAMS, f"{method}.{reasoner}.{benchmark}.params")
    return cfg, best


@dataclass
class RunContext:
    """What every run of a setting shares."""

    reasoner: str
    benchmark: str
    run_data: RunData
    table_md5: str
    code: str
    baselines: dict[str, float]
    runs_root: Path
    tracking: bool
    inputs: list
    """MLflow dataset inputs every run of the setting logs (empty without tracking)."""


def run_key(chash: str, ctx: RunContext) -> str:
    """A finished run is reused only when config, table and code are the ones it ran with."""
    return hashlib.sha256(f"{chash}|{ctx.table_md5}|{ctx.code}".encode()).hexdigest()[:16]


def train_seed(ctx: RunContext, method: str, cfg: TrainConfig, seed: int, best: dict | None
               ) -> RunResult:
    """One run: read back when it finished before with the same key, else trained (resuming
    from its checkpoint), its MLflow run ended, its result written."""
    from fgpo.tracking import Tracker, end_if_running

    out_dir = ctx.runs_root / method / ctx.reasoner / ctx.benchmark / f"seed{seed}"
    ckpt, done = out_dir / "checkpoint.pt", out_dir / "result.json"
    chash = config_hash(cfg, method, seed, ctx.run_data.table.meta)
    key = run_key(chash, ctx)
    if done.exists():
        saved = json.loads(done.read_text())
        if saved.get("key") == key and (out_dir / "test_selections.parquet").exists():
            return RunResult(final=saved["final"], history=saved["history"],
                             selections=pd.read_parquet(out_dir / "test_selections.parquet"),
                             policy=None, run_id=saved.get("run_id"),
                             model_uri=saved.get("model_uri"))
        done.unlink()  # another config, table or code: train afresh
    tracker = None
    try:  # from the run's creation on, an interrupt ends it KILLED
        if ctx.tracking:
            run_id = resumable_run_id(ckpt, chash)
            sidecar = out_dir / "mlflow_run_id"
            if run_id is None and sidecar.exists():
                # the previous attempt died before a checkpoint it could resume from
                end_if_running(sidecar.read_text().strip(), "KILLED")
            tracker = Tracker(EXPERIMENT, f"{method}-{ctx.reasoner}-{ctx.benchmark}-s{seed}",
                              tags={"method": method, "reasoner": ctx.reasoner,
                                    "benchmark": ctx.benchmark, "seed": str(seed),
                                    "setting": f"{ctx.reasoner}/{ctx.benchmark}",
                                    "device": str(resolve_device(cfg.device)),
                                    "git_commit": git_commit(), "table_md5": ctx.table_md5,
                                    "table_fingerprint": ctx.run_data.table.meta["fingerprint"],
                                    "sweep_best": sweep_label(best),
                                    # the ablation's grouping keys, on every run
                                    "estimator": method,
                                    "tool_cost": str(ctx.run_data.table.meta.get("tool_cost"))},
                              params={"method": method, "train": asdict(cfg),
                                      "tools": ctx.run_data.tool_names, "reasoner": ctx.reasoner,
                                      "benchmark": ctx.benchmark, "seed": seed},
                              run_id=run_id,
                              # the id on disk before anything else: a SIGKILL from here on
                              # leaves a run the next attempt ends KILLED
                              on_create=lambda rid: atomic_write_text(rid + "\n", sidecar))
            if run_id is None:  # a resumed run logged them when it was created
                tracker.log_inputs(ctx.inputs)
        result = train_run(method, cfg, ctx.run_data, seed, tracker, ckpt)
        test, result.selections = evaluate_test(result.policy, ctx.run_data,
                                                cfg.zero_signal_group_size)
        result.final = {**test, **result.final, **ctx.baselines}
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(result.selections, out_dir / "test_selections.parquet")
        save_policy(result.policy, cfg.policy, ctx.run_data.tool_names, out_dir / "adapter")
        figures.learning_curve(result.history, out_dir / "learning_curve.png",
                               f"{method} {ctx.reasoner}/{ctx.benchmark} seed {seed}")
        if tracker is not None:
            step = int(result.final["budget/optimizer_steps"])
            tracker.log_metrics({k: v for k, v in result.final.items()
                                 if k.startswith(("budget/", "baseline/", "checkpoint/"))}, step)
            for name in ("test_selections.parquet", "learning_curve.png"):
                tracker.log_artifact(out_dir / name)
            tracker.flush()
            # the policy as an MLflow model (the adapter inside): the run's Models column
            model = log_policy(out_dir / "adapter", tracker.run_id, tracker.uri,
                               int(result.final["checkpoint/step"]))
            result.run_id, result.model_uri = tracker.run_id, model.model_uri
            # test metrics are the model's too, measured on the table's test split
            tracker.log_metrics({k: v for k, v in result.final.items() if k.startswith("test/")},
                                step, model.model_id, table_test_input(ctx.inputs))
            tracker.end()
    except BaseException as exc:  # an error FAILED (e.g. diverged), an interrupt KILLED
        if tracker is not None:
            tracker.end("FAILED" if isinstance(exc, Exception) else "KILLED")
        raise
    atomic_write_text(json.dumps({"key": key, "final": result.final, "history": result.history,
                                  "run_id": result.run_id, "model_uri": result.model_uri})
                      + "\n", done)
    ckpt.unlink(missing_ok=True)  # finished: result.json stands for it from now on
    return result


def write_method_outputs(results: list[RunResult], seeds: list[int], method: str,
                         reasoner: str, benchmark: str, best: dict | None, metrics_root: Path,
                         plots_root: Path, selections_root: Path, tuned: str = "untuned"
                         ) -> dict[str, Any]:
    """The method's metrics JSON (mean and spread over seeds; where its settings came from),
    curves CSV and selections."""
    summary = summarise(results, seeds)
    summary["sweep_best"] = sweep_label(best)
    summary["tuned"] = tuned  # tuned | from <relative> | untuned (tune/tuned.yaml)
    atomic_write_text(json.dumps(summary, indent=1) + "\n",
                      metrics_root / reasoner / benchmark / f"{method}.json")
    plot = pd.concat([pd.DataFrame(r.history).assign(seed=s) for r, s in zip(results, seeds)],
                     ignore_index=True)
    plot.columns = [c.replace("/", "_") for c in plot.columns]
    path = plots_root / reasoner / benchmark / f"{method}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(plot.to_csv(index=False), path)
    atomic_write_parquet(pd.concat([r.selections.assign(seed=s) for r, s in zip(results, seeds)],
                                   ignore_index=True),
                         selections_root / reasoner / benchmark / f"{method}.parquet")
    return summary


def method_list() -> list[str]:
    """`fgpo list-methods`: each registered estimator, the first line of its module's docstring
    (the method and its paper) and its `train.<name>:` settings with their defaults."""
    import sys
    from dataclasses import fields

    from fgpo.train.estimators import ESTIMATORS
    out = []
    for name, est in ESTIMATORS.items():
        doc = (sys.modules[est.__module__].__doc__ or "").strip().splitlines()
        settings = ", ".join(f"{f.name}={f.default!r}" for f in fields(est.Config))
        out += [f"{name}: {doc[0] if doc else ''}",
                f"    train.{name}: {settings or '(no settings)'}"]
    return out


def outcome(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """What `fgpo train` prints: each method's headline test numbers and budget."""
    lines = []
    for name, summary in summaries.items():
        lines.append(f"[{name}]")
        lines += [f"  {key:28s} {summary[key]:.4f}" for key in (
            "test/accuracy", "test/expected_accuracy", "test/tools_per_question",
            "budget/reward_evals")]
    return lines
