"""The budget frontier's selection rule (fgpo.report.frontier): by hand, and against a plain
loop over random validation points."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fgpo.report.frontier import frontier_points


def _points(rows):
    return pd.DataFrame(rows, columns=["method", "seed", "run", "step", "reward_evals_unique",
                                       "val/expected_reward", "test/accuracy"])


def test_each_budget_takes_the_best_validation_point_within_it_never_the_best_test():
    pts = _points([
        ("grpo", 0, "1.0", 0, 0, 0.50, 0.50),
        ("grpo", 0, "1.0", 1, 100, 0.80, 0.70),
        ("grpo", 0, "1.0", 2, 200, 0.70, 0.90),   # the best test, never chosen: its val is lower
        ("grpo", 0, "1.0", 3, 300, 0.85, 0.60),
        ("fgpo", 0, "0.25", 0, 0, 0.50, 0.50),
        ("fgpo", 0, "0.25", 5, 160, 0.82, 0.80),
        ("fgpo", 0, "1.0", 0, 0, 0.50, 0.40),
        ("fgpo", 0, "1.0", 5, 640, 0.90, 0.88),
        ("fgpo", 0, "1.0", 10, 640, 0.90, 0.85),  # ties step 5 at the same calls: later step
    ])
    got = frontier_points(pts, [-1, 50, 150, 250, 1000])
    acc = {(r.method, r.budget): (r.run, r.step, r["test/accuracy"]) for _, r in got.iterrows()}
    assert acc == {
        ("grpo", 50.0): ("1.0", 0, 0.50), ("grpo", 150.0): ("1.0", 1, 0.70),
        ("grpo", 250.0): ("1.0", 1, 0.70), ("grpo", 1000.0): ("1.0", 3, 0.60),
        # a tie at step 0 goes to the first run listed; FGPO's sub-table reaches 0.82 at 160
        ("fgpo", 50.0): ("0.25", 0, 0.50), ("fgpo", 150.0): ("0.25", 0, 0.50),
        ("fgpo", 250.0): ("0.25", 5, 0.80), ("fgpo", 1000.0): ("1.0", 5, 0.88)}
    assert (got["reward_evals_unique"] <= got["budget"]).all()


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="run"):
        frontier_points(pd.DataFrame({"method": [], "seed": [], "step": []}), [1.0])


def test_the_rule_equals_a_plain_loop_on_random_points():
    rng = np.random.default_rng(0)
    rows = []
    for method in ("fgpo", "grpo", "rloo"):
        for seed in range(3):
            for run in ("0.1", "0.5", "1.0"):
                calls = np.sort(rng.integers(0, 2000, 8))
                calls[0] = 0
                for step, c in enumerate(calls):
                    rows.append((method, seed, run, step, int(c),
                                 float(rng.integers(0, 6)) / 5,  # coarse: many ties
                                 float(rng.random())))
    pts = _points(rows)
    budgets = [0, 10, 300, 999, 1500, 5000]
    got = frontier_points(pts, budgets).set_index(["method", "seed", "budget"])
    for (method, seed), group in pts.groupby(["method", "seed"]):
        for b in budgets:
            best = None
            for i, r in group.iterrows():  # in order: a later row wins only if strictly better
                if r["reward_evals_unique"] > b:
                    continue
                key = (-r["val/expected_reward"], r["reward_evals_unique"], r["step"])
                if best is None or key < best[0]:
                    best = (key, r)
            row = got.loc[(method, seed, float(b))]
            assert (row["run"], row["step"], row["test/accuracy"]) == \
                (best[1]["run"], best[1]["step"], best[1]["test/accuracy"])


def _hand_made_runs():
    """Two seeds, three test questions; fgpo on sub-table 0.5 and the whole table, grpo and
    rloo on the whole table. Each point's test answers are listed; its accuracy is their mean."""
    from fgpo.report.frontier import CALLS, SELECT
    answers = {  # (method, run, seed, step) -> (calls, val, correct per question)
        ("fgpo", 0.5, 0, 0): (0, .1, [0, 0, 0]), ("fgpo", 0.5, 0, 4): (40, .5, [1, 1, 0]),
        ("fgpo", 0.5, 1, 0): (0, .1, [0, 0, 1]), ("fgpo", 0.5, 1, 4): (40, .6, [1, 0, 1]),
        ("fgpo", 1.0, 0, 0): (0, .1, [0, 0, 0]), ("fgpo", 1.0, 0, 4): (80, .9, [1, 1, 1]),
        ("fgpo", 1.0, 1, 0): (0, .1, [0, 0, 1]), ("fgpo", 1.0, 1, 4): (80, .9, [1, 1, 1]),
        ("grpo", 1.0, 0, 0): (0, .1, [0, 0, 0]), ("grpo", 1.0, 0, 1): (10, .6, [1, 1, 0]),
        ("grpo", 1.0, 0, 2): (20, .4, [1, 1, 1]),   # best test, lower val: never chosen
        ("grpo", 1.0, 1, 0): (0, .1, [0, 0, 1]), ("grpo", 1.0, 1, 1): (10, .7, [1, 1, 1]),
        ("grpo", 1.0, 1, 2): (20, .8, [0, 1, 1]),
        ("rloo", 1.0, 0, 0): (0, .1, [0, 0, 0]), ("rloo", 1.0, 0, 1): (10, .2, [0, 1, 0]),
        ("rloo", 1.0, 1, 0): (0, .1, [0, 0, 1]), ("rloo", 1.0, 1, 1): (10, .2, [0, 1, 0]),
    }
    points = pd.DataFrame([{"method": m, "run": r, "seed": s, "step": t, CALLS: c, SELECT: v}
                           for (m, r, s, t), (c, v, _) in answers.items()])
    choices = pd.DataFrame([{"method": m, "run": r, "seed": s, "step": t, "question_id": f"q{i}",
                             "correct": ok} for (m, r, s, t), (_, _, right) in answers.items()
                            for i, ok in enumerate(right)])
    return points, choices


