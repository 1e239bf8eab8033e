"""A run's cost in reasoner calls and its sub-table (`train.train_fraction`): the counters
equal an independent count of the cells the losses read, and a run on a sub-table reads no
other train row."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_training import synthetic_data, tiny_backbone, tiny_cfg  # noqa: E402,F401

from fgpo.errors import InputError  # noqa: E402
from fgpo.train.config import TrainConfig  # noqa: E402
from fgpo.train.estimators import ESTIMATORS  # noqa: E402
from fgpo.train.grpo import GRPOConfig  # noqa: E402
from fgpo.train.loop import train_run  # noqa: E402
from fgpo.train.subtable import sub_table_rows, sub_table_size  # noqa: E402


# ---- the draw ----------------------------------------------------------------------------------

def test_a_sub_table_is_a_seeded_nested_draw_of_the_train_rows():
    rows = np.arange(100, 820)  # 720 train rows somewhere in a table
    fractions = [0.05, 0.1, 0.25, 0.5, 1.0]
    drawn = {f: sub_table_rows(rows, f, seed=3) for f in fractions}
    assert [len(drawn[f]) for f in fractions] == [36, 72, 180, 360, 720]  # ceil(f x 720)
    for small, large in zip(fractions, fractions[1:]):
        assert set(drawn[small]) < set(drawn[large])  # nested for one seed
    assert set(drawn[1.0]) == set(rows) and drawn[1.0] is rows  # the split as it was given
    assert np.array_equal(drawn[0.25], sub_table_rows(rows, 0.25, seed=3))  # seeded
    assert not np.array_equal(drawn[0.25], sub_table_rows(rows, 0.25, seed=4))
    assert list(drawn[0.1]) == sorted(drawn[0.1])  # table order: the loop draws the data order
    # roughly uniform over the split: each half of it holds about half of a large draw
    assert abs(np.sum(drawn[0.5] < 460) - 180) < 40


@pytest.mark.parametrize("n, fraction, size", [(720, 0.1, 72), (10, 0.15, 2), (3, 0.01, 1),
                                               (7, 1.0, 7)])
def test_the_sub_table_size_is_the_ceiling_without_float_noise(n, fraction, size):
    assert sub_table_size(n, fraction) == size
    assert size == max(1, math.ceil(round(fraction * n, 9)))


@pytest.mark.parametrize("value", [0.0, -0.5, 1.5, float("nan")])
def test_a_train_fraction_outside_0_1_is_refused_naming_the_field(value):
    with pytest.raises(InputError, match="train_fraction") as err:
        TrainConfig(train_fraction=value)
    assert err.value.field == "train.train_fraction"


def test_a_sub_table_smaller_than_a_batch_is_refused_before_training(tiny_backbone):
    cfg = tiny_cfg(tiny_backbone, train_fraction=0.25)  # 6 of 24 questions, batches of 8
    with pytest.raises(InputError, match=r"keeps 6 of the 24 train questions") as err:
        train_run("fgpo", cfg, synthetic_data(), seed=0, progress=False)
    assert err.value.field == "train.train_fraction" and "0.333" in str(err.value)


# ---- what a sub-table run reads ----------------------------------------------------------------

@pytest.mark.parametrize("method", list(ESTIMATORS))
def test_a_sub_table_run_never_reads_a_train_row_outside_it(tiny_backbone, method):
    """Every train row outside the sub-table holds NaN rewards: one read of them makes the loss
    NaN, and the loop refuses to step on a NaN (DivergedError)."""
    data = synthetic_data()
    seed, fraction = 1, 0.5
    inside = sub_table_rows(data.rows("train"), fraction, seed)
    outside = np.setdiff1d(data.rows("train"), inside)
    assert len(inside) == len(outside) == 12
    data.table.reward[outside] = np.nan
    data.table.correct[outside] = np.nan
    cfg = tiny_cfg(tiny_backbone, epochs=2, train_fraction=fraction,
                   grpo=GRPOConfig(group_size=4, inner_epochs=2))
    result = train_run(method, cfg, data, seed=seed, progress=False)
    final = result.final
    assert final["budget/questions_seen"] == 12
    assert final["budget/table_cells_train"] == 12 * 8  # the sub-table's cells
    assert final["budget/reward_evals_unique"] <= 12 * 8
    # the whole split's schedule (2 epochs of 24 questions) on 12 questions, in full batches
    assert final["budget/question_visits"] == 2 * 24
    assert all(np.isfinite(h["train/loss"]) for h in result.history if "train/loss" in h)


# ---- the counters against an independent count -------------------------------------------------

def _record_reads(monkeypatch, cls) -> dict[int, object]:
    """Wrap `cls.loss` to keep every batch it is given (a batch's cells are what it reads)."""
    seen: dict[int, object] = {}
    original = cls.loss

    def loss(self, policy, batch, ref_logp):
        seen[id(batch)] = batch  # the batch object itself: its id is not reused while kept
        return original(self, policy, batch, ref_logp)

    monkeypatch.setattr(cls, "loss", loss)
    return seen


def test_fgpo_on_a_sub_table_counts_the_cells_it_read(tiny_backbone, monkeypatch):
    reads = _record_reads(monkeypatch, ESTIMATORS["fgpo"])
    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=3, train_fraction=0.5)
    result = train_run("fgpo", cfg, data, seed=2, progress=False)
    rows = [int(r) for b in reads.values() for r in b.idx]
    assert set(rows) <= set(sub_table_rows(data.rows("train"), 0.5, seed=2))
    assert result.final["budget/reward_evals_unique"] == len(set(rows)) * 8 == 12 * 8
    assert result.final["budget/reward_evals"] == len(rows) * 8 == 3 * 24 * 8
    # the curve: distinct cells grow with the questions first read, then stay
    unique = [h["train/reward_evals_unique"] for h in result.history]
    seen = [h["train/questions_seen"] for h in result.history]
    assert unique[0] == 0 and unique == [8 * s for s in seen] and unique == sorted(unique)


