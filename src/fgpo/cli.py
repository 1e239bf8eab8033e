"""`fgpo` command line: one command per pipeline stage (DVC stages call these), each calling its
module of `fgpo.stages` and printing what it returns. Errors are handled in one place: bad input
exits 2 with the message that names the file, record and field; a failed reasoner backend exits
3 (its answered cells are saved, the same command resumes); training that diverged (a
non-finite loss) exits 4, its MLflow run FAILED."""

from __future__ import annotations

import faulthandler
import functools
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer

from fgpo.errors import DivergedError, InputError, ReasonerError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Exact policy optimisation (FGPO) vs GRPO for genomic tool selection.")
PARAMS = typer.Option(Path("params.yaml"), "--params", help="params.yaml to read.")
NUMBERS = {"ignore_unknown_options": True}
"""For commands with a number argument: `-0.05` (as `dvc repro` passes a negative cost from
params.yaml) is that argument, for the command's own check, not an unknown option."""


def command(*args: Any, **kwargs: Any) -> Callable:
    """`app.command`, with the one error handler around the command."""
    def register(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*a: Any, **k: Any) -> Any:
            try:
                return fn(*a, **k)
            except InputError as exc:
                typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
                raise typer.Exit(2) from None
            except ReasonerError as exc:
                typer.secho(f"stopped: {exc}\nAnswered cells are saved; rerun the same command "
                            "to resume.", fg=typer.colors.RED, err=True)
                raise typer.Exit(3) from None
            except DivergedError as exc:
                typer.secho(f"training diverged: {exc}", fg=typer.colors.RED, err=True)
                raise typer.Exit(4) from None
        return app.command(*args, **kwargs)(run)
    return register


LOG_LEVEL_ENV = "FGPO_LOG_LEVEL"
"""Level of the `fgpo` module loggers on stderr (DEBUG, INFO (default), WARNING, ERROR)."""


@app.callback()
def _setup() -> None:
    """The package's module loggers (`fgpo.*`) and warnings (e.g. an importer's clean-up) as
    one plain line each on stderr; `kill -USR1 <pid>` prints where the command is (every
    thread's Python stack, on stderr; a forked worker inherits it)."""
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    except (AttributeError, OSError, ValueError):  # no SIGUSR1 (Windows), or no real stderr
        pass
    level = os.environ.get(LOG_LEVEL_ENV, "INFO").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise typer.BadParameter(f"{LOG_LEVEL_ENV}={level!r}: use DEBUG, INFO, WARNING or ERROR")
    log = logging.getLogger("fgpo")
    if not log.handlers:  # once per process (the test runner calls the app many times)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(level)
    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None,
             line: Any = None) -> None:
        typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)
    warnings.showwarning = show


def echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


@command()
def prepare(benchmark: str = typer.Argument(..., help="a name declared under `prepare:` in "
                                                       "params.yaml, e.g. genomeqa"),
            params: Path = PARAMS,
            out_dir: Path = typer.Option(Path("data/benchmarks"))) -> None:
    """Generate or import a declared benchmark -> data/benchmarks/<benchmark>.parquet."""
    from fgpo.stages import prepare as prepare_stage
    typer.echo(f"wrote {prepare_stage.main(benchmark, params, out_dir)}")


@command()
def tools(benchmark: str = typer.Argument(..., help="benchmark name (data/benchmarks/<name>.parquet)"),
          params: Path = PARAMS,
          bench_dir: Path = typer.Option(Path("data/benchmarks")),
          out_dir: Path = typer.Option(Path("data/tool_outputs"))) -> None:
    """Run all K tools once on every question -> data/tool_outputs/<benchmark>.parquet."""
    from fgpo.stages import tools as tools_stage
    typer.echo(f"wrote {tools_stage.main(benchmark, params, bench_dir, out_dir)}")


@command("reward-table")
def reward_table(reasoner: str = typer.Argument(..., help="name under reward_table.reasoners"),
                 benchmark: str = typer.Argument(...), params: Path = PARAMS,
                 data: Path = typer.Option(Path("data")),
                 no_mlflow: bool = typer.Option(False, "--no-mlflow",
                                                help="skip logging the build as an MLflow run")
                 ) -> None:
    """Build (or resume) the exhaustive reward table of one reasoner x benchmark (a sharded
    one: `reward-shard` per server, then `reward-merge`)."""
    from fgpo.stages import reward_table as reward_table_stage
    out = reward_table_stage.main(reasoner, benchmark, params, data, tracking=not no_mlflow)
    typer.echo(f"wrote {out}")


