"""Degenerate reward tables are loud: hand-built tables whose statistics are computed by hand.

K = 2 tools (masks 0..3). Two families: f1 is answered right only with tool 1 (mask 1), f2
only with tool 2 (mask 2); no tools is always wrong.
"""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from fgpo.cli import app
from fgpo.errors import InputError
from fgpo.question import Question
from fgpo.rewards.stats import require_trainable, table_stats
from fgpo.rewards.table import RewardTable, RunData
from fgpo.tools.subsets import tools_per_mask

PER_FAMILY = ["train"] * 6 + ["val"] * 8 + ["test"] * 2  # 16 questions per family


def _table(correct: np.ndarray, families: list[str], splits: list[str], unparseable: int = 0
           ) -> RewardTable:
    nt = tools_per_mask(2)
    return RewardTable(question_ids=[f"q{i}" for i in range(len(correct))],
                       splits=np.array(splits), families=np.array(families),
                       reward=correct - 0.01 * nt, correct=correct.astype(np.float64),
                       n_tools=nt, meta={"unparseable": unparseable})


def healthy() -> RewardTable:
    f1 = np.tile([0, 1, 0, 0], (16, 1))
    f2 = np.tile([0, 0, 1, 0], (16, 1))
    return _table(np.vstack([f1, f2]), ["f1"] * 16 + ["f2"] * 16, PER_FAMILY * 2)


def test_chance_and_per_family_best_fixed_by_hand():
    t = healthy()
    n_options = np.array([2] * 16 + [4] * 16, dtype=float)
    s = table_stats(t, group_size=2, n_options=n_options)
    assert s["test/chance_accuracy"] == pytest.approx((2 * 0.5 + 2 * 0.25) / 4)
    # one global subset: tie between masks 1 and 2 on train (0.5 each) -> fewer tools, then
    # lower mask: mask 1, right on f1 only
    assert s["table/best_fixed_mask"] == 1
    assert s["test/best_fixed_accuracy"] == pytest.approx(0.5)
    # one subset per family (chosen on train): mask 1 for f1, mask 2 for f2 -> all right
    assert s["family/f1/best_fixed_mask"] == 1 and s["family/f2/best_fixed_mask"] == 2
    assert s["test/family_best_fixed_accuracy"] == pytest.approx(1.0)
    assert s["test/oracle_accuracy"] == pytest.approx(1.0)
    # held out (val + test): 20 questions, gain d = 1 on f1's 10, 0 on f2's 10: mean 0.5,
    # sd sqrt(20 * 0.25 / 19), se sd / sqrt(20)
    assert s["table/heldout_questions"] == 20
    assert s["table/heldout_best_fixed_gain"] == pytest.approx(0.5)
    assert s["table/heldout_best_fixed_gain_lo95"] == pytest.approx(
        0.5 - 1.96 * np.sqrt(5 / 19) / np.sqrt(20))
    assert s["table/warnings"] == [] and s["table/degenerate"] is False
    assert s["table/constant_correct_row_frac"] == 0.0


def test_constant_rows_flag_and_no_gain():
    c = np.vstack([np.ones((16, 4)), np.zeros((16, 4))])  # every row constant
    s = table_stats(_table(c, ["f1"] * 32, PER_FAMILY * 2), group_size=2)
    assert s["table/constant_correct_row_frac"] == 1.0
    assert s["table/degenerate"] is True
    text = " ".join(s["table/warnings"])
    assert "table/constant_correct_row_frac = 1.000" in text
    assert "table/heldout_best_fixed_gain = +0.000" in text  # best mask 0: nothing beats it


def test_unparseable_flag():
    t = healthy()
    t.meta["unparseable"] = 13  # of 128 cells: 0.1016 > 0.05
    s = table_stats(t, group_size=2)
    assert s["table/unparseable_frac"] == pytest.approx(13 / 128)
    assert [w.split(" =")[0] for w in s["table/warnings"]] == ["table/unparseable_frac"]
    t.meta["unparseable"] = 6  # 0.047: within the bound
    assert table_stats(t, group_size=2)["table/warnings"] == []


def test_a_gain_within_noise_is_flagged():
    """Held-out gain of 2 questions in 20: mean 0.1, sd sqrt(1.8 / 19), se 0.069, lower bound
    0.1 - 0.135 < 0 -> flagged; train still prefers mask 1."""
    c = np.tile([1, 1, 0, 0], (32, 1)).astype(float)
    splits = PER_FAMILY * 2
    train = [i for i, s in enumerate(splits) if s == "train"]
    val = [i for i, s in enumerate(splits) if s == "val"]
    c[train, 0] = 0  # on train, tools win clearly
    c[val[:2], 0] = 0  # on val, no tools loses only 2 of 16
    s = table_stats(_table(c, ["f1"] * 32, splits), group_size=2)
    assert s["table/best_fixed_mask"] == 1
    assert s["table/heldout_best_fixed_gain"] == pytest.approx(2 / 20)
    assert s["table/heldout_best_fixed_gain_lo95"] == pytest.approx(
        0.1 - 1.96 * np.sqrt(1.8 / 19) / np.sqrt(20))
    assert [w.split(" =")[0] for w in s["table/warnings"]] == ["table/heldout_best_fixed_gain"]


def _run_data(t: RewardTable) -> RunData:
    qs = [Question(id=i, benchmark="b", family=f, question="?", sequences={"seq": "ACGT"},
                   options=["yes", "no"], answer=0, split=s)
          for i, f, s in zip(t.question_ids, t.families, t.splits)]
    return RunData(qs, t, ["a", "b"])


def test_training_refuses_a_degenerate_table_unless_forced():
    c = np.vstack([np.ones((16, 4)), np.zeros((16, 4))])
    bad = _run_data(_table(c, ["f1"] * 32, PER_FAMILY * 2))
    with pytest.raises(InputError, match="constant_correct_row_frac") as err:
        require_trainable(bad, allow=False, path="data/reward_tables/r/b.parquet")
    assert err.value.file == "data/reward_tables/r/b.parquet"
    assert "--force" in str(err.value) and "allow_degenerate_table" in str(err.value)
    stats = require_trainable(bad, allow=True, path="x")  # forced: the stats, no error
    assert stats["table/degenerate"] is True
    assert require_trainable(_run_data(healthy()), allow=False, path="x")["test/chance_accuracy"] \
        == pytest.approx(0.5)


def test_train_cli_has_force():
    out = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0 and "--force" in out.output
