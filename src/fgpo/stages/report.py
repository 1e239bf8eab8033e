"""DVC stage `report`: FGPO vs GRPO across every (reasoner, benchmark) setting.

Reads the train stage's metrics, curves and test selections and the reward tables; writes
reports/summary.md, reports/figures/*.png and metrics/summary.json (all versioned), plus
reports/mlflow_runs.md: the same settings table with each row linked to its MLflow runs, read from
the local tracking store (not a DVC output: run ids differ on every machine). The overall numbers,
summary and figures are also logged as an MLflow run tagged `kind=report`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from fgpo.benchmarks.config import load_prepare
from fgpo.config import DEFAULT_PARAMS, load_section, read_params
from fgpo.errors import InputError
from fgpo.report import figures
from fgpo.report.config import ReportConfig, read_methods
from fgpo.report.data import SettingData, SplitTable
from fgpo.report.markdown import outcome_line, render_summary, settings_table, what_ran
from fgpo.report.numbers import (Overall, SettingRow, best_so_far, family_accuracy,
                                 overall_numbers, setting_numbers, subset_choice, summary_metrics,
                                 tuning_numbers, with_holm)
from fgpo.rewards.data import table_path
from fgpo.rewards.table import TableSettings, load_reward_table
from fgpo.seqio import atomic_write_text, read_parquet
from fgpo.tools.toolset import ToolsConfig, require_fingerprint
from fgpo.tracking.provenance import EXPERIMENT, file_md5, git_commit

log = logging.getLogger(__name__)

TUNING_FIGURE = ("Tuning: best objective per trial", "figures/tuning_curves.png")
"""Drawn only when `make tune` ran (tune/trials.csv has trials)."""
FIGURES = {"Validation curves and checkpoints": "figures/validation_curves.png",
           "Validation accuracy vs reward evaluations": "figures/accuracy_vs_reward_evals.png",
           "Zero-signal fraction vs step": "figures/zero_signal_vs_step.png",
           "Per-family test accuracy": "figures/family_accuracy.png",
           "Subset choice per family": "figures/subset_choice.png"}


def _read(path: Path, what: str) -> Any:
    if not path.exists():
        raise InputError(f"{what} missing: run `dvc repro` first", file=str(path))
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return pd.read_csv(path) if path.suffix == ".csv" else read_parquet(path, rebuild="`dvc repro`")


def read_trials(path: Path) -> pd.DataFrame:
    """tune/trials.csv (committed; header only until `make tune` ran)."""
    cols = ["method", "trial", "state", "value", "question_visits", "reward_evals", "params"]
    if not path.exists():
        return pd.DataFrame(columns=cols)
    trials = pd.read_csv(path)
    missing = [c for c in cols if c not in trials.columns]
    if missing:
        raise InputError(f"lacks column(s) {missing}; rerun `make tune`", file=str(path))
    return trials


def load_setting(reasoner: str, benchmark: str, methods: list[str], tools_cfg: ToolsConfig,
                 data: Path, metrics: Path, plots: Path) -> SettingData:
    """One setting's train outputs (every method) and the test split of its reward table."""
    path = table_path(reasoner, benchmark, data / "reward_tables")
    table = load_reward_table(path, tools_cfg.names)
    require_fingerprint(table.meta, tools_cfg, str(path), "the reward_table stage")
    stats = _read(metrics / "reward_tables" / reasoner / f"{benchmark}.json", "table stats")
    test = table.in_split("test")
    return SettingData(
        reasoner=reasoner, benchmark=benchmark,
        metrics={m: _read(metrics / "train" / reasoner / benchmark / f"{m}.json",
                          "train metrics") for m in methods},
        curves={m: _read(plots / "train" / reasoner / benchmark / f"{m}.csv", "train curve")
                for m in methods},
        selections={m: _read(data / "selections" / reasoner / benchmark / f"{m}.parquet",
                             "test selections") for m in methods},
        table_stats=stats,
        test=SplitTable(question_ids=[table.question_ids[i] for i in np.flatnonzero(test)],
                        families=table.families[test], correct=table.correct[test],
                       reward=table.reward[test], n_tools=table.n_tools,
                       best_fixed_mask=int(stats["table/best_fixed_mask"])),
        n_questions=len(table.families), table_meta=table.meta)


def mlflow_links(rows: list[SettingRow], methods: list[str], cfg: ReportConfig,
                 table_md5: dict[str, str]) -> tuple[dict[str, str], str]:
    """Per setting, markdown links to its runs in the MLflow UI: the tracking server's own
    (MLFLOW_TRACKING_URI=http...) or `make ui`'s on the local store (report.mlflow_ui)."""
    from fgpo.redact import redact_text, redact_url
    from fgpo.tracking.mlflow_run import default_tracking_uri
    from fgpo.tracking.runs import local_store_missing, open_experiment, run_links
    uri = default_tracking_uri()
    if local_store_missing(uri):
        return {}, f"No tracking store at {redact_url(uri)}: the train stage ran without MLflow."
    try:
        client, exp = open_experiment(EXPERIMENT, uri)
        if exp is None:
            return {}, f"No experiment {EXPERIMENT!r} in {redact_url(uri)}."
        # a tracking server serves its own UI; the local store is seen through `make ui`
        ui = redact_url(uri) if uri.startswith(("http://", "https://")) else cfg.mlflow_ui
        links = {}
        for r in rows:
            setting = r.name
            links[setting] = run_links(client, exp.experiment_id, ui, methods,
                                       {"setting": setting, "table_md5": table_md5[setting]})
        where = (f"Tracking store: `{redact_url(uri)}`, experiment `{EXPERIMENT}` "
                 f"(id {exp.experiment_id}).")
        return links, where
    except Exception as exc:  # a missing or unreachable store must not fail the report
        detail = redact_text(str(exc))
        log.warning("MLflow lookup failed: %s", detail)
        return {}, f"MLflow lookup failed ({type(exc).__name__}: {detail})."


