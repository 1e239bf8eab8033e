"""The comparison report: the faithful protocol's numbers (paired intervals, the schedule ratio,
evaluations to target, the table's fixed policies) on a hand-made fixture whose answers are worked
out by hand, the table layout against golden markdown, figures drawn from the fixture, and the
README's results matching the report."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from fgpo.errors import InputError
from fgpo.report import figures
from fgpo.report.config import ReportConfig
from fgpo.report.data import SettingData, SplitTable, subset_label
from fgpo.report.markdown import render_summary, sections, settings_table
from fgpo.report.numbers import (baselines, evals_to_target, family_accuracy, oracle_tools,
                                 overall_numbers, paired, schedule_ratio, setting_numbers,
                                 subset_choice, with_holm)

REPO = Path(__file__).resolve().parents[1]


# ---- the schedule ratio (the paper's budget quantity) ---------------------------------------

def test_schedule_ratio_on_a_hand_example():
    # 720 train questions, 8 epochs, G = 8 draws per visit: 720 * 8 * 8 = 46,080 on-demand
    # evaluations; the table has 720 * 2^6 = 46,080 cells: ratio 1.
    assert schedule_ratio(8, 8, 2 ** 6) == pytest.approx(46_080 / 46_080)
    # the paper's 2.4x at G = 8 and 2^K = 64 needs 19.2 epochs; 3 epochs of G = 16 over 2^3
    # subsets: 3 * N * 16 / (N * 8) = 6
    assert schedule_ratio(19.2, 8, 64) == pytest.approx(2.4)
    assert schedule_ratio(3, 16, 8) == pytest.approx(6.0)


def test_oracle_tools_takes_the_fewest_tools_among_best_subsets():
    n_tools = np.array([0, 1, 1, 2])
    reward = np.array([[0.0, 0.99, 0.99, 0.98],    # best: masks 1 and 2 -> 1 tool
                       [1.0, 0.99, 0.99, 0.98],    # best: no tools -> 0
                       [0.0, 0.0, 0.0, 0.98]])     # only all tools -> 2
    assert oracle_tools(reward, n_tools) == pytest.approx(1.0)


# ---- a small fixture of runs: K = 2 tools, 4 test questions, 2 seeds -------------------------

N_TOOLS = np.array([0, 1, 1, 2])
IDS = ["q0", "q1", "q2", "q3"]
CORRECT = np.array([[0, 1, 0, 1], [0, 1, 0, 1], [1, 0, 1, 1], [0, 0, 1, 1]], dtype=float)
SEEDS = [0, 1]


def table() -> SplitTable:
    return SplitTable(question_ids=IDS, families=np.array(["alpha", "alpha", "beta", "beta"]),
                      correct=CORRECT, reward=CORRECT - 0.01 * N_TOOLS, n_tools=N_TOOLS,
                      best_fixed_mask=3)


# Table stats as the table stage writes them: per-family best masks chosen on train (alpha: the
# first tool, beta: the second), 4 train and 4 validation questions.
STATS = {"table/uniform_zero_signal_frac": 0.002, "table/constant_reward_row_frac": 0.0,
         "table/group_size": 8, "family/alpha/best_fixed_mask": 1,
         "family/beta/best_fixed_mask": 2, "train/n_questions": 4, "val/n_questions": 4}


def metrics(acc: float, tools: float, zero: float, std: float = 0.0) -> dict:
    # GRPO's schedule: 2 epochs of the 4 train questions (8 visits), G = 4 draws each (32)
    return {"test/accuracy": acc, "test/accuracy_std": std, "test/reward": acc - 0.01 * tools,
            "test/expected_accuracy": acc, "test/expected_reward": acc - 0.01 * tools,
            "test/tools_per_question": tools, "test/expected_tools_per_question": tools,
            "test/zero_signal_frac": zero, "test/entropy": 0.5, "checkpoint/epoch": 1.0,
            "seeds": SEEDS, "budget/table_cells_train": 16.0, "budget/question_visits": 8.0,
            "budget/reward_evals": 32.0, "budget/reward_evals_unique": 20.0}


def curve(val: list[float], exp: list[float], evals: list[float], chosen: int, seed: int
          ) -> pd.DataFrame:
    """A train-stage curve (plots/train CSV columns) with a validation point at every step."""
    n = len(val)
    return pd.DataFrame({
        "step": range(n), "val_accuracy": val, "val_expected_reward": exp,
        "train_reward_evals": evals, "train_reward_evals_unique": evals,
        "train_questions_seen": [min(4, 2 * i) for i in range(n)],
        "train_epoch": [float(i) for i in range(n)],
        "train_zero_signal_frac": [np.nan] + [0.5] * (n - 1),
        "train_entropy": [np.nan] + [1.0] * (n - 1),
        "checkpoint_selected": [1.0 if i == chosen else np.nan for i in range(n)], "seed": seed})


def fgpo_curves() -> pd.DataFrame:
    # both seeds select step 1 (best val expected reward 0.7) at val accuracy 0.75
    return pd.concat([curve([0.25, 0.75, 0.5], [0.3, 0.7, 0.6], [16, 16, 16], 1, s)
                      for s in SEEDS], ignore_index=True)


def grpo_curves() -> pd.DataFrame:
    # seed 0 reaches 0.5 after 32 evaluations; seed 1 never leaves 0.25
    return pd.concat([curve([0.25, 0.25, 0.5], [0.3, 0.3, 0.5], [0, 16, 32], 2, 0),
                      curve([0.25, 0.25, 0.25], [0.3, 0.3, 0.3], [0, 16, 32], 0, 1)],
                     ignore_index=True)


def selections(masks: list[int], order: list[int] | None = None) -> pd.DataFrame:
    """Greedy test choices, the same for both seeds; `order` shuffles the rows."""
    t, rows = table(), np.arange(4)
    one = pd.DataFrame({"question_id": IDS, "family": t.families, "mask": masks,
                        "correct": t.correct[rows, masks], "reward": t.reward[rows, masks]})
    both = pd.concat([one.assign(seed=s) for s in SEEDS], ignore_index=True)
    return both.iloc[order] if order else both


def setting(reasoner: str, grpo_masks: list[int], fgpo_acc: float, grpo_acc: float
            ) -> SettingData:
    # FGPO picks masks 1, 1, 2, 3: every answer right. Its rows come in another order than
    # GRPO's: the comparison pairs by (seed, question), not by row.
    return SettingData(
        reasoner=reasoner, benchmark="toyqa",
        metrics={"fgpo": metrics(fgpo_acc, 1.25, 0.10), "grpo": metrics(grpo_acc, 0.25, 0.40)},
        curves={"fgpo": fgpo_curves(), "grpo": grpo_curves()},
        selections={"fgpo": selections([1, 1, 2, 3], order=[7, 6, 5, 4, 3, 2, 1, 0]),
                    "grpo": selections(grpo_masks)},
        table_stats=STATS, test=table())


@pytest.fixture
def fixture_settings() -> list[SettingData]:
    # strong: GRPO wrong on all four questions; weak: GRPO right on q1 and q2 (2 of 4)
    return [setting("strong", [0, 0, 1, 0], 1.0, 0.0), setting("weak", [0, 1, 0, 0], 1.0, 0.5)]


def test_fixed_policies_from_the_table_by_hand(fixture_settings):
    b = baselines(fixture_settings[0])
    # per-family best: alpha -> mask 1, beta -> mask 2: all right, one tool each
    assert b["baseline/test/family_best_accuracy"] == 1.0
    assert b["baseline/test/family_best_reward"] == pytest.approx(0.99)
    assert b["baseline/test/family_best_tools"] == 1.0
    assert b["baseline/test/no_tools_accuracy"] == 0.25      # mask 0: only q2 right
    assert b["baseline/test/all_tools_reward"] == pytest.approx(0.98)
    assert b["baseline/test/chance_accuracy"] == pytest.approx(9 / 16)
    assert b["baseline/test/chance_reward"] == pytest.approx(9 / 16 - 0.01)  # mean tools 1
    assert b["baseline/test/oracle_reward"] == pytest.approx((0.99 + 0.99 + 1.0 + 0.99) / 4)
    assert b["baseline/test/oracle_tools"] == pytest.approx(0.75)


def test_pairing_is_by_seed_and_question_and_refuses_mismatched_runs(fixture_settings):
    s = fixture_settings[1]
    diff = paired(s.selections["fgpo"], s.selections["grpo"], "correct", s.name)
    assert diff.tolist() == [[1, 0, 0, 1], [1, 0, 0, 1]]   # q0..q3 under seeds 0 and 1
    with pytest.raises(InputError, match="different seeds or questions"):
        paired(s.selections["fgpo"], s.selections["grpo"].query("seed == 0"), "correct", "x")


def test_evals_to_target_per_seed_and_censored():
    # target = FGPO's val accuracy at its checkpoint (0.75) - one of 4 val questions = 0.5
    hits = evals_to_target(fgpo_curves(), grpo_curves(), n_val=4)
    assert hits == [{"seed": 0, "target": 0.5, "evals": 32.0, "total": 32.0},
                    {"seed": 1, "target": 0.5, "evals": None, "total": 32.0}]


def test_setting_numbers_from_the_fixture(fixture_settings):
    typed = [setting_numbers(s, ReportConfig()) for s in fixture_settings]
    assert typed[0].headline.accuracy.outcome == "win"
    assert typed[0].budget.targets[1].evals is None      # seed 1 never reaches the target
    strong, weak = (row.flat() for row in typed)          # metrics/summary.json's keys
    # strong: FGPO right on all 8 (seed, question) cells, GRPO on none: [1, 1] and a win
    assert strong["diff/test/accuracy"] == 1.0 and strong["outcome"] == "win"
    assert (strong["diff/test/accuracy_lo"], strong["diff/test/accuracy_hi"]) == (1.0, 1.0)
    # CMH by seed, by hand: each seed's table is FGPO right 4 of 4, GRPO 0 of 4 (n = 8):
    # E = 4 * 4 / 8 = 2, Var = 4^4 / (8^2 * 7); two seeds: (2 + 2)^2 / (2 Var) = 14
    assert strong["cmh/p"] == pytest.approx(chi2.sf(14.0, 1))
    # one seed left out, the other one alone still shows all four answers right: stable
    assert (strong["stability/agree"], strong["stability/of"]) == (2, 2)
    assert strong["stability/verdicts"] == ["win", "win"]
    # weak: diff 1, 0, 0, 1 per seed; a resample of 4 questions misses both 1s with
    # probability (1/2)^4 = 6.25% > 2.5%, so the interval touches 0: a tie, however large
    assert weak["diff/test/accuracy"] == 0.5 and weak["diff/test/accuracy_lo"] == 0.0
    # the same 6.25% tail, twice, from 10,000 replicates: sd 2 sqrt(.0625 .9375 / 1e4) = .0048
    assert weak["outcome"] == "tie" and weak["diff/test/accuracy_p"] == pytest.approx(
        2 * 0.5 ** 4, abs=3 * 0.0048)
    # weak, per seed: FGPO 4 of 4, GRPO 2 of 4: E = 4 * 6 / 8 = 3, Var = 4 * 4 * 6 * 2 / 448
    assert weak["cmh/p"] == pytest.approx(chi2.sf(2 ** 2 / (2 * 192 / 448), 1))
    # FGPO vs the per-family best on reward: 0, 0, 0, -0.01 (q3 takes both tools): q3 is left
    # out of a resample with probability (3/4)^4 = 32%, so the interval reaches 0: a tie
    assert weak["fgpo/vs_family_best/reward"] == pytest.approx(-0.0025)
    assert weak["fgpo/vs_family_best/reward_outcome"] == "tie"
    assert strong["grpo/vs_family_best/accuracy_outcome"] == "loss"
    # the schedule: 8 visits of 4 train questions = 2 epochs, 32 / 8 = G 4, 2^K = 4
    assert (strong["schedule/epochs"], strong["schedule/group_size"]) == (2.0, 4.0)
    assert strong["schedule/ratio"] == pytest.approx(2 * 4 / 4)
    assert strong["schedule/measured_ratio"] == pytest.approx(32 / 16)
    assert strong["target/seed0/grpo_reward_evals"] == 32.0
    assert strong["target/seed1/grpo_reward_evals"] is None and strong["target/reached"] == 1
    # FGPO's seed-mean val expected reward: 0.6 at epoch 2, 0.7 one epoch before
    assert strong["fgpo/val/last_epoch_change"] == pytest.approx(-0.1)
    # FGPO's checkpoints: the first validation point after step 0 under both seeds
    assert strong["fgpo/checkpoint/points"] == [1, 1]
    assert strong["grpo/checkpoint/points"] == [2, 0] and strong["grpo/checkpoint/at_first_points"] == 1
    assert strong["zero_signal/grpo_first_steps"] == pytest.approx(0.5)


def test_overall_counts_and_means(fixture_settings):
    rows = with_holm([setting_numbers(s, ReportConfig()) for s in fixture_settings],
                     ReportConfig())
    typed = overall_numbers(rows)
    assert (typed.accuracy.wins, typed.accuracy.ties, typed.accuracy.losses) == (1, 1, 0)
    o = typed.flat()
    assert (o["overall/fgpo_wins"], o["overall/ties"], o["overall/fgpo_losses"]) == (1, 1, 0)
    assert o["overall/fgpo_higher_mean"] == 2 and o["overall/cmh_p05"] == 2
    # Holm over two settings: strong's p = 0 (x2) keeps its win, weak stays a tie
    assert [r.headline.accuracy.holm for r in rows] == ["win", "tie"]
    assert (o["overall/holm_fgpo_wins"], o["overall/holm_ties"]) == (1, 1)
    assert o["overall/stable"] == 2 and "held_out/settings" not in o
    # over settings: both favour FGPO, 2 of 2: sign test p = 2 * 0.25; t interval with 1 df
    assert (o["overall/fgpo_higher"], o["overall/sign_p"]) == (2, pytest.approx(0.5))
    half = 12.7062047 * statistics.stdev([1.0, 0.5]) / 2 ** 0.5       # t(0.975, 1 df)
    assert (o["overall/mean_diff_lo"], o["overall/mean_diff_hi"]) == pytest.approx(
        (0.75 - half, 0.75 + half))
    # the settings no study tuned on: here only "weak"
    held = overall_numbers(rows, tuned_on=["strong/toyqa"]).flat()
    assert held["held_out/settings"] == 1 and held["held_out/mean_diff"] == 0.5
    assert (held["held_out/fgpo_wins"], held["held_out/ties"]) == (0, 1)
    assert o["overall/mean_diff"] == pytest.approx(0.75)
    assert o["schedule/ratio"] == pytest.approx(2.0) and not o["schedule/ratios_differ"]
    assert (o["target/runs"], o["target/reached"]) == (4, 2)
    assert o["target/median_over_table"] == pytest.approx(32 / 16)
    # GRPO below the all-correct per-family best: by 1 everywhere (strong, a loss) and by
    # -1, 0, 0, -1 (weak: a tie, as for the headline above)
    assert o["family_best/grpo/accuracy_losses"] == 1
    assert o["family_best/fgpo/reward_wins"] == 0
    assert o["toyqa/grpo/test/tools_per_question"] == 0.25


GOLDEN = """\
| reasoner | benchmark | FGPO | GRPO | FGPO − GRPO [95% CI] | outcome | Holm | seed-stable | CMH p | no tools | all tools | chance | family best | oracle (bound) |
|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|
| strong | toyqa | 1.000 ± 0.000 | 0.000 ± 0.000 | +100.0 [+100.0, +100.0] pt | win | win | 2/2 | 0.000183 | 0.250 | 1.000 | 0.562 | 1.000 | 1.000 |
| weak | toyqa | 1.000 ± 0.000 | 0.500 ± 0.000 | +50.0 [+0.0, +100.0] pt | tie | tie | 2/2 | 0.0308 | 0.250 | 1.000 | 0.562 | 1.000 | 1.000 |"""


def test_settings_table_matches_golden_markdown(fixture_settings):
    rows = with_holm([setting_numbers(s, ReportConfig()) for s in fixture_settings],
                     ReportConfig())
    assert settings_table(rows) == GOLDEN
    linked = settings_table(rows, {"strong/toyqa": "[runs](x)"}).splitlines()
    assert linked[0].endswith("| MLflow |") and linked[2].endswith("| [runs](x) |")
    assert linked[3].endswith("| — |")


def test_seed_spread_is_shown_when_there_are_several_seeds(fixture_settings):
    s = fixture_settings[0]
    s.metrics["fgpo"].update({"test/accuracy": 0.875, "test/accuracy_std": 0.0125})
    row = setting_numbers(s, ReportConfig())
    assert "| 0.875 ± 0.013 |" in settings_table([row])


def test_family_accuracy_and_subset_choice(fixture_settings):
    s = fixture_settings[1]
    fam = family_accuracy(s).set_index("family")
    # FGPO picks masks 1,1 (both correct) in alpha, 2,3 (both correct) in beta.
    assert fam.loc["alpha", "fgpo"] == 1.0 and fam.loc["beta", "fgpo"] == 1.0
    assert fam.loc["alpha", "grpo"] == 0.5 and fam.loc["beta", "grpo"] == 0.5
    assert fam.loc["alpha", "no_tools"] == 0.0 and fam.loc["beta", "oracle"] == 1.0
    assert fam.loc["alpha", "family_best"] == 1.0 and fam.loc["beta", "best_fixed"] == 1.0
    share = subset_choice(s, top=3)
    assert share["grpo"].loc["beta", 0] == 1.0 and share["fgpo"].loc["alpha", 1] == 1.0
    assert list(share["fgpo"].columns) == [0, 1, 2]   # counts 6, 6, 2, 2: ties by mask order
    assert subset_label(0, ["composition", "motif_scan"]) == "none"
    assert subset_label(3, ["composition", "motif_scan"]) == "compo+motif"


def test_figures_are_written_and_not_blank(tmp_path, fixture_settings):
    fam = pd.concat([family_accuracy(s) for s in fixture_settings])
    paths = [
        figures.validation_curves(fixture_settings, tmp_path / "v.png"),
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
    rows = with_holm([setting_numbers(s, cfg) for s in fixture_settings], cfg)
    md = render_summary(rows, overall_numbers(rows),
                        pd.concat([family_accuracy(s) for s in fixture_settings]), "- ran",
                        {"A figure": "figures/a.png"}, cfg)
    secs = sections(md)
    assert list(secs) == ["What ran", "Tuning", "Paper vs this run", "Test accuracy per setting",
                          "Test reward and tools", "Reward-evaluation budgets",
                          "Zero-signal fraction", "Convergence and checkpoints",
                          "Why this run differs from the paper", "Per-family accuracy",
                          "Figures"]
    assert GOLDEN in secs["Test accuracy per setting"]
    assert ("significantly higher (paired 95% interval above zero) in 1, indistinguishable in "
            "1 and significantly lower in 0 of 2 settings") in md
    assert "| 2.000x (2 × 4 / 4) |" in secs["Paper vs this run"]   # the schedule, by hand
    assert "> 32" in secs["Reward-evaluation budgets"]              # seed 1 censored
    # the exact zero-signal measure's G (table stats: 8) and GRPO's own G (32 / 8 visits = 4)
    assert "(exact for G = 8, at its checkpoint)" in secs["Paper vs this run"]
    assert "(its own G = 4)" in secs["Paper vs this run"]
    assert "![A figure](figures/a.png)" in secs["Figures"]
    assert "the same, untuned hyperparameters" in secs["Why this run differs from the paper"]
    assert secs["Tuning"].startswith("Not tuned")
    tuned = render_summary(rows, overall_numbers(rows), pd.concat(
        [family_accuracy(s) for s in fixture_settings]), "- ran", {}, cfg,
        [{"method": "fgpo", "trials": 2, "complete": 2, "question_visits": [8.0],
          "reward_evals_median": 0.0, "best": 0.5, "plateau_trials": 12,
          "chosen": {"beta": 0.02}}], {"epochs": 3})
    assert "its own values from an equal-budget study" in tuned
    assert "| FGPO | 2 (2) | 8 | 0 | 0.5000 | — | — | — | `beta` = 0.02 |" in tuned
    # where checkpoints fall: FGPO picks point 1 (step 1) under both seeds; GRPO point 2 under
    # seed 0 and step 0 under seed 1, each of 2 points after step 0
    conv = secs["Convergence and checkpoints"]
    assert "| 1.00 | 1, 1 of 2 |" in conv or "1, 1 of 2" in conv
    assert "2, 0 of 2" in conv
    assert "FGPO 4 of 4, GRPO 2 of 4." in conv


# ---- the committed README and report agree ---------------------------------------------------

NUMBER = re.compile(r"[-+]?\d[\d,]*\.?\d*%?")


def test_readme_results_match_the_committed_report():
    summary = REPO / "reports" / "summary.md"
    if not summary.exists():
        pytest.skip("reports/summary.md not built yet (run `make run`)")
    import json

    from fgpo.report.paper import PAPER
    from fgpo.report.readme import frontier_row, results_block, with_frontier_row
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- fgpo:results -->\n(.*?)<!-- /fgpo:results -->", readme, re.S)
    assert block, "README has no generated results block"
    expected = results_block(summary.read_text())
    report_text = summary.read_text()
    frontier = REPO / "metrics" / "frontier_summary.json"
    if frontier.exists():  # the evaluations row is the budget frontier's measurement
        row = frontier_row(json.loads(frontier.read_text()), 6, PAPER["budget"])
        expected = with_frontier_row(expected, row)
        report_text += (REPO / "reports" / "frontier.md").read_text() + row
    assert block.group(1).strip() == expected.strip()
    report_numbers = set(NUMBER.findall(report_text))
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
    params["report"] = {"levle": 0.9}   # typo
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError, match="levle"):
        stage.main(path, data=tmp_path / "data", tracking=False)
    assert not (tmp_path / "reports").exists()


# ---- tuning -----------------------------------------------------------------------------------

def test_tuning_numbers_best_so_far_and_section_by_hand():
    from fgpo.report.markdown import tuning_section
    from fgpo.report.numbers import best_so_far, tuning_numbers
    trials = pd.DataFrame({
        "method": ["fgpo"] * 3 + ["grpo"] * 3, "trial": [0, 1, 2, 0, 1, 2],
        "state": ["COMPLETE", "COMPLETE", "COMPLETE", "FAIL", "COMPLETE", "COMPLETE"],
        "value": [0.5, 0.7, 0.6, None, 0.4, 0.45],
        "question_visits": [1440.0] * 6, "reward_evals": [0, 0, 0, None, 11520.0, 5760.0],
        "params": ["{}", "{}", '{"learning_rate": 0.002}', "{}", "{}", "{}"]})
    # window 1: whether the last complete trial raised the best of those before it
    nums = tuning_numbers(trials, {"fgpo": {"learning_rate": 0.002}, "grpo": {}}, window=1)
    f, g = nums
    assert (f["trials"], f["complete"], f["best"]) == (3, 3, 0.7)
    assert (g["trials"], g["complete"], g["best"]) == (3, 2, 0.45)
    assert g["reward_evals_median"] == (11520 + 5760) / 2
    assert f["question_visits"] == g["question_visits"] == [1440.0]   # equal budgets
    best = best_so_far(trials)
    assert best[best.method == "fgpo"]["best"].tolist() == [0.5, 0.7, 0.7]
    assert best[best.method == "grpo"]["trial"].tolist() == [1, 2]   # the failed one left out
    text = tuning_section(nums, {"settings": ["a/x", "b/y"], "epochs": 2, "train_seed": 100,
                                 "tie_tolerance": 0.01})
    # FGPO's best (0.7) is its second of three trials: its last adds nothing; GRPO's last
    # complete trial lifts 0.40 to 0.45, over the tie tolerance: still improving (↑).
    # The chosen values are trial 2's (matched by its params), not the best trial 1's
    assert "| FGPO | 3 (3) | 1,440 | 0 | 0.7000 | 2 of 3 | +0.0000 | 2 (0.6000) | " \
        "`learning_rate` = 0.002 |" in text
    assert "| GRPO | 3 (2) | 1,440 | 8,640 | 0.4500 | 2 of 2 | +0.0500 ↑ | — | (not written) |" \
        in text
    assert "| best at | last 1 add |" in text and "N = 1 complete trials" in text
    # no more trials than the window: the study cannot tell
    assert tuning_numbers(trials, {}, window=3)[0]["plateau_gain"] is None
    assert tuning_numbers(trials, {}, window=2)[0]["plateau_gain"] == pytest.approx(0.2)
    # the tuned file may hold a value rounded in its last digits (written for dvc.lock): the
    # trial is still found; another value is not
    (near,) = tuning_numbers(trials.iloc[:3], {"fgpo": {"learning_rate": 0.002 * (1 + 5e-15)}})
    (other,) = tuning_numbers(trials.iloc[:3], {"fgpo": {"learning_rate": 0.0021}})
    assert (near["chosen_trial"], other["chosen_trial"]) == (2, None)
    assert "2 epochs of every train question of each tuning setting (a/x, b/y)" in text
    assert "trained with seed 100 (none of the evaluation seeds)" in text
    # a study still improving: its last trial lifts the first two's best by 0.15
    rising = trials.assign(method="rloo", state="COMPLETE", value=[0.3, 0.35, 0.5, 0, 0, 0])
    (r,) = tuning_numbers(rising.iloc[:3], {"rloo": {}}, window=1)
    assert (r["best_at"], r["plateau_gain"]) == (3, pytest.approx(0.15))
    # a chosen value at a bound: within 10% of the range, on the log scale for a log range
    space = {"fgpo": {"learning_rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True},
                      "beta": {"type": "float", "low": 0.0, "high": 1.0}}}
    top = tuning_numbers(trials, {"fgpo": {"learning_rate": 0.0087, "beta": 0.5}}, space)[0]
    assert top["at_bound"] == ["learning_rate"]     # ln(87) / ln(100) = 0.97 of the range
    assert "`learning_rate` = 0.0087 †" in tuning_section([top], {})
    assert tuning_numbers(trials, {"fgpo": {"learning_rate": 0.002}}, space)[0]["at_bound"] == []
    assert tuning_numbers(trials.iloc[:0], {}) == []
    assert tuning_section([], {}).startswith("Not tuned")


def test_the_headline_pair_is_a_params_edit(fixture_settings):
    """`report.compare: [fgpo, dr_grpo]`: the paired difference, its stability, the budget, the
    zero-signal columns and the prose compare that pair, on a hand-made result set where
    dr_grpo answers like the weak GRPO (right on q1 and q2 of 4)."""
    s = fixture_settings[0]  # "strong": its GRPO is wrong everywhere
    weak = fixture_settings[1]
    for part in ("metrics", "curves", "selections"):
        getattr(s, part)["dr_grpo"] = getattr(weak, part)["grpo"]
    cfg = ReportConfig(compare=["fgpo", "dr_grpo"])
    row = setting_numbers(s, cfg)
    assert (row.headline.exact, row.headline.sampled) == ("fgpo", "dr_grpo")
    # fgpo right on all 8 (seed, question) cells, dr_grpo on 4: diff 1, 0, 0, 1 per seed
    assert row.headline.accuracy.mean == 0.5 and row.headline.accuracy.outcome == "tie"
    assert row.headline.leave_one_out == ["tie", "tie"]
    assert setting_numbers(s, ReportConfig()).headline.accuracy.mean == 1.0  # against grpo
    flat = row.flat()
    assert flat["schedule/dr_grpo_reward_evals"] == 32 and "schedule/grpo_reward_evals" not in flat
    assert "zero_signal/dr_grpo_first_steps" in flat
    overall = overall_numbers([row])
    assert overall.flat()["overall/fgpo_wins"] == 0 and overall.accuracy.ties == 1
    md = render_summary([row], overall, family_accuracy(s), "- ran", {}, cfg)
    secs = sections(md)
    assert md.startswith("# FGPO vs DR_GRPO: comparison report")
    head = next(line for line in secs["Test accuracy per setting"].splitlines()
                if line.startswith("| reasoner"))
    assert "| FGPO | GRPO | DR_GRPO | FGPO − DR_GRPO [95% CI] |" in head
    assert "| +50.0 [+0.0, +100.0] pt | tie |" in secs["Test accuracy per setting"]
    assert "DR_GRPO first steps (observed)" in secs["Zero-signal fraction"]
    assert "DR_GRPO schedule evals" in secs["Reward-evaluation budgets"]
    with pytest.raises(InputError, match="report.compare"):
        setting_numbers(s, ReportConfig(compare=["fgpo", "rloo"]))  # not trained
    with pytest.raises(InputError, match="two distinct"):
        ReportConfig(compare=["fgpo", "fgpo"])
