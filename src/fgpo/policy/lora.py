"""LoRA inside transformer blocks, shared by the encoder and causal-LM policies.

peft selects the modules itself: `target_modules` (name suffixes, e.g. query, value) within the
blocks `layers_to_transform` of the block list `layers_pattern` ("layer" in BERT, "layers" in
Llama/Qwen). Here we only find that block list and check, before peft runs, that every target
exists in the chosen blocks, so a typo names the backbone's block modules instead of failing in
peft with a bare "not found"."""

from __future__ import annotations

import re
from typing import Any

import torch
from peft import LoraConfig

from fgpo.errors import InputError

BLOCK = re.compile(r"(?:^|.*\.)(layers?)\.(\d+)\.(.+)$")  # <...>.layer(s).N.<name in the block>


def block_linears(model: torch.nn.Module) -> list[tuple[str, int, str]]:
    """(block list name, block index, name inside the block) of every linear module inside the
    transformer blocks (nn.Linear, and GPT-2-style transformers Conv1D)."""
    from transformers.pytorch_utils import Conv1D

    return [(m.group(1), int(m.group(2)), m.group(3)) for n, mod in model.named_modules()
            if isinstance(mod, (torch.nn.Linear, Conv1D)) and (m := BLOCK.match(n))]


def lora_config(model: torch.nn.Module, targets: list[str], layers: list[int],
                **kwargs: Any) -> LoraConfig:
    """peft's LoraConfig adapting `targets` in the blocks `layers` of `model` (all when empty;
    never a module outside the blocks, such as a pooler). Raises InputError naming a target
    that no chosen block has."""
    found = block_linears(model)
    patterns = sorted({p for p, _, _ in found})
    if len(patterns) != 1:
        raise InputError(f"cannot find the backbone's transformer blocks (a module list named "
                         f"layer or layers; found {patterns or 'none'})",
                         field="train.policy.backbone")
    chosen = sorted(set(layers)) if layers else sorted({i for _, i, _ in found})
    names = sorted({n for _, i, n in found if i in chosen})
    for t in targets:
        if not any(n == t or n.endswith("." + t) for n in names):
            raise InputError(f"LoRA target module {t!r} not found in the backbone's blocks; "
                             f"its blocks' Linear modules are {sorted({n for *_, n in found})}",
                             field="train.policy.lora_target_modules")
    return LoraConfig(target_modules=list(targets), layers_to_transform=chosen,
                      layers_pattern=patterns[0], **kwargs)