@command("reward-shard", context_settings=NUMBERS)
def reward_shard(reasoner: str = typer.Argument(..., help="a name in reward_table.sharded"),
                 benchmark: str = typer.Argument(...),
                 index: int = typer.Argument(..., min=0, help="the shard, 0..N-1"),
                 params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                 no_mlflow: bool = typer.Option(False, "--no-mlflow",
                                                help="skip logging the build as an MLflow run")
                 ) -> None:
    """Build shard I of N of a sharded table, on its endpoint (the reward_shard stage)."""
    from fgpo.stages import reward_shard as reward_shard_stage
    out = reward_shard_stage.main(reasoner, benchmark, index, params, data, not no_mlflow)
    typer.echo(f"wrote {out}")


@command("reward-merge")
def reward_merge(reasoner: str = typer.Argument(..., help="a name in reward_table.sharded"),
                 benchmark: str = typer.Argument(...), params: Path = PARAMS,
                 data: Path = typer.Option(Path("data"))) -> None:
    """Join the N shards of a sharded table into the table (the reward_merge stage)."""
    from fgpo.stages import reward_merge as reward_merge_stage
    typer.echo(f"wrote {reward_merge_stage.main(reasoner, benchmark, params, data)}")


@command("table-stats")
def table_stats(reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
                params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                metrics: Path = typer.Option(Path("metrics/reward_tables"))) -> None:
    """Baselines and zero-signal statistics of a reward table -> metrics JSON."""
    from fgpo.stages import table_stats as table_stats_stage
    result = table_stats_stage.main(reasoner, benchmark, params, data, metrics)
    echo(table_stats_stage.outcome(result))
    for warning in result["table/warnings"]:  # loud, but the stage still writes its metrics
        typer.echo(f"warning: {reasoner}/{benchmark}: {warning}", err=True)


@command()
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
    from fgpo.stages import train as train_stage
    summaries = train_stage.main(reasoner, benchmark, method or None, params, data,
                           tracking=not no_mlflow, force=force)
    echo(train_stage.outcome(summaries))


@command()
def sweep(method: str = typer.Option(..., help="an estimator (`fgpo list-methods`)"),
          reasoner: str = typer.Option(...), benchmark: str = typer.Option(...),
          n_trials: Optional[int] = typer.Option(None, min=1, help="trials for this worker "
                                                 "(>= 1; default sweep.n_trials)"),
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
    from fgpo.stages import sweep as sweep_stage
    study, handed_off = sweep_stage.main(method, reasoner, benchmark, n_trials, storage, study_name,
                                   multi_objective, params, data, tracking=not no_mlflow)
    echo(sweep_stage.outcome(study, handed_off))


@command()
def tune(storage: Optional[str] = typer.Option(None, help="study storage URL (default "
                                               "tune.storage, or $FGPO_TUNE_STORAGE)"),
         params: Path = PARAMS, data: Path = typer.Option(Path("data")),
         no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip MLflow logging"),
         method: Optional[list[str]] = typer.Option(
             None, help="run only this method's study (repeatable; default: tune.methods); "
                        "the last study to finish writes tune/tuned.yaml")) -> None:
    """Equal-budget Optuna study per method on the tuning settings; writes tune/tuned.yaml."""
    from fgpo.stages import tune as tune_stage
    echo(tune_stage.outcome(tune_stage.main(params, data, storage, tracking=not no_mlflow,
                                            methods=method or None), params))


@command("list-methods")
def list_methods() -> None:
    """Registered estimators (train.methods, `fgpo sweep --method`) and their settings."""
    from fgpo.train import estimators
    echo(estimators.describe())


@command("list-tools")
def list_tools() -> None:
    """Registered tools with their one-line descriptions."""
    from fgpo.tools import toolset
    echo(toolset.describe())


@command("import")
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
            None, min=1, help="keep at most this many records per class (a seeded balanced sample; "
                       ">= 1; default: all)"),
        seed: int = 0) -> None:
    """Import a real labelled collection (FASTA pair or CSV, plain or gzipped) as yes/no questions.

    Duplicate sequences within a class and sequences labelled both ways are dropped with a
    warning; repeated ids for different sequences are renamed id#2, id#3, ...
    """
    from fgpo.stages import prepare as prepare_stage
    path, n, pos = prepare_stage.import_collection(name, family, out, positives, negatives, csv,
                                           seq_col, label_col, organism, question,
                                           max_per_class, seed)
    typer.echo(f"wrote {path}: {n} questions ({pos} positive)")


@command()
def report(params: Path = PARAMS, data: Path = typer.Option(Path("data")),
           metrics: Path = typer.Option(Path("metrics")), plots: Path = typer.Option(Path("plots")),
           out: Path = typer.Option(Path("reports")),
           no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip the MLflow run links"),
           links_only: bool = typer.Option(False, help="only rewrite reports/mlflow_runs.md")
           ) -> None:
    """FGPO vs GRPO across all settings -> reports/summary.md, figures, metrics/summary.json."""
    from fgpo.stages import report as report_stage
    overall = report_stage.main(params, data, metrics, plots, out, tracking=not no_mlflow,
                         links_only=links_only)
    typer.echo(report_stage.outcome_line(overall))
    typer.echo(f"wrote {out / 'mlflow_runs.md'}" if links_only else
               f"wrote {out / 'summary.md'}, {out / 'figures'}, {metrics / 'summary.json'}")


