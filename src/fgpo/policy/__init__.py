"""Tool-selection policies: log pi(S | q) over all 2^K subsets; `build_policy` picks the kind."""

from __future__ import annotations

import torch

from fgpo.policy.base import Policy, PolicyConfig


def build_policy(cfg: PolicyConfig, n_tools: int, tool_names: list[str], seed: int) -> Policy:
    """The policy of `cfg.kind`, its head initialised from `seed`."""
    torch.manual_seed(seed)
    if cfg.kind == "encoder":  # imported on demand: each kind pulls in its own model stack
        from fgpo.policy.encoder import EncoderPolicy
        return EncoderPolicy(cfg, n_tools)
    from fgpo.policy.causal_lm import CausalLMPolicy
    return CausalLMPolicy(cfg, tool_names)