def test_curves_read_the_chosen_points_answers_and_pair_fgpo_with_the_best_sampled_method():
    from fgpo.report.frontier import crossover, frontier_curves
    points, choices = _hand_made_runs()
    curves = frontier_curves(points, choices, [5, 10, 20, 40, 80], "fgpo", ["grpo", "rloo"],
                             n_boot=2000, level=0.95)
    acc = curves.set_index(["budget", "method"]).accuracy
    # by hand: at 10 calls grpo's step 1 (val .6, .7), answers 2/3 and 3/3 -> 5/6
    assert acc[(10.0, "grpo")] == pytest.approx(5 / 6)
    # at 20: seed 0 keeps step 1 (val .6 > .4), seed 1 takes step 2 (.8): 2/3 + 2/3 -> 4/6
    assert acc[(20.0, "grpo")] == pytest.approx(4 / 6)
    assert acc[(10.0, "rloo")] == pytest.approx(2 / 6)
    # fgpo: step 0 (0 calls) up to 39, the 0.5 sub-table's step 4 at 40, the whole table at 80
    assert acc[(10.0, "fgpo")] == pytest.approx(1 / 6)
    assert acc[(40.0, "fgpo")] == pytest.approx(4 / 6)
    assert acc[(80.0, "fgpo")] == pytest.approx(1.0)
    diff = curves[curves.method == "fgpo - best sampled"].set_index("budget")
    assert diff.loc[10.0, "versus"] == "grpo"
    assert diff.loc[10.0, "accuracy"] == pytest.approx(1 / 6 - 5 / 6)
    assert diff.loc[80.0, "accuracy"] == pytest.approx(1 - 4 / 6)
    for _, row in curves.iterrows():
        assert row.lo <= row.accuracy <= row.hi
    cx = crossover(curves, "fgpo", ["grpo", "rloo"])
    # grpo's peak is 5/6 at 10 calls, below fgpo's 1.0: fgpo first reaches 5/6 at 80: 8x
    assert cx.sampled_best == "grpo" and cx.sampled_peak == pytest.approx(5 / 6)
    assert cx.matched == pytest.approx(5 / 6) and cx.sampled_cheapest == "grpo"
    assert cx.sampled_calls == 10.0 and cx.exact_calls == 80.0 and cx.ratio == 8.0
    assert cx.exact_peak == pytest.approx(1.0)


