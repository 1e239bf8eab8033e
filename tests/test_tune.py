"""Equal-budget tuning per method (`fgpo tune`): the config's rules, equal trial counts and
budgets for every method, a resumed study that repeats no finished trial, the chosen values
reaching the train stage's config, and the tuned file as a DVC params file of `train`."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

from fgpo.errors import InputError
from fgpo.sweep.tune import TuneConfig, chosen, complete, run_tune, trials_table
from fgpo.train.overrides import read_tuned, write_tuned

sys.path.insert(0, str(Path(__file__).parent))
from test_training import synthetic_data, tiny_backbone, tiny_cfg  # noqa: E402,F401

REPO = Path(__file__).resolve().parents[1]
SHARED = {"learning_rate": {"type": "float", "low": 3e-3, "high": 3e-2, "log": True},
          "head_lr_mult": {"type": "float", "low": 1.0, "high": 10.0},
          "beta": {"type": "float", "low": 1e-3, "high": 1e-1, "log": True}}


def tune_config(**kw) -> TuneConfig:
    # one epoch, one validation point, two "settings" (two copies of the synthetic table):
    # the code paths in seconds per trial
    base = dict(settings=["synthetic/a", "synthetic/b"], n_trials=2, epochs=1,
                evals_per_epoch=1, n_startup_trials=1,
                space={"fgpo": SHARED, "grpo": {**SHARED, "grpo.group_size":
                                                {"type": "categorical", "choices": [2, 4]}}})
    base.update(kw)
    return TuneConfig(**base)


def two_settings() -> dict:
    return {"synthetic/a": synthetic_data(), "synthetic/b": synthetic_data()}


def test_params_yaml_tune_section_loads_and_every_method_searches_the_shared_settings():
    from fgpo.config import load_section
    cfg = load_section(TuneConfig, "tune", REPO / "params.yaml")
    from fgpo.train.config import TrainConfig
    from fgpo.train.estimators import ESTIMATORS
    assert set(cfg.methods) == set(ESTIMATORS)      # every estimator its own study
    # the same dimensions for every one, each range the shared one or a wider one (where an
    # estimator's choice sat at a shared bound): equal trials are at least as hard a search
    spaces = {m: {d.name: (d.low, d.high, d.log) for d in cfg.dimensions(m)}
              for m in cfg.methods}
    shared = spaces["fgpo"]
    assert set(shared) == {"learning_rate", "head_lr_mult", "beta"}
    for space in spaces.values():
        assert set(space) == set(shared)
        assert all(space[k][0] <= shared[k][0] and space[k][1] >= shared[k][1]
                   and space[k][2] == shared[k][2] for k in shared)
    assert [m for m in cfg.methods if spaces[m] != shared] == ["rloo", "fgpo_std"]
    # trials train with a seed none of the evaluation runs use
    assert cfg.train_seed not in load_section(TrainConfig, "train", REPO / "params.yaml").seeds


@pytest.mark.parametrize("change, field", [
    ({"space": {"fgpo": {"learning_rate": SHARED["learning_rate"]}, "grpo": SHARED}},
     "tune.space.fgpo"),                                     # beta, head_lr_mult missing
    ({"space": {"fgpo": {**SHARED, "grpo.clip_eps": {"type": "float", "low": 0.1,
                                                      "high": 0.2}}, "grpo": SHARED}},
     "tune.space.fgpo"),                                     # another method's setting
    ({"space": {"fgpo": SHARED}}, "tune.space.grpo"),          # no space for a tuned method
    ({"settings": ["careful_expert-genomeqa"]}, "tune.settings"),
    ({"methods": ["fgpo", "ppo"]}, "tune.methods"),
    ({"n_trials": 0}, "tune.n_trials"),
    ({"plateau_trials": 0}, "tune.plateau_trials"),
    ({"n_trials": "2"}, "tune.n_trials"),                     # a string: was a TypeError
    ({"n_trials": 2.5}, "tune.n_trials"),
    ({"epochs": -1}, "tune.epochs"),
    ({"n_startup_trials": -1}, "tune.n_startup_trials"),
    ({"train_seed": -1}, "tune.train_seed"),
    ({"workers": 0}, "tune.workers"),
    ({"space": {"fgpo": {**SHARED, "beta": {"type": "float", "low": 0.1, "high": 0.01}},
                "grpo": SHARED}}, "tune.space.fgpo.beta"),  # empty range, named in full
])
def test_bad_tune_configs_are_refused_with_the_field(change, field):
    with pytest.raises(InputError) as exc:
        tune_config(**change)
    assert exc.value.field == field, str(exc.value)


def test_every_method_gets_the_same_trials_and_budget_and_a_resume_repeats_nothing(
        tiny_backbone, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns.db'}")
    monkeypatch.chdir(tmp_path)  # the store's artifacts go under the working directory
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    cfg, data = tune_config(), two_settings()
    studies = {m: run_tune(m, tiny_cfg(tiny_backbone), cfg, data, storage)
               for m in ("fgpo", "grpo")}
    rows = trials_table(studies)
    for m, study in studies.items():
        assert len(complete(study)) == 2 and len(study.trials) == 2
    # the same data visits per trial for both: 1 epoch x both settings' train questions
    n_train = sum(len(d.rows("train")) for d in data.values())
    assert {r["question_visits"] for r in rows} == {float(n_train)}
    grpo_evals = {r["reward_evals"] for r in rows if r["method"] == "grpo"}
    assert grpo_evals <= {2.0 * n_train, 4.0 * n_train}   # G draws per visit, G in {2, 4}
    assert set(chosen(studies, cfg)) == {"fgpo", "grpo"}
    # MLflow: one parent per study, its trials nested under it
    client = MlflowClient()
    exp = client.get_experiment_by_name("fgpo-tune")
    runs = client.search_runs([exp.experiment_id])
    parents = {r.info.run_id: r for r in runs if r.data.tags.get("kind") == "study"}
    assert {r.data.tags["method"] for r in parents.values()} == {"fgpo", "grpo"}
    trials = [r for r in runs if r.data.tags.get("kind") == "trial"]
    assert len(trials) == 4 and all(r.data.tags["mlflow.parentRunId"] in parents
                                    for r in trials)
    # resume with a larger budget of trials: the two finished ones stay, one more runs
    before = {(t.number, t.datetime_complete) for t in studies["fgpo"].trials}
    again = run_tune("fgpo", tiny_cfg(tiny_backbone), tune_config(n_trials=3), data, storage)
    assert len(complete(again)) == 3 and len(again.trials) == 3
    assert before <= {(t.number, t.datetime_complete) for t in again.trials}
    # and a study at its count runs nothing
    same = run_tune("fgpo", tiny_cfg(tiny_backbone), tune_config(n_trials=3), data, storage)
    assert len(same.trials) == 3


def test_one_method_at_a_time_and_the_last_study_to_finish_writes_the_tuned_file(
        tiny_backbone, tmp_path, monkeypatch):
    """`fgpo tune --method M` (a study per background job): the first method's study alone
    leaves tune/tuned.yaml as it was; the second's, completing the last study, writes both
    methods' values; a method outside tune.methods is refused, naming the field."""
    import types

    from fgpo.stages import tune as stage
    from fgpo.train.config import TrainConfig

    cfg, data = tune_config(), two_settings()
    sections = {TuneConfig: cfg, TrainConfig: tiny_cfg(tiny_backbone)}
    monkeypatch.setattr(stage, "load_section", lambda cls, name, params: sections[cls])
    monkeypatch.setattr(stage, "tool_names", lambda params: data["synthetic/a"].tool_names)
    monkeypatch.setattr(stage, "load_run_data",
                        lambda reasoner, benchmark, names, root: data[f"{reasoner}/{benchmark}"])
    monkeypatch.setattr(stage, "require_trainable", lambda *a, **k: {})
    monkeypatch.setattr(stage, "resolve",
                        lambda base, method, params, upto: types.SimpleNamespace(config=base))
    storage, tuned, trials = f"sqlite:///{tmp_path / 't.db'}", tmp_path / "tuned.yaml", \
        tmp_path / "trials.csv"
    tuned.write_text("before\n")
    run = dict(storage=storage, tuned=tuned, trials=trials, tracking=False)
    with pytest.raises(InputError, match="tune.methods"):
        stage.main(tmp_path / "params.yaml", tmp_path, methods=["dapo_ds"], **run)
    first = stage.main(tmp_path / "params.yaml", tmp_path, methods=["grpo"], **run)
    assert len(complete(first["grpo"])) == 2 and "fgpo" not in first
    assert tuned.read_text() == "before\n"  # fgpo's study has not run
    said = stage.outcome(first, tmp_path / "params.yaml", tuned)
    assert "chosen" not in " ".join(said)  # the file holds nothing of this study yet
    assert said[-1].startswith(f"{tuned} waits for the studies of fgpo")
    assert "too few trials to tell" in said[0]  # 2 trials, plateau_trials 12
    both = stage.main(tmp_path / "params.yaml", tmp_path, methods=["fgpo"], **run)
    assert {m: len(complete(s)) for m, s in both.items()} == {"fgpo": 2, "grpo": 2}
    written = yaml.safe_load(tuned.read_text())
    assert {m for m, v in written.items() if v} == {"fgpo", "grpo"}
    assert all(read_tuned(m, tuned) == chosen(both, cfg)[m] for m in ("fgpo", "grpo"))
    assert set(pd.read_csv(trials)["method"]) == {"fgpo", "grpo"}
    # plateau_trials 1: the line says what the second trial added to the first's objective
    sections[TuneConfig] = replace(cfg, plateau_trials=1)
    said = stage.outcome(both, tmp_path / "params.yaml", tuned)
    v0, v1 = (t.value for t in sorted(complete(both["fgpo"]), key=lambda t: t.number))
    gain = max(v0, v1) - v0
    fgpo_line = next(line for line in said if line.startswith("fgpo:"))
    assert f"the last 1 trials added {gain:+.4f}" in fgpo_line
    assert ("(stopped improving)" in fgpo_line) == (gain < cfg.tie_tolerance)
    assert f"chosen: {read_tuned('fgpo', tuned)}" in fgpo_line and said[-1].startswith("->")


