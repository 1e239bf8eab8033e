"""dvc.yaml declares the code each stage runs: the module closure of its entry
(`fgpo.tracking.code.stage_closure`, the rule the train stage's runs cache is keyed by too).

A dependency path covers a module when it is the module's file or a folder above it. Every
module of the closure must be covered, and every code path a stage declares must hold only
modules of its closure (so editing a module reruns exactly the stages that import it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fgpo.tracking.code import module_file, stage_closure

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "fgpo"

PIPELINES = ["dvc.yaml", "ablation/dvc.yaml", "frontier/dvc.yaml"]  # main, ablation, frontier


def _stages() -> dict[str, dict]:
    """Every stage of both pipelines (the ablation's run from the repository root, wdir: ..,
    so their paths read like the main pipeline's)."""
    out = {}
    for pipeline in PIPELINES:
        raw = yaml.safe_load((REPO / pipeline).read_text())["stages"]
        for name, spec in raw.items():
            spec = spec.get("do", spec)
            assert pipeline == "dvc.yaml" or spec.get("wdir") == "..", (pipeline, name)
            out[name] = spec
    return out


def _code_deps(spec: dict) -> list[Path]:
    """The literal code paths a stage declares (an interpolated dep such as `${item.source}` is
    not a path here: DVC fills it in per benchmark, see the prepare tests below)."""
    return [REPO / d for d in spec.get("deps", []) if d.startswith("src/") and "${" not in d]


def _covered(path: Path, deps: list[Path]) -> bool:
    return any(path == d or d in path.parents for d in deps)


STAGES = sorted(_stages())


def test_every_stage_has_an_entry_module():
    assert STAGES and all(module_file(f"fgpo.stages.{s}") for s in STAGES), STAGES


@pytest.mark.parametrize("stage", STAGES)
def test_stage_deps_cover_its_module_closure(stage):
    deps = _code_deps(_stages()[stage])
    missing = sorted(str(p.relative_to(REPO)) for p in stage_closure(stage)
                     if not _covered(p, deps))
    assert not missing, f"dvc.yaml stage {stage!r} runs code it does not declare: {missing}"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_declares_no_code_it_does_not_run(stage):
    ran = stage_closure(stage)
    extra = []
    for dep in _code_deps(_stages()[stage]):
        files = [dep] if dep.is_file() else sorted(dep.rglob("*.py"))
        assert files, f"{stage}: declared code path {dep} does not exist"
        extra += [str(f.relative_to(REPO)) for f in files if f not in ran]
    assert not extra, f"dvc.yaml stage {stage!r} declares code it never imports: {extra}"


def test_closure_follows_function_level_and_dynamic_imports():
    train = stage_closure("train")
    assert PACKAGE / "train" / "overrides.py" in train  # imported by the stage module
    assert PACKAGE / "benchmarks" / "genomeqa.py" in stage_closure("prepare")  # import_module
    assert PACKAGE / "sweep" / "study.py" not in train  # the hand-off is a file, not an import


def test_train_declares_the_sweep_hand_off_as_params():
    from fgpo.train.overrides import BEST_PARAMS

    params = _stages()["train"]["params"]
    files = {next(iter(p)) if isinstance(p, dict) else p for p in params}
    assert str(BEST_PARAMS) in files  # the whole file: every method's entry
    assert (REPO / BEST_PARAMS).is_file()  # committed, so `dvc repro` works on a fresh clone


# ---- the prepare stage tracks each declared benchmark's source -------------------------------------

def test_code_deps_skip_interpolated_deps():
    assert _code_deps({"deps": ["src/fgpo/cli.py", "${item.source}", "src/${item.x}.py",
                                "data/a.parquet"]}) == [REPO / "src/fgpo/cli.py"]


def test_prepare_lists_each_benchmarks_source_as_a_dep():
    """`${item.source}` is a dep of every prepare@<name> (foreach over the `prepare:` section),
    so an imported collection's files, and a generated benchmark's generator module, rerun it."""
    raw = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["prepare"]
    assert raw["foreach"] == "${prepare}"
    assert "${item.source}" in raw["do"]["deps"]


def test_generated_sources_are_their_generator_modules_in_the_prepare_closure():
    from fgpo.benchmarks.config import BenchmarkConfig, load_prepare

    declared = load_prepare(REPO / "params.yaml").benchmarks
    generated = {n: b for n, b in declared.items() if isinstance(b, BenchmarkConfig)}
    assert generated  # the offline default declares generated benchmarks
    ran, deps = stage_closure("prepare"), _code_deps(_stages()["prepare"])
    for name, cfg in generated.items():
        assert cfg.source == f"src/fgpo/benchmarks/{name}.py", (name, cfg.source)
        assert REPO / cfg.source in ran, f"{cfg.source} is not run by the prepare stage"
        assert _covered(REPO / cfg.source, deps)


def test_dvc_resolves_the_source_dep_of_an_imported_collection(tmp_path):
    """DVC's own resolver: each prepare@<name> gets that declaration's source as a dep."""
    import types

    parsing = pytest.importorskip("dvc.parsing")
    from dvc.fs import LocalFileSystem

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["prepare"]["my_promoters"] = {
        "kind": "imported", "source": "../data/promoters", "positives": "p.fa",
        "negatives": "n.fa", "family": "promoter"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    dvc_yaml = yaml.safe_load((REPO / "dvc.yaml").read_text())
    repo = types.SimpleNamespace(fs=LocalFileSystem(), config={})
    resolver = parsing.DataResolver(repo, str(tmp_path),
                                    {"stages": {"prepare": dvc_yaml["stages"]["prepare"]}})
    stages = resolver.resolve()["stages"]
    assert set(stages) == {f"prepare@{n}" for n in params["prepare"]}
    assert "../data/promoters" in stages["prepare@my_promoters"]["deps"]
    assert "src/fgpo/benchmarks/genomeqa.py" in stages["prepare@genomeqa"]["deps"]


@pytest.mark.parametrize("stage", ["table_stats", "train", "report"])
def test_table_readers_do_not_run_the_reasoners(stage):
    """Reading a table needs no reasoner: editing a backend (say the OpenAI client) reruns the
    table builds only, never the thirty training runs or the report."""
    reasoners = PACKAGE / "reasoners"
    assert not [p for p in stage_closure(stage) if reasoners in p.parents]
    assert PACKAGE / "rewards" / "build.py" not in stage_closure(stage)
    assert not any(d == reasoners or reasoners in d.parents for d in _code_deps(_stages()[stage]))


def test_training_depends_on_neither_the_report_nor_any_tool_module():
    """A figure tweak or a tool's new version reruns the tables and the report, never training:
    the train stage reads a table by its tool names (the table's build checks the tools)."""
    for stage in ("train", "sweep", "tune"):
        ran = stage_closure(stage)
        assert not [p for p in ran if PACKAGE / "report" in p.parents], stage
        tools = {p.name for p in ran if PACKAGE / "tools" in p.parents}
        assert tools <= {"__init__.py", "subsets.py"}, (stage, tools)


def test_the_runs_cache_digest_moves_exactly_with_the_declared_code(tmp_path, monkeypatch):
    """One rule for "the code changed": the training stages' runs are keyed by the digest of the
    training code's module closure, which dvc.yaml declares for both of them, so editing a module
    outside it (a figure) reuses every finished run and editing one inside (a loss) retrains,
    as `dvc repro` reruns the stages."""
    import shutil

    from fgpo.tracking import code

    training = code.closure("fgpo.runs.setting")
    for stage in ("train", "ablate"):
        assert training <= stage_closure(stage), stage
    shutil.copytree(PACKAGE, tmp_path / "fgpo", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(code, "SRC", tmp_path)
    before = code.module_digest("fgpo.runs.setting")
    with (tmp_path / "fgpo" / "report" / "figures.py").open("a") as fh:
        fh.write("# a figure tweak\n")
    assert code.module_digest("fgpo.runs.setting") == before
    with (tmp_path / "fgpo" / "train" / "fgpo.py").open("a") as fh:
        fh.write("# a loss edit\n")
    assert code.module_digest("fgpo.runs.setting") != before


def test_no_stage_imports_another_stage():
    """The stage floor is thin: each stage module reads params and calls the library."""
    for stage in STAGES:
        mine = module_file(f"fgpo.stages.{stage}")
        others = [p for p in stage_closure(stage) if p.parent == PACKAGE / "stages"
                  and p.name not in ("__init__.py", mine.name)]
        assert not others, (stage, others)
