"""The test split's metrics of a trained policy and its greedy subset per test question."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from fgpo.policy.base import Policy
from fgpo.rewards.table import RunData
from fgpo.tools.subsets import subset_tools
from fgpo.train.metrics import policy_metrics, predict


def evaluate_test(policy: Policy, data: RunData, group_size: int
                  ) -> tuple[dict[str, float], pd.DataFrame]:
    """(`test/...` metrics, the greedy choice per test question with its correctness, reward
    and probability), exactly from the reward table; `group_size` is the zero-signal metric's G."""
    table, idx = data.table, data.rows("test")
    logp = predict(policy, idx)
    test = policy_metrics(logp, table.correct[idx], table.reward[idx], table.n_tools, group_size)
    greedy = logp.argmax(1).numpy()
    selections = pd.DataFrame({
        "question_id": [table.question_ids[i] for i in idx],
        "family": table.families[idx], "mask": greedy,
        "tools": [",".join(subset_tools(m, data.tool_names)) for m in greedy],
        "n_tools": table.n_tools[greedy], "correct": table.correct[idx, greedy],
        "reward": table.reward[idx, greedy],
        "p_selected": logp.exp().numpy()[np.arange(len(greedy)), greedy]})
    return {f"test/{k}": v for k, v in test.items()}, selections


def evaluate_validation_points(policy: Policy, data: RunData,
                               states: dict[int, dict[str, torch.Tensor]],
                               history: list[dict[str, float]], group_size: int
                               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run's validation points (`train_run(..., keep_val_states=True)`), tested after
    training: (one row per point: its step, the distinct and repeated reasoner calls spent by
    then, its validation numbers (the only ones a selection may read) and the test numbers of
    its weights; the greedy choice per test question at each point, with a `step` column, for
    paired comparisons). The policy's own weights are put back afterwards."""
    by_step = {int(h["step"]): h for h in history}
    own = {k: v.detach().clone() for k, v in policy.state_dict().items() if k in
           next(iter(states.values()), {})}
    rows, choices = [], []
    for step, weights in sorted(states.items()):
        policy.load_state_dict(weights, strict=False)
        test, selections = evaluate_test(policy, data, group_size)
        h = by_step[step]
        rows.append({"step": step, "reward_evals_unique": h.get("train/reward_evals_unique", 0),
                     "reward_evals": h.get("train/reward_evals", 0),
                     **{k: v for k, v in h.items() if k.startswith("val/")}, **test})
        choices.append(selections.assign(step=step))
    policy.load_state_dict(own, strict=False)
    return pd.DataFrame(rows), pd.concat(choices, ignore_index=True)