def main(params: Path = DEFAULT_PARAMS, data: Path = Path("data"),
         metrics: Path = Path("metrics"), plots: Path = Path("plots"),
         out: Path = Path("reports"), tracking: bool = True,
         links_only: bool = False, tune_dir: Path = Path("tune")) -> Overall:
    """Build the report; `links_only` rewrites just reports/mlflow_runs.md (what `make run` does
    after a `dvc repro` that found the report up to date, e.g. on a fresh clone)."""
    cfg = load_section(ReportConfig, "report", params)
    tools_cfg = load_section(ToolsConfig, "tools", params)
    reasoners = TableSettings.load(params).build
    methods = read_methods(params, cfg.compare)
    if cfg.heatmap_reasoner not in reasoners:
        raise InputError(f"heatmap_reasoner {cfg.heatmap_reasoner!r} is not in "
                         f"reward_table.build {reasoners}", file=str(params),
                         field="report.heatmap_reasoner")
    benchmarks = load_prepare(params).names
    settings = [load_setting(r, b, methods, tools_cfg, data, metrics, plots)
                for r in reasoners for b in benchmarks]
    tune = read_params(params).get("tune") or {}
    tuned_path = tune_dir / "tuned.yaml"
    tuned = (yaml.safe_load(tuned_path.read_text()) or {}) if tuned_path.exists() else {}
    # the settings a study chose values on; the headline is also shown without them
    tuned_on = list(tune.get("settings") or []) if tune.get("apply") and any(
        tuned.values()) else []
    rows = with_holm([setting_numbers(s, cfg) for s in settings], cfg)
    overall = overall_numbers(rows, tuned_on, cfg.level)
    fam = pd.concat([family_accuracy(s) for s in settings], ignore_index=True)
    if links_only:
        write_links(settings, rows, cfg, data, out)
        return overall
    choices = {s.benchmark: subset_choice(s, cfg.heatmap_top_subsets) for s in settings
               if s.reasoner == cfg.heatmap_reasoner}
    # ---- figures, then the markdown that embeds them -----------------------------------------
    fig = {title: out / rel for title, rel in FIGURES.items()}
    figures.validation_curves(settings, fig["Validation curves and checkpoints"])
    figures.accuracy_vs_evals(settings, fig["Validation accuracy vs reward evaluations"])
    figures.zero_signal_vs_step(settings, fig["Zero-signal fraction vs step"])
    figures.family_accuracy(fam, fig["Per-family test accuracy"])
    figures.subset_heatmaps(choices, tools_cfg.names, cfg.heatmap_reasoner,
                            fig["Subset choice per family"])
    ran = what_ran(load_prepare(params), tools_cfg, read_params(params).get("train") or {},
                   settings)
    trials = read_trials(tune_dir / "trials.csv")
    tuning = tuning_numbers(trials, tuned, tune.get("space") or {},
                            int(tune.get("plateau_trials", 12)))
    shown = dict(FIGURES)
    if tuning:
        shown[TUNING_FIGURE[0]] = TUNING_FIGURE[1]
        figures.tuning_curves(best_so_far(trials), out / TUNING_FIGURE[1])
    summary = render_summary(rows, overall, fam, ran, shown, cfg, tuning, tune)
    atomic_write_text(summary, out / "summary.md")
    atomic_write_text(json.dumps(summary_metrics(rows, overall), indent=1) + "\n",
                      metrics / "summary.json")
    # ---- machine-local: each row linked to its MLflow runs ----------------------------------
    if tracking and write_links(settings, rows, cfg, data, out):
        log_report_run(overall, cfg, out)
    return overall


__all__ = ["main", "outcome_line"]  # outcome_line: what `fgpo report` prints


def write_links(settings: list[SettingData], rows: list[SettingRow], cfg: ReportConfig,
                data: Path, out: Path) -> bool:
    """reports/mlflow_runs.md: the settings table, each row linked to its runs. True if any."""
    md5 = {s.name: file_md5(table_path(s.reasoner, s.benchmark, data / "reward_tables"))
           for s in settings}
    links, where = mlflow_links(rows, settings[0].methods if settings else [], cfg, md5)
    atomic_write_text("# MLflow runs of the comparison report\n\n" + where + "\n\n"
                      + settings_table(rows, links, cfg) + "\n", out / "mlflow_runs.md")
    return bool(links)


def log_report_run(overall: Overall, cfg: ReportConfig, out: Path) -> None:
    """The report as an MLflow run too (tag kind=report): overall numbers, summary, figures."""
    from dataclasses import asdict

    from fgpo.tracking import Tracker
    tracker = Tracker(EXPERIMENT, "report", tags={"kind": "report", "git_commit": git_commit()},
                      params={"report": asdict(cfg)})
    tracker.log_metrics({k: v for k, v in overall.flat().items() if isinstance(v, (int, float))
                         and not isinstance(v, bool)}, 0)
    tracker.log_artifact(out / "summary.md")
    tracker.log_artifact(out / "figures", "figures")
    tracker.end()