def test_a_trial_seed_among_the_evaluation_seeds_is_refused(tiny_backbone, tmp_path):
    with pytest.raises(InputError, match="evaluated on the runs they were chosen on") as exc:
        run_tune("fgpo", tiny_cfg(tiny_backbone, seeds=[0, 100]), tune_config(train_seed=100),
                 two_settings(), f"sqlite:///{tmp_path / 'tune.db'}", tracking=False)
    assert exc.value.field == "tune.train_seed"


def test_a_study_with_another_budget_is_refused(tiny_backbone, tmp_path):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    data = two_settings()
    run_tune("fgpo", tiny_cfg(tiny_backbone), tune_config(n_trials=1), data, storage,
             tracking=False)
    with pytest.raises(InputError, match="another space or budget"):
        run_tune("fgpo", tiny_cfg(tiny_backbone), tune_config(n_trials=1, epochs=2), data,
                 storage, tracking=False)


def test_tuned_values_reach_the_train_config(tmp_path):
    from fgpo.train.overrides import resolve
    from fgpo.train.config import TrainConfig
    tuned = tmp_path / "tuned.yaml"
    write_tuned({"grpo": {"learning_rate": 0.004, "grpo.group_size": 4}}, tuned)
    assert yaml.safe_load(tuned.read_text())["fgpo"] == {}   # every estimator has its entry
    assert read_tuned("grpo", tuned) == {"learning_rate": 0.004, "grpo.group_size": 4}
    base = TrainConfig()
    grpo = resolve(base, "grpo", REPO / "params.yaml", upto="tuned", tuned=tuned).config
    fgpo = resolve(base, "fgpo", REPO / "params.yaml", upto="tuned", tuned=tuned).config
    assert (grpo.learning_rate, grpo.grpo.group_size) == (0.004, 4)
    assert fgpo == base   # untuned: params.yaml's train section as is
    assert read_tuned("fgpo", tmp_path / "absent.yaml") == {}   # no tuned file: untuned
    (tmp_path / "bad.yaml").write_text("fgpo: 0.1\n")
    with pytest.raises(InputError, match="method ->"):
        read_tuned("fgpo", tmp_path / "bad.yaml")


