"""Reward tables: r(q, S) for every question and tool subset, built once, read by training."""

from fgpo.rewards.table import (RewardTable, RewardTableConfig, build_table,  # noqa: F401
                                load_reward_table, subset_evidence)