def test_grpo_with_a_tiny_group_counts_the_cells_it_read(tiny_backbone, monkeypatch):
    reads = _record_reads(monkeypatch, ESTIMATORS["grpo"])
    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=3, grpo=GRPOConfig(group_size=2, inner_epochs=2))
    result = train_run("grpo", cfg, data, seed=0, progress=False)
    groups = list(reads.values())  # each group batch serves mu = 2 steps, paid once
    cells = {(int(r), int(m)) for b in groups for r, ms in zip(b.idx, b.masks) for m in ms}
    assert result.final["budget/reward_evals_unique"] == len(cells)
    assert result.final["budget/reward_evals"] == sum(b.masks.numel() for b in groups) == \
        3 * 24 * 2
    assert len(cells) < 3 * 24 * 2  # with G = 2 over 3 epochs, draws repeat: the cache's saving


# ---- every validation point's weights, tested after training -----------------------------------

def test_kept_validation_points_change_nothing_and_test_as_the_selected_policy(tiny_backbone):
    from fgpo.evaluate import evaluate_test, evaluate_validation_points

    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=2, grpo=GRPOConfig(group_size=4, inner_epochs=2))
    plain = train_run("grpo", cfg, data, seed=0, progress=False)
    kept = train_run("grpo", cfg, data, seed=0, progress=False, keep_val_states=True)
    assert plain.final == kept.final and plain.history == kept.history and not plain.val_states
    val_steps = [h["step"] for h in kept.history if "val/accuracy" in h]
    assert sorted(kept.val_states) == val_steps and val_steps[0] == 0

    selected, chosen = evaluate_test(kept.policy, data, cfg.zero_signal_group_size)
    points, per_question = evaluate_validation_points(kept.policy, data, kept.val_states,
                                                      kept.history, cfg.zero_signal_group_size)
    at_step = per_question[per_question.step == kept.final["checkpoint/step"]]
    assert at_step.drop(columns="step").reset_index(drop=True).equals(chosen)
    assert len(per_question) == len(val_steps) * len(data.rows("test"))
    assert list(points.step) == val_steps
    at = points.set_index("step").loc[kept.final["checkpoint/step"]]
    for key, value in selected.items():
        assert at[key] == value  # the selected checkpoint's row is the selected policy's test
    assert at["val/expected_reward"] == kept.final["val/expected_reward"]
    assert points.reward_evals_unique.is_monotonic_increasing
    assert points.reward_evals_unique.iloc[0] == 0
    again, _ = evaluate_test(kept.policy, data, cfg.zero_signal_group_size)
    assert again == selected  # the policy's own weights were put back


def test_a_resumed_sub_table_run_keeps_its_counts_and_validation_points(tiny_backbone, tmp_path):
    from test_training import _Interrupt

    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=4, checkpoint_every=5, train_fraction=0.5)
    whole = train_run("fgpo", cfg, data, seed=1, progress=False, keep_val_states=True)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        train_run("fgpo", cfg, data, seed=1, tracker=_Interrupt(at=8), checkpoint=ckpt,
                  progress=False, keep_val_states=True)
    resumed = train_run("fgpo", cfg, data, seed=1, checkpoint=ckpt, progress=False,
                        keep_val_states=True)
    assert resumed.history == whole.history and resumed.final == whole.final
    assert sorted(resumed.val_states) == sorted(whole.val_states)
    assert all(torch.equal(resumed.val_states[s][k], v)
               for s, state in whole.val_states.items() for k, v in state.items())