def test_an_untuned_estimator_starts_from_its_tuned_relative(tmp_path):
    """dr_grpo has no study of its own: it takes GRPO's values, GRPO's section renamed to its
    own; a value of its own wins; fgpo_std has FGPO's shared values (no section to rename)."""
    from fgpo.train.overrides import resolve
    from fgpo.train.config import TrainConfig
    from fgpo.train.overrides import tuned_source
    tuned = tmp_path / "tuned.yaml"
    write_tuned({"grpo": {"learning_rate": 0.004, "grpo.group_size": 4, "grpo.clip_eps": 0.1},
                 "fgpo": {"beta": 0.03}}, tuned)
    assert read_tuned("dr_grpo", tuned) == {"learning_rate": 0.004, "dr_grpo.group_size": 4,
                                            "dr_grpo.clip_eps": 0.1}
    dr = resolve(TrainConfig(), "dr_grpo", REPO / "params.yaml", upto="tuned", tuned=tuned).config
    assert (dr.learning_rate, dr.dr_grpo.group_size, dr.dr_grpo.clip_eps) == (0.004, 4, 0.1)
    assert dr.grpo == TrainConfig().grpo          # GRPO's own section is not touched
    assert read_tuned("fgpo_std", tuned) == {"beta": 0.03}
    assert [tuned_source(m, tuned) for m in ("grpo", "dr_grpo", "fgpo_std")] == [
        "tuned", "from grpo", "from fgpo"]
    write_tuned({"grpo": {"learning_rate": 0.004}, "dr_grpo": {"learning_rate": 0.002}}, tuned)
    assert read_tuned("dr_grpo", tuned) == {"learning_rate": 0.002}
    assert tuned_source("dr_grpo", tuned) == "tuned"
    write_tuned({}, tuned)
    assert read_tuned("rloo", tuned) == {} and tuned_source("rloo", tuned) == "untuned"


