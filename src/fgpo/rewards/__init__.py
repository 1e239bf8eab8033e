"""Reward tables: r(q, S) for every question and tool subset, built once (`rewards.build`, which
asks the reasoners), read by training and the report (`rewards.table`, which does not)."""

from fgpo.rewards.table import RewardTable, RunData, load_reward_table  # noqa: F401
