"""Encoder policy: a pretrained encoder (default MiniLM) + peft LoRA + a subset head."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
import transformers
from peft import LoraConfig, get_peft_model
from transformers import AutoModel, AutoTokenizer

from fgpo.errors import InputError
from fgpo.policy.base import Policy, PolicyConfig, policy_text, resolve_backbone
from fgpo.policy.heads import FactorizedHead, SubsetHead
from fgpo.policy.lora import lora_target_regex
from fgpo.question import Question

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