def test_the_committed_tuned_file_is_a_params_file_of_train():
    from fgpo.train.overrides import TUNED_PARAMS
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    files = {next(iter(p)) if isinstance(p, dict) else p for p in stages["train"]["params"]}
    assert str(TUNED_PARAMS) in files
    committed = yaml.safe_load((REPO / TUNED_PARAMS).read_text())
    assert set(committed) >= {"fgpo", "grpo"}


def test_a_failed_trial_is_retried_not_counted(tiny_backbone, tmp_path, monkeypatch):
    import fgpo.sweep.tune as tune
    real, calls = tune.trial_score, []

    def flaky(*args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a trial that crashes")
        return real(*args, **kw)
    monkeypatch.setattr(tune, "trial_score", flaky)
    study = run_tune("fgpo", tiny_cfg(tiny_backbone), tune_config(), two_settings(),
                     f"sqlite:///{tmp_path / 'tune.db'}", tracking=False)
    states = [t.state.name for t in study.trials]
    assert states == ["FAIL", "COMPLETE", "COMPLETE"] and len(calls) == 3


def test_tune_workers_share_a_study_through_the_sweeps_engine(tmp_path, monkeypatch):
    """Tuning is a use of the study engine, as a sweep is: the trial-seeded sampler (trial n
    draws from seed + n, so workers started together on one study never propose alike), the
    creator/joiner handshake, and the storage resolved in the library (--storage, then
    $FGPO_TUNE_STORAGE, then tune.storage)."""
    from fgpo.sweep.engine import READY, TrialSeededTPE, parent_run
    from fgpo.sweep.storage import open_storage
    from fgpo.sweep.tune import STORAGE_ENV, open_tune_study, resolve_storage

    cfg = tune_config()
    storage = open_storage(f"sqlite:///{tmp_path / 't.db'}", "tune.storage")
    first, created = open_tune_study("fgpo", storage, cfg.dimensions("fgpo"), cfg)
    assert created and isinstance(first.sampler, TrialSeededTPE)
    parent_run(first, created, "unused", "tune-fgpo", {}, {}, tracking=False)
    assert READY in first.user_attrs  # set up: a joiner goes on at once
    second, created = open_tune_study("fgpo", storage, cfg.dimensions("fgpo"), cfg)
    assert not created and isinstance(second.sampler, TrialSeededTPE)
    with pytest.raises(InputError, match="another space or budget"):
        open_tune_study("fgpo", storage, cfg.dimensions("fgpo"), tune_config(epochs=2))
    monkeypatch.delenv(STORAGE_ENV, raising=False)
    assert resolve_storage(None, cfg) == cfg.storage
    monkeypatch.setenv(STORAGE_ENV, "postgresql://u@h/env")
    assert resolve_storage(None, cfg) == "postgresql://u@h/env"
    assert resolve_storage("sqlite:///cli.db", cfg) == "sqlite:///cli.db"


def test_the_chosen_trial_is_the_one_farthest_inside_the_ranges_among_those_tied():
    """Trials within tune.tie_tolerance of the best are tied (one seed each: smaller
    differences are noise); the chosen one lies farthest inside the ranges, by hand."""
    import optuna
    from fgpo.sweep.space import parse_space
    from fgpo.sweep.tune import inside, pick
    dims = parse_space({"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-1,
                                          "log": True},
                        "beta": {"type": "float", "low": 0.0, "high": 1.0}}, "tune.space.x")
    # log10 fractions of the learning rate's 3 decades: 1.9e-4 -> 0.093, 4.6e-4 -> 0.221
    assert inside({"learning_rate": 1e-3, "beta": 0.5}, dims) == pytest.approx(1 / 3)
    assert inside({"learning_rate": 1.9e-4, "beta": 0.5}, dims) == pytest.approx(
        np.log10(1.9) / 3, abs=1e-9)

    def trial(value, lr, beta):
        return optuna.trial.create_trial(
            params={"learning_rate": lr, "beta": beta}, value=value,
            distributions={"learning_rate": optuna.distributions.FloatDistribution(
                1e-4, 1e-1, log=True), "beta": optuna.distributions.FloatDistribution(0, 1)})
    trials = [trial(0.8714, 1.9e-4, 0.5),    # the best, its learning rate at a bound
              trial(0.8705, 4.6e-4, 0.5),    # 0.0009 lower: tied, and inside the ranges
              trial(0.8600, 1e-3, 0.5)]      # farther inside, but clearly worse
    assert pick(trials, dims, tolerance=0.002) is trials[1]
    assert pick(trials, dims, tolerance=0.0) is trials[0]     # no tolerance: the best
    with pytest.raises(InputError):
        tune_config(tie_tolerance=-0.1)


