"""The comparison report: budgets on hand-made curves, the table layout against golden markdown,
figures drawn from a small fixture of runs, and the README's results matching the report."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from fgpo.report import figures
from fgpo.report.config import ReportConfig
from fgpo.report.data import SettingData, SplitTable, mean_curve, subset_label
from fgpo.report.markdown import render_summary, sections, settings_table
from fgpo.report.numbers import (budget_to_target, family_accuracy, oracle_tools, outcome,
                                 overall_numbers, setting_numbers, subset_choice)

REPO = Path(__file__).resolve().parents[1]


def curve(val: list[float | None], evals: list[float], seen: list[float],
          zero: list[float | None] | None = None, seed: int = 0, unique: list[float] | None = None
          ) -> pd.DataFrame:
    """A train-stage curve (plots/train CSV columns); step i is row i."""
    n = len(val)
    return pd.DataFrame({
        "step": range(n), "val_accuracy": [np.nan if v is None else v for v in val],
        "train_reward_evals": evals, "train_reward_evals_unique": unique or evals,
        "train_questions_seen": seen,
        "train_zero_signal_frac": [np.nan if z is None else z for z in (zero or [None] * n)],
        "seed": seed})


# ---- budget to a target accuracy -------------------------------------------------------------

def test_budget_to_target_takes_the_first_validation_point_at_or_above_target():
    c = mean_curve(curve([0.5, None, 0.6, None, 0.7, 0.65], [0, 64, 128, 192, 256, 320],
                         [0, 4, 8, 12, 16, 20]))
    assert budget_to_target(c, 0.7, "train_reward_evals") == 256
    assert budget_to_target(c, 0.65, "train_reward_evals") == 256   # 0.6 at 128 is below
    assert budget_to_target(c, 0.6, "train_reward_evals") == 128
    assert budget_to_target(c, 0.5, "train_questions_seen") == 0     # the starting point
    assert budget_to_target(c, 0.71, "train_reward_evals") is None   # never reached


def test_budget_to_target_averages_seeds_per_step_first():
    # seed 0 reaches 0.8 at step 1, seed 1 only at step 2: the mean curve 0.7, 0.8 at steps 1, 2.
    two = pd.concat([curve([0.5, 0.8, 0.8], [0, 10, 20], [0, 1, 2], seed=0),
                     curve([0.5, 0.6, 0.8], [0, 30, 40], [0, 1, 2], seed=1)])
    c = mean_curve(two)
    assert c["val_accuracy"].tolist() == pytest.approx([0.5, 0.7, 0.8])
    assert budget_to_target(c, 0.8, "train_reward_evals") == 30.0   # mean of 20 and 40
    assert budget_to_target(c, 0.7, "train_reward_evals") == 20.0   # mean of 10 and 30


def test_outcome_uses_margin_or_seed_spread():
    assert outcome(0.02, 0.0, 0.005) == "win"
    assert outcome(-0.02, 0.0, 0.005) == "loss"
    assert outcome(0.004, 0.0, 0.005) == "tie"
    assert outcome(0.02, 0.03, 0.005) == "tie"     # within the spread over seeds


def test_oracle_tools_takes_the_fewest_tools_among_best_subsets():
    n_tools = np.array([0, 1, 1, 2])
    reward = np.array([[0.0, 0.99, 0.99, 0.98],    # best: masks 1 and 2 -> 1 tool
                       [1.0, 0.99, 0.99, 0.98],    # best: no tools -> 0
                       [0.0, 0.0, 0.0, 0.98]])     # only all tools -> 2
    assert oracle_tools(reward, n_tools) == pytest.approx(1.0)


# ---- a small fixture of runs -----------------------------------------------------------------

N_TOOLS = np.array([0, 1, 1, 2])   # K = 2


def table() -> SplitTable:
    correct = np.array([[0, 1, 0, 1], [0, 1, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1]], dtype=float)
    return SplitTable(families=np.array(["alpha", "alpha", "beta", "beta"]), correct=correct,
                     reward=correct - 0.01 * N_TOOLS, n_tools=N_TOOLS, best_fixed_mask=3)


def metrics(acc: float, tools: float, zero: float, std: float = 0.0) -> dict:
    return {"test/accuracy": acc, "test/accuracy_std": std, "test/tools_per_question": tools,
            "test/zero_signal_frac": zero, "seeds": [0], "budget/table_cells_train": 48.0}


# the table-stats baselines of `table()`, by hand: mask 0 -> [0,0,1,0], mask 3 -> all correct,
# the uniform mean over masks (1 + 2 + 2 + 4) / 16, best fixed = mask 3, per-question max = 1
BASELINES = {f"test/{k}_accuracy": v for k, v in (
    ("no_tools", 0.25), ("all_tools", 1.0), ("random", 0.5625), ("best_fixed", 1.0),
    ("oracle", 1.0))}


def selections(masks: list[int]) -> pd.DataFrame:
    t = table()
    return pd.DataFrame({"family": t.families, "mask": masks,
                         "correct": t.correct[np.arange(4), masks], "seed": 0})


def setting(reasoner: str, benchmark: str, fgpo_acc: float, grpo_acc: float) -> SettingData:
    # FGPO: val 0.25 -> 0.75 at step 2 having drawn 6 questions; GRPO: 0.25 -> 0.5 at step 2
    # after 32 evaluations, 0.75 never. Common target 0.5: FGPO at step 1 (4 rows seen).
    fg = curve([0.25, 0.5, 0.75], [48, 48, 48], [0, 4, 6], [None, 0.0, 0.0])
    gr = curve([0.25, 0.25, 0.5], [0, 16, 32], [0, 2, 4], [None, 0.25, 0.75],
               unique=[0, 12, 20])
    return SettingData(
        reasoner=reasoner, benchmark=benchmark,
        metrics={"fgpo": metrics(fgpo_acc, 1.5, 0.10), "grpo": metrics(grpo_acc, 0.5, 0.40)},
        curves={"fgpo": fg, "grpo": gr},
        selections={"fgpo": selections([1, 1, 2, 3]), "grpo": selections([0, 1, 0, 0])},
        table_stats={"table/uniform_zero_signal_frac": 0.002,
                     "table/constant_reward_row_frac": 0.0, "table/group_size": 8,
                     **BASELINES},  # the report reads baselines from table-stats, not train
        test=table())


@pytest.fixture
def fixture_settings() -> list[SettingData]:
    return [setting("strong", "toyqa", 0.875, 0.75), setting("weak", "toyqa", 0.5, 0.502)]


def test_setting_numbers_from_the_fixture(fixture_settings):
    r = setting_numbers(fixture_settings[0], ReportConfig())
    assert r["diff/test/accuracy"] == pytest.approx(0.125) and r["outcome"] == "win"
    assert r["target/val_accuracy"] == 0.5 and r["target/informative"]
    assert (r["target/fgpo_step"], r["target/grpo_step"]) == (1, 2)
    assert r["target/fgpo_rows_seen_cells"] == 4 * 4          # 4 questions x 2^2 subsets
    assert r["target/grpo_reward_evals"] == 32 and r["target/grpo_reward_evals_unique"] == 20
    assert r["target/grpo_over_fgpo_table"] == pytest.approx(32 / 48)
    assert r["budget/fgpo_rows_seen_cells"] == 24 and r["budget/grpo_evals_per_step"] == 16
    assert r["zero_signal/grpo_first_steps"] == pytest.approx(0.5)   # window 10 > 2 steps
    assert r["baseline/best_fixed_tools"] == 2
    assert r["baseline/oracle_tools_per_question"] == pytest.approx((1 + 1 + 0 + 1) / 4)
    tie = setting_numbers(fixture_settings[1], ReportConfig())
    assert tie["outcome"] == "tie"                               # 0.2 points < 0.5 margin


def test_overall_counts_and_means(fixture_settings):
    rows = [setting_numbers(s, ReportConfig()) for s in fixture_settings]
    o = overall_numbers(rows)
    assert (o["overall/fgpo_wins"], o["overall/ties"], o["overall/fgpo_losses"]) == (1, 1, 0)
    assert o["overall/mean_diff"] == pytest.approx((0.125 - 0.002) / 2)
    assert o["budget/end_grpo_over_fgpo"] == pytest.approx(64 / 96)
    assert o["budget/target_grpo_over_fgpo_median"] == pytest.approx(32 / 48)
    assert o["toyqa/grpo/test/tools_per_question"] == 0.5
    assert o["budget/table_over_grpo_evals_per_step"] == 3.0       # 48 cells / 16 per step
    assert o["budget/grpo_reaches_fgpo_best"] == 0                 # 0.5 < FGPO's 0.75


GOLDEN = """\
| reasoner | benchmark | FGPO | GRPO | FGPO − GRPO | outcome | no tools | all tools | random | best fixed | oracle |
|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|
| strong | toyqa | 0.875 | 0.750 | +12.5 pt | win | 0.250 | 1.000 | 0.562 | 1.000 | 1.000 |
| weak | toyqa | 0.500 | 0.502 | -0.2 pt | tie | 0.250 | 1.000 | 0.562 | 1.000 | 1.000 |"""


def test_settings_table_matches_golden_markdown(fixture_settings):
    rows = [setting_numbers(s, ReportConfig()) for s in fixture_settings]
    assert settings_table(rows) == GOLDEN
    linked = settings_table(rows, {"strong/toyqa": "[runs](x)"}).splitlines()
    assert linked[0].endswith("| MLflow |") and linked[2].endswith("| [runs](x) |")
    assert linked[3].endswith("| — |")


def test_seed_spread_is_shown_when_there_are_several_seeds(fixture_settings):
    s = fixture_settings[0]
    s.metrics["fgpo"].update({"seeds": [0, 1, 2], "test/accuracy_std": 0.0125})
    row = setting_numbers(s, ReportConfig())
    assert "| 0.875 ± 0.013 |" in settings_table([row])


def test_family_accuracy_and_subset_choice(fixture_settings):
    s = fixture_settings[0]
    fam = family_accuracy(s).set_index("family")
    # FGPO picks masks 1,1 (both correct) in alpha, 2,3 (both correct) in beta.
    assert fam.loc["alpha", "fgpo"] == 1.0 and fam.loc["beta", "fgpo"] == 1.0
    assert fam.loc["alpha", "grpo"] == 0.5 and fam.loc["beta", "grpo"] == 0.5
    assert fam.loc["alpha", "no_tools"] == 0.0 and fam.loc["beta", "oracle"] == 1.0
    share = subset_choice(s, top=3)
    assert share["grpo"].loc["beta", 0] == 1.0 and share["fgpo"].loc["alpha", 1] == 1.0
    assert list(share["fgpo"].columns) == [0, 1, 2]   # counts 3, 3, 1, 1: ties by mask order
    assert subset_label(0, ["composition", "motif_scan"]) == "none"
    assert subset_label(3, ["composition", "motif_scan"]) == "compo+motif"


def test_figures_are_written_and_not_blank(tmp_path, fixture_settings):
    fam = pd.concat([family_accuracy(s) for s in fixture_settings])
    paths = [
        figures.accuracy_vs_evals(fixture_settings, tmp_path / "a.png"),
        figures.zero_signal_vs_step(fixture_settings, tmp_path / "z.png"),
        figures.family_accuracy(fam, tmp_path / "f.png"),
        figures.subset_heatmaps({"toyqa": subset_choice(fixture_settings[0], 4)},
                                ["composition", "motif_scan"], "strong", tmp_path / "h.png"),
    ]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
        img = plt.imread(p)
        assert img.std() > 0.05   # something was drawn on the white canvas
    assert not list(tmp_path.glob(".*.tmp"))


def test_render_summary_has_every_section(fixture_settings):
    cfg = ReportConfig()
    rows = [setting_numbers(s, cfg) for s in fixture_settings]
    md = render_summary(rows, overall_numbers(rows),
                        pd.concat([family_accuracy(s) for s in fixture_settings]), "- ran",
                        {"A figure": "figures/a.png"}, cfg)
    secs = sections(md)
    assert list(secs) == ["What ran", "Paper vs this run", "Test accuracy per setting",
                          "Reward-evaluation budgets", "Tools per question",
                          "Zero-signal fraction", "Per-family accuracy", "Figures"]
    assert GOLDEN in secs["Test accuracy per setting"]
    assert "FGPO wins 1, ties 1 and loses 0 of 2 settings" in md
    assert "![A figure](figures/a.png)" in secs["Figures"]


# ---- the committed README and report agree ---------------------------------------------------

NUMBER = re.compile(r"[-+]?\d[\d,]*\.?\d*%?")


def test_readme_results_match_the_committed_report():
    summary = REPO / "reports" / "summary.md"
    if not summary.exists():
        pytest.skip("reports/summary.md not built yet (run `make run`)")
    from fgpo.report.readme import results_block
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- fgpo:results -->\n(.*?)<!-- /fgpo:results -->", readme, re.S)
    assert block, "README has no generated results block"
    assert block.group(1).strip() == results_block(summary.read_text()).strip()
    report_numbers = set(NUMBER.findall(summary.read_text()))
    assert set(NUMBER.findall(block.group(1))) <= report_numbers
    for rel in re.findall(r"\]\((reports/figures/[^)]+)\)", block.group(1)):
        assert (REPO / rel).stat().st_size > 0


# ---- bad input ------------------------------------------------------------------------------

def test_report_names_the_missing_input_and_bad_params(tmp_path):
    import yaml

    from fgpo.errors import InputError
    from fgpo.stages import report as stage
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError) as exc:
        stage.main(path, data=tmp_path / "data", metrics=tmp_path / "metrics",
                   plots=tmp_path / "plots", out=tmp_path / "reports", tracking=False)
    assert "careful_expert" in str(exc.value) and "genomeqa" in str(exc.value)
    params["report"]["heatmap_reasoner"] = "nobody"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError, match="report.heatmap_reasoner"):
        stage.main(path, data=tmp_path / "data", tracking=False)
    params["report"] = {"tie_margn": 0.01}   # typo
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError, match="tie_margn"):
        stage.main(path, data=tmp_path / "data", tracking=False)
    assert not (tmp_path / "reports").exists()


def test_a_target_reached_before_training_costs_nothing():
    # step 0 has no train counters (blank in the curve CSV): reaching the target there cost 0
    c = pd.DataFrame({"step": [0, 1], "val_accuracy": [0.6, 0.6],
                      "train_reward_evals_unique": [np.nan, 120.0]})
    assert budget_to_target(c, 0.6, "train_reward_evals_unique") == 0.0
    assert budget_to_target(c, 0.7, "train_reward_evals_unique") is None
