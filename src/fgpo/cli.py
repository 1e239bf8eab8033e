"""`fgpo` command line: one command per pipeline stage (DVC stages call these), each running
its module of `fgpo.stages`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from fgpo.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Exact policy optimisation (FGPO) vs GRPO for genomic tool selection.")
PARAMS = typer.Option(Path("params.yaml"), "--params", help="params.yaml to read.")


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


@app.command()
def prepare(benchmark: str = typer.Argument(..., help="a name declared under `prepare:` in "
                                                       "params.yaml, e.g. genomeqa"),
            params: Path = PARAMS,
            out_dir: Path = typer.Option(Path("data/benchmarks"))) -> None:
    """Generate or import a declared benchmark -> data/benchmarks/<benchmark>.parquet."""
    from fgpo.stages import prepare as stage
    try:
        path = stage.main(benchmark, params, out_dir)
    except InputError as exc:
        _fail(exc)
    typer.echo(f"wrote {path}")


@app.command()
def tools(benchmark: str = typer.Argument(..., help="benchmark name (data/benchmarks/<name>.parquet)"),
          params: Path = PARAMS,
          bench_dir: Path = typer.Option(Path("data/benchmarks")),
          out_dir: Path = typer.Option(Path("data/tool_outputs"))) -> None:
    """Run all K tools once on every question -> data/tool_outputs/<benchmark>.parquet."""
    from fgpo.stages import tools as stage
    try:
        path = stage.main(benchmark, params, bench_dir, out_dir)
    except InputError as exc:
        _fail(exc)
    typer.echo(f"wrote {path}")


@app.command("reward-table")
def reward_table(reasoner: str = typer.Argument(..., help="name under reward_table.reasoners"),
                 benchmark: str = typer.Argument(...), params: Path = PARAMS,
                 data: Path = typer.Option(Path("data")),
                 shard: Optional[str] = typer.Option(
                     None, help="I/N: build only questions with index % N == I (one server's share)"),
                 base_url: Optional[str] = typer.Option(
                     None, help="override the spec's endpoint (openai backend), e.g. per shard"),
                 merge: Optional[int] = typer.Option(
                     None, help="merge N finished shards into the stage's table")) -> None:
    """Build (or resume) the exhaustive reward table of one reasoner x benchmark."""
    from fgpo.reasoners import ReasonerError
    from fgpo.stages import reward_table as stage
    try:
        path = stage.main(reasoner, benchmark, params, data, shard, base_url, merge)
    except InputError as exc:
        _fail(exc)
    except ReasonerError as exc:
        typer.secho(f"stopped: {exc}\nAnswered cells are saved; rerun the same command to resume.",
                    fg=typer.colors.RED, err=True)
        raise typer.Exit(3)
    typer.echo(f"wrote {path}")


@app.command("table-stats")
def table_stats(reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
                params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                metrics: Path = typer.Option(Path("metrics/reward_tables"))) -> None:
    """Baselines and zero-signal statistics of a reward table -> metrics JSON."""
    from fgpo.stages import table_stats as stage
    try:
        result = stage.main(reasoner, benchmark, params, data, metrics)
    except InputError as exc:
        _fail(exc)
    for key, value in result.items():
        if not key.startswith("family/") and key != "table/warnings":
            typer.echo(f"{key:40s} {value:.4f}" if isinstance(value, float) else f"{key:40s} {value}")
    for warning in result["table/warnings"]:  # loud, but the stage still writes its metrics
        typer.echo(f"warning: {reasoner}/{benchmark}: {warning}", err=True)


@app.command()
def train(reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
          method: Optional[list[str]] = typer.Option(None, "--method", help="train only this "
                                                     "method (repeatable); default: train.methods"),
          params: Path = PARAMS, data: Path = typer.Option(Path("data")),
          no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip MLflow logging"),
          force: bool = typer.Option(False, "--force", help="train even on a degenerate reward "
                                     "table (see `fgpo table-stats`; train.allow_degenerate_table)")
          ) -> None:
    """Train the tool-selection policies of one setting (every method and seed in one process:
    the backbone's frozen layers are computed once), log to MLflow, write metrics and plots."""
    from fgpo.stages import train as stage
    try:
        summaries = stage.main(reasoner, benchmark, method or None, params, data,
                               tracking=not no_mlflow, force=force)
    except InputError as exc:
        _fail(exc)
    for name, summary in summaries.items():
        typer.echo(f"[{name}]")
        for key in ("test/accuracy", "test/expected_accuracy", "test/tools_per_question",
                    "budget/reward_evals"):
            typer.echo(f"  {key:28s} {summary[key]:.4f}")


@app.command()
def sweep(method: str = typer.Option(..., help="an estimator (`fgpo list-methods`)"),
          reasoner: str = typer.Option(...), benchmark: str = typer.Option(...),
          n_trials: Optional[int] = typer.Option(None, help="trials for this worker "
                                                 "(default sweep.n_trials)"),
          storage: Optional[str] = typer.Option(None, help="study storage URL (default "
                                                "sweep.storage), e.g. postgresql://u:p@host/db"),
          study_name: Optional[str] = typer.Option(None, help="default <method>-<reasoner>-"
                                                   "<benchmark>"),
          multi_objective: Optional[bool] = typer.Option(
              None, "--multi-objective/--single-objective",
              help="also minimise tools per question"),
          params: Path = PARAMS, data: Path = typer.Option(Path("data")),
          no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip MLflow logging")) -> None:
    """Optuna study over LoRA and optimiser settings (start several to run workers)."""
    from fgpo.stages import sweep as stage
    try:
        study = stage.main(method, reasoner, benchmark, n_trials, storage, study_name,
                           multi_objective, params, data, tracking=not no_mlflow)
    except InputError as exc:
        _fail(exc)
    states = {}
    for t in study.trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    typer.echo(f"study {study.study_name}: {states}")
    from fgpo.sweep.study import best_of, best_path
    best = best_of(study)  # this study's own best, never another study's file
    path = best_path(study.study_name)
    if best is None:
        typer.echo("no trial completed: no best params written")
    else:
        typer.echo(f"best trial {best['trial']}: val/accuracy {best['value']:.4f} -> {path}")
        def value(k: str, v: object) -> str:  # -S values are parsed as YAML
            return f"[{v}]" if k.endswith("target_modules") else str(v).lower() \
                if isinstance(v, bool) else str(v)
        overrides = " ".join(f"-S 'train.{k}={value(k, v)}'"
                             for k, v in sorted(best["params"].items()))
        typer.echo(f"train with them: dvc exp run {overrides}")


@app.command("list-methods")
def list_methods() -> None:
    """Registered estimators (train.methods, `fgpo sweep --method`) and their settings."""
    from dataclasses import fields

    from fgpo.train.estimators import ESTIMATORS
    for name, est in ESTIMATORS.items():
        settings = ", ".join(f"{f.name}={f.default!r}" for f in fields(est.Config))
        typer.echo(f"{name:12s} {(est.__doc__ or '').strip().splitlines()[0]}"
                   f"  [train.{name}: {settings or 'no settings'}]")


@app.command("list-tools")
def list_tools() -> None:
    """Registered tools with their one-line descriptions."""
    from fgpo.tools import TOOL_REGISTRY
    for name, cls in TOOL_REGISTRY.items():
        typer.echo(f"{name:20s} v{cls.version}  {cls.description}")


@app.command("import")
def import_collection(
        name: str = typer.Option(..., help="benchmark name for the imported questions"),
        family: str = typer.Option(..., help="question family, e.g. promoter"),
        out: Path = typer.Option(..., help="output parquet, e.g. data/benchmarks/ecoli.parquet"),
        positives: Optional[Path] = typer.Option(None, help="FASTA of positives (label 1)"),
        negatives: Optional[Path] = typer.Option(None, help="FASTA of negatives (label 0)"),
        csv: Optional[Path] = typer.Option(None, help="CSV with sequence and 0/1 label columns"),
        seq_col: str = "seq", label_col: str = "label",
        organism: str = typer.Option("genomic", help="word used in the question text"),
        question: Optional[str] = typer.Option(None, help="template with {n} and {organism}"),
        max_per_class: Optional[int] = typer.Option(
            None, help="keep at most this many records per class (a seeded balanced sample; "
                       ">= 1; default: all)"),
        seed: int = 0) -> None:
    """Import a real labelled collection (FASTA pair or CSV, plain or gzipped) as yes/no questions.

    Duplicate sequences within a class and sequences labelled both ways are dropped with a
    warning; repeated ids for different sequences are renamed id#2, id#3, ...
    """
    import warnings

    from fgpo.benchmarks import importer
    from fgpo.seqio import atomic_write_parquet
    kw = dict(name=name, family=family, organism=organism, seed=seed, question=question,
              max_per_class=max_per_class)
    with warnings.catch_warnings(record=True) as caught:  # shown as plain lines on stderr
        warnings.simplefilter("always", UserWarning)
        try:
            if csv is not None and positives is None and negatives is None:
                df = importer.import_csv(csv, seq_col, label_col, **kw)
            elif csv is None and positives is not None and negatives is not None:
                df = importer.import_fasta_pair(positives, negatives, **kw)
            else:
                raise InputError("give either --csv, or both --positives and --negatives")
        except InputError as exc:
            error = exc
        else:
            error = None
    for w in caught:
        typer.secho(f"warning: {w.message}", fg=typer.colors.YELLOW, err=True)
    if error is not None:
        _fail(error)
    atomic_write_parquet(df, out, metadata={"benchmark": name, "imported": True})
    typer.echo(f"wrote {out}: {len(df)} questions ({(df.answer == 'A').sum()} positive)")


@app.command()
def report(params: Path = PARAMS, data: Path = typer.Option(Path("data")),
           metrics: Path = typer.Option(Path("metrics")), plots: Path = typer.Option(Path("plots")),
           out: Path = typer.Option(Path("reports")),
           no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip the MLflow run links"),
           links_only: bool = typer.Option(False, help="only rewrite reports/mlflow_runs.md")
           ) -> None:
    """FGPO vs GRPO across all settings -> reports/summary.md, figures, metrics/summary.json."""
    from fgpo.stages import report as stage
    from fgpo.report.summary import outcome_line
    try:
        overall = stage.main(params, data, metrics, plots, out, tracking=not no_mlflow,
                             links_only=links_only)
    except InputError as exc:
        _fail(exc)
    typer.echo(outcome_line(overall))
    typer.echo(f"wrote {out / 'mlflow_runs.md'}" if links_only else
               f"wrote {out / 'summary.md'}, {out / 'figures'}, {metrics / 'summary.json'}")


@app.command()
def readme(params: Path = PARAMS, path: Path = typer.Option(Path("README.md")),
           bench_dir: Path = typer.Option(Path("data/benchmarks"))) -> None:
    """Regenerate the README's generated tables from the pipeline's outputs."""
    from fgpo.report.readme import update_readme
    try:
        update_readme(path, params, bench_dir)
    except InputError as exc:
        _fail(exc)
    typer.echo(f"updated {path}")


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