def test_tuned_values_survive_the_round_trip_through_dvc_lock(tmp_path):
    """DVC keeps a params file's values in dvc.lock through ruamel.yaml, whose repr loses the
    last digit of some floats in exponent form: such a value would leave every train stage
    stale after its own `dvc repro`. The written file's values each survive that round trip,
    a value that already does is written whole, and the rounding is below 1e-13 relative."""
    import io

    from ruamel.yaml import YAML

    lossy, whole = 7.813413285645664e-05, 0.00046342505832948827
    ruamel = YAML()  # round-trip mode: DVC reads params files and writes dvc.lock so

    def through_the_lock(text: str) -> dict:
        lock = io.StringIO()
        ruamel.dump(ruamel.load(text), lock)
        return ruamel.load(lock.getvalue())

    assert through_the_lock(f"v: {lossy!r}\n")["v"] != lossy  # the trap, as ruamel stands
    from fgpo.sweep.handoff import dvc_stable

    path = tmp_path / "tuned.yaml"  # as `fgpo tune` writes it
    write_tuned(dvc_stable({"fgpo_std": {"beta": lossy, "learning_rate": whole}}), path)
    values = yaml.safe_load(path.read_text())["fgpo_std"]
    assert values["learning_rate"] == whole
    assert values["beta"] != lossy and abs(values["beta"] / lossy - 1) < 1e-13
    assert through_the_lock(path.read_text())["fgpo_std"] == values