def test_the_crossover_is_where_fgpo_stops_being_significantly_below_the_best_sampled_one():
    from fgpo.report.frontier import crossover
    rows = [(b, "fgpo - best sampled", m, lo, hi) for b, m, lo, hi in [
        (10, -.30, -.40, -.20), (20, -.05, -.10, .01),   # not significant at 20 ...
        (40, -.08, -.12, -.02),                            # ... but again below at 40
        (80, .00, -.03, .03), (160, .04, .01, .07), (320, .02, -.01, .05)]]
    rows += [(b, "grpo", a, a - .05, a + .05) for b, a in [(10, .80), (20, .86), (40, .88),
                                                          (80, .88), (160, .88), (320, .88)]]
    rows += [(b, "rloo", .70, .65, .75) for b in (10, 20, 40, 80, 160, 320)]
    rows += [(b, "fgpo", a, a - .05, a + .05) for b, a in [(10, .50), (20, .81), (40, .80),
                                                          (80, .88), (160, .92), (320, .90)]]
    curves = pd.DataFrame(rows, columns=["budget", "method", "accuracy", "lo", "hi"])
    cx = crossover(curves, "fgpo", ["grpo", "rloo"])
    assert cx.catch_up == 80 and cx.first_win == 160 and cx.first_budget == 10
    assert (cx.sampled_best, cx.sampled_peak, cx.sampled_calls) == ("grpo", .88, 40)
    assert cx.matched == .88 and cx.exact_calls == 80 and cx.ratio == 2.0
    assert cx.exact_peak == .92
    # an exact method that peaks lower: matched at its own peak, the cheapest sampled method
    low = curves.assign(accuracy=np.where(curves.method == "fgpo", .85, curves.accuracy))
    low_cx = crossover(low, "fgpo", ["grpo", "rloo"])
    assert low_cx.matched == .85 and low_cx.exact_calls == 10
    assert (low_cx.sampled_cheapest, low_cx.sampled_calls, low_cx.ratio) == ("grpo", 20, 0.5)
    # rloo reaching it first (at 10 calls) is the cheapest, though grpo peaks higher
    early = low.assign(accuracy=np.where(low.method == "rloo", .85, low.accuracy))
    early_cx = crossover(early, "fgpo", ["grpo", "rloo"])
    assert (early_cx.sampled_best, early_cx.sampled_cheapest, early_cx.sampled_calls) == (
        "grpo", "rloo", 10)
    behind = curves[curves.budget < 160]
    behind = behind.assign(hi=np.where(behind.budget == 80, -.01, behind.hi))
    assert crossover(behind, "fgpo", ["grpo", "rloo"]).catch_up is None


def test_a_budget_below_a_seeds_first_paid_point_has_no_mean_and_the_grid_spans_all_points():
    from fgpo.report.frontier import budget_grid, frontier_curves
    points, choices = _hand_made_runs()
    grid = budget_grid(points, 6)
    assert grid[0] == 10.0 and grid[-1] == 80.0 and len(grid) <= 6
    assert grid == sorted(set(grid))
    # a method whose one seed has no step-0 point: no row below that seed's first point
    late = points[~((points.method == "rloo") & (points.seed == 1) & (points.step == 0))]
    curves = frontier_curves(late, choices, [5, 10], "fgpo", ["grpo", "rloo"], 500, 0.95)
    assert set(curves[curves.budget == 5.0].method) == {"fgpo", "grpo", "fgpo - best sampled"}
    assert "rloo" in set(curves[curves.budget == 10.0].method)


# ---- the frontier: section ------------------------------------------------------------------

def _frontier_params(tmp_path, **frontier):
    import yaml

    from conftest import REPO
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["frontier"].update(frontier)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("change, field", [
    ({"ks": [4, 11]}, "frontier.ks"),                      # more tools than tool_order holds
    ({"ks": [4, 4]}, "frontier.ks"),
    ({"tool_order": ["composition", "composition"]}, "frontier.tool_order"),
    ({"sampled": ["grpo", "nope"]}, "frontier.sampled"),
    ({"sampled": ["fgpo", "grpo"]}, "frontier.sampled"),  # the exact one listed as sampled
    ({"exact": "nope"}, "frontier.exact"),
    ({"fractions": [0.0, 1.0]}, "frontier.fractions"),
    ({"fractions": [0.5, 1.5]}, "frontier.fractions"),
    ({"seeds": [0, 0]}, "frontier.seeds"),
    ({"budgets": 1}, "frontier.budgets"),
    ({"typo": 1}, "frontier"),
])
def test_a_bad_frontier_section_is_refused_naming_its_field(tmp_path, change, field):
    from fgpo.config import load_section
    from fgpo.errors import InputError
    from fgpo.train.frontier import FrontierConfig
    with pytest.raises(InputError) as err:
        load_section(FrontierConfig, "frontier", _frontier_params(tmp_path, **change))
    assert err.value.field == field and str(tmp_path / "params.yaml") in str(err.value)


