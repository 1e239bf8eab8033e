"""Encoder policy: a pretrained encoder (default MiniLM) + peft LoRA + a subset head."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import AutoModel, AutoTokenizer

from fgpo.benchmarks.base import Question
from fgpo.errors import InputError
from fgpo.policy.base import Policy, PolicyConfig, policy_text, resolve_backbone
from fgpo.policy.heads import FactorizedHead, SubsetHead

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


class EncoderPolicy(Policy):
    def __init__(self, cfg: PolicyConfig, n_tools: int) -> None:
        super().__init__()
        self.cfg, self.n_subsets = cfg, 2 ** n_tools
        path = resolve_backbone(cfg.backbone)
        transformers.logging.set_verbosity_error()  # the unused pooler weights are expected
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")  # peft -> hf
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            base = AutoModel.from_pretrained(path, add_pooling_layer=False)
        except OSError as exc:
            raise InputError(f"cannot load backbone: {exc}".splitlines()[0], file=cfg.backbone,
                             field="train.policy.backbone") from exc
        lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                          target_modules=lora_target_regex(base, cfg.lora_target_modules,
                                                           cfg.lora_layers))
        self.backbone = get_peft_model(base, lora)
        head = SubsetHead if cfg.head == "subset" else FactorizedHead
        self.head = head(base.config.hidden_size, n_tools)
        self.input_ids = self.attention_mask = None

    def prepare(self, questions: list[Question]) -> None:
        enc = self.tokenizer([policy_text(q, self.cfg.sequence_window) for q in questions],
                             padding="max_length", truncation=True,
                             max_length=self.cfg.max_length, return_tensors="pt")
        self.input_ids, self.attention_mask = enc["input_ids"], enc["attention_mask"]

    def log_probs(self, idx: torch.Tensor) -> torch.Tensor:
        mask = self.attention_mask[idx]
        width = int(mask.sum(1).max())  # trim the batch to its longest input
        ids, mask = self.input_ids[idx, :width], mask[:, :width]
        hidden = self.backbone(input_ids=ids, attention_mask=mask).last_hidden_state
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # mean pooling
        return torch.log_softmax(self.head(pooled), dim=-1)

    def save_adapter(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(path)
        torch.save(self.head.state_dict(), path / "subset_head.pt")
