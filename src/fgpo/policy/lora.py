"""LoRA targets inside transformer blocks, shared by the encoder and causal-LM policies."""

from __future__ import annotations

import re

import torch

from fgpo.errors import InputError

# Adapters go inside transformer blocks only: "layer.N.<...>.<target>" (never the pooler).
BLOCK = r"(?:^|.*\.)layers?\.(\d+)\.(?:.*\.)?"


def block_linear_names(model: torch.nn.Module) -> list[str]:
    """The valid LoRA targets: the names, relative to their block ("layer.N."), of the linear
    modules inside the transformer blocks (nn.Linear, and GPT-2-style transformers Conv1D)."""
    from transformers.pytorch_utils import Conv1D

    block = re.compile(r"(?:^|.*\.)layers?\.\d+\.(.+)$")
    found = {m.group(1) for n, mod in model.named_modules()
             if isinstance(mod, (torch.nn.Linear, Conv1D)) and (m := block.match(n))}
    return sorted(found)


def lora_target_regex(model: torch.nn.Module, targets: list[str], layers: list[int]) -> str:
    """A regex matching exactly the block modules named by `targets` (dotted suffixes).

    Raises InputError naming the missing target when the backbone has no such module.
    """
    names = [n for n, _ in model.named_modules()]
    found = []
    for t in targets:
        pat = re.compile(BLOCK + re.escape(t) + "$")
        hits = [n for n in names if pat.match(n) and (not layers or int(pat.match(n).group(1))
                                                     in layers)]
        if not hits:
            raise InputError(f"LoRA target module {t!r} not found in the backbone's blocks; "
                             f"its blocks' Linear modules are {block_linear_names(model)}",
                             field="train.policy.lora_target_modules")
        found += hits
    return "^(" + "|".join(re.escape(n) for n in sorted(set(found))) + ")$"