def test_a_ks_tools_are_the_first_k_of_an_order_that_must_begin_with_the_main_tools(tmp_path):
    from fgpo.errors import InputError
    from fgpo.rewards.frontier import FrontierTables
    from fgpo.rewards.table import tool_names
    params = _frontier_params(tmp_path)
    cfg, main = FrontierTables.load(params), tool_names(params)
    assert cfg.tools_at(6, main) == main
    assert cfg.tools_at(8, main) == main + ["kmer_profile", "seq_compare"]
    assert cfg.tools_at(4, main) == main[:4]
    with pytest.raises(InputError, match="not in frontier.ks"):
        cfg.tools_at(5, main)
    shuffled = FrontierTables.load(_frontier_params(
        tmp_path, tool_order=[*main[1:], main[0], "kmer_profile", "seq_compare"]))
    with pytest.raises(InputError, match="must begin with tools.names"):
        shuffled.tools_at(4, main)
    # the tables' view reads its keys only: the runs' keys are another reader's
    assert not hasattr(cfg, "fractions")


def test_derived_params_change_only_the_tools_seeds_and_fraction(tmp_path):
    import yaml

    from fgpo.config import read_params
    from fgpo.rewards.frontier import derived_params
    params = _frontier_params(tmp_path)
    with derived_params(params, ["composition", "motif_scan"], [0, 1], 0.25) as path:
        derived = read_params(path)
    assert not path.exists() and path.parent == params.parent  # temporary, beside params
    original = yaml.safe_load(params.read_text())
    assert derived["tools"]["names"] == ["composition", "motif_scan"]
    assert derived["train"]["seeds"] == [0, 1] and derived["train"]["train_fraction"] == 0.25
    for section in original:
        if section not in ("tools", "train"):
            assert derived[section] == original[section], section
    rest = lambda d, drop: {k: v for k, v in d.items() if k not in drop}  # noqa: E731
    assert rest(derived["tools"], {"names"}) == rest(original["tools"], {"names"})
    assert rest(derived["train"], {"seeds", "train_fraction"}) == \
        rest(original["train"], {"seeds", "train_fraction"})


def test_the_main_ks_copy_is_byte_identical_and_refused_for_other_tools(tmp_path):
    from fgpo.errors import InputError
    from fgpo.rewards.frontier import reuse_main
    from fgpo.seqio import atomic_write_parquet
    main = atomic_write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "main.parquet",
                                metadata={"tools": ["composition", "motif_scan"]})
    out = reuse_main(main, tmp_path / "K2" / "t.parquet", {"tools": ["composition",
                                                                     "motif_scan"]}, "x")
    assert out.read_bytes() == main.read_bytes()
    with pytest.raises(InputError) as err:
        reuse_main(main, tmp_path / "K1" / "t.parquet", {"tools": ["composition"]}, "`make`")
    assert err.value.field == "tools" and "main.parquet" in str(err.value)
    assert not (tmp_path / "K1" / "t.parquet").exists()


def test_the_readmes_evaluations_row_is_the_frontiers_measurement_when_there_is_one():
    from fgpo.report.readme import SCHEDULE_ROW, frontier_row, with_frontier_row
    summary = {"frontier/K6/careful_expert/genomeqa/calls_ratio_at_matched": 4.0,
               "frontier/K6/careful_expert/genomeqa/matched_accuracy": .9,
               "frontier/K6/careful_expert/seqcalc/calls_ratio_at_matched": 0.5,
               "frontier/K6/careful_expert/seqcalc/matched_accuracy": .7,
               "frontier/K4/careful_expert/genomeqa/calls_ratio_at_matched": 2.0}
    row = frontier_row(summary, 6, "2.4x")
    assert "| 2.4x (GRPO's schedule" in row and "K = 6" in row
    # sampled needs a quarter of FGPO's calls on genomeqa, twice them on seqcalc
    assert "careful_expert/genomeqa 0.25x (at accuracy 0.900)" in row
    assert "careful_expert/seqcalc 2.00x (at accuracy 0.700)" in row
    assert frontier_row(summary, 8, "2.4x") is None
    body = f"| quantity | paper | this run |\n{SCHEDULE_ROW}GRPO schedule | 2.4x | 0.375x |\n"
    assert with_frontier_row(body, row) == f"| quantity | paper | this run |\n{row}\n"
    assert with_frontier_row(body, None) == body