@command(context_settings=NUMBERS)
def cost_table(reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
               cost: float = typer.Argument(..., help="per-tool cost, one of ablation.tool_costs"),
               params: Path = PARAMS, data: Path = typer.Option(Path("data"))) -> None:
    """Ablation: the setting's reward table at another tool cost, with no reasoner call."""
    from fgpo.stages import cost_table as cost_table_stage
    typer.echo(f"wrote {cost_table_stage.main(reasoner, benchmark, cost, params, data)}")


@command(context_settings=NUMBERS)
def ablate(reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
           cost: float = typer.Argument(..., help="per-tool cost, one of ablation.tool_costs"),
           params: Path = PARAMS, data: Path = typer.Option(Path("data")),
           no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip MLflow logging")
           ) -> None:
    """Ablation: every ablation estimator on one setting at one tool cost (the train stage's
    protocol)."""
    from fgpo.stages import ablate as ablate_stage
    summaries = ablate_stage.main(reasoner, benchmark, cost, params, data,
                                  tracking=not no_mlflow)
    echo(ablate_stage.outcome(summaries))


@command()
def ablation_report(params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                    metrics: Path = typer.Option(Path("metrics")),
                    plots: Path = typer.Option(Path("plots")),
                    out: Path = typer.Option(Path("reports"))) -> None:
    """Ablation: the estimator table, the FGPO - GRPO gap decomposition and the tool-cost
    frontier -> reports/ablation.md, its figures, metrics/ablation_summary.json."""
    from fgpo.stages import ablation_report as ablation_report_stage
    result = ablation_report_stage.main(params, data, metrics, plots, out)
    echo(ablation_report_stage.outcome(result))
    typer.echo(f"wrote {out / 'ablation.md'}, {metrics / 'ablation_summary.json'}")


@command("frontier-tools")
def frontier_tools(k: int = typer.Argument(..., help="tool count, one of frontier.ks"),
                   benchmark: str = typer.Argument(...), params: Path = PARAMS,
                   data: Path = typer.Option(Path("data"))) -> None:
    """Frontier: the tool outputs of a benchmark at K tools (the first K of
    frontier.tool_order) -> data/frontier/K<k>/tool_outputs/<benchmark>.parquet."""
    from fgpo.stages import frontier_tools as stage
    typer.echo(f"wrote {stage.main(k, benchmark, params, data)}")


@command("frontier-table")
def frontier_table(k: int = typer.Argument(..., help="tool count, one of frontier.ks"),
                   reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
                   params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                   no_mlflow: bool = typer.Option(False, "--no-mlflow",
                                                  help="skip logging the build as an MLflow run")
                   ) -> None:
    """Frontier: the reward table of a setting at K tools (resumable, like reward-table)."""
    from fgpo.stages import frontier_table as stage
    typer.echo(f"wrote {stage.main(k, reasoner, benchmark, params, data, not no_mlflow)}")


@command("frontier-train")
def frontier_train(k: int = typer.Argument(..., help="tool count: frontier.ks or the main K"),
                   reasoner: str = typer.Argument(...), benchmark: str = typer.Argument(...),
                   params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                   no_mlflow: bool = typer.Option(False, "--no-mlflow", help="skip MLflow logging")
                   ) -> None:
    """Frontier: the exact estimator on each sub-table fraction and the sampled ones on the
    whole split, at K tools; their validation points tested after training."""
    from fgpo.stages import frontier_train as stage
    echo(stage.outcome(stage.main(k, reasoner, benchmark, params, data, not no_mlflow)))


@command("frontier-report")
def frontier_report(params: Path = PARAMS, data: Path = typer.Option(Path("data")),
                    metrics: Path = typer.Option(Path("metrics")),
                    out: Path = typer.Option(Path("reports"))) -> None:
    """Frontier: accuracy against reasoner calls per K, the crossover table ->
    reports/frontier.md, its figures, metrics/frontier_summary.json."""
    from fgpo.stages import frontier_report as stage
    echo(stage.outcome(stage.main(params, data, metrics, out)))
    typer.echo(f"wrote {out / 'frontier.md'}, {metrics / 'frontier_summary.json'}")


@command()
def readme(params: Path = PARAMS, path: Path = typer.Option(Path("README.md")),
           bench_dir: Path = typer.Option(Path("data/benchmarks"))) -> None:
    """Regenerate the README's generated tables from the pipeline's outputs."""
    from fgpo.stages import readme as readme_stage
    typer.echo(f"updated {readme_stage.main(path, params, bench_dir)}")


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
