"""Causal-LM policy: any HF causal LM + peft LoRA scoring every verbalised tool subset.

log pi(S | q) is the log-likelihood of " tool_a, tool_b<eos>" (" none<eos>" for the empty set)
after the prompt, renormalised over all 2^K subsets. Each prompt runs once and its KV cache is
repeated for the 2^K continuations (prefix reuse): two forwards per question, not 2^K.
"""

from __future__ import annotations

from pathlib import Path

import torch
from peft import get_peft_model, load_peft_weights, set_peft_model_state_dict
from transformers import AutoModelForCausalLM, AutoTokenizer

from fgpo.errors import InputError
from fgpo.policy.base import Policy, PolicyConfig, policy_text, resolve_backbone
from fgpo.policy.lora import lora_config
from fgpo.question import Question
from fgpo.tools.subsets import subset_tools

PROMPT_SUFFIX = "\nTools to use:"


def verbalise(mask: int, tool_names: list[str]) -> str:
    """Subset mask -> its continuation text (the eos token follows it); bit i = tool_names[i]."""
    names = subset_tools(mask, tool_names)
    return " " + (", ".join(names) if names else "none")


class CausalLMPolicy(Policy):
    def __init__(self, cfg: PolicyConfig, tool_names: list[str]) -> None:
        super().__init__()
        self.cfg, self.n_subsets = cfg, 2 ** len(tool_names)
        path = resolve_backbone(cfg.backbone)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            base = AutoModelForCausalLM.from_pretrained(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot load causal LM: {exc}".splitlines()[0], file=cfg.backbone,
                             field="train.policy.backbone") from exc
        tok = self.tokenizer
        if tok.eos_token_id is None:
            raise InputError("the backbone's tokenizer has no eos token (it ends each subset)",
                             file=cfg.backbone, field="train.policy.backbone")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        tok.truncation_side = "left"  # long prompts keep their end, next to the continuation
        lora = lora_config(base, cfg.lora_target_modules, cfg.lora_layers, r=cfg.lora_r,
                           lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                           task_type="CAUSAL_LM")
        self.model = get_peft_model(base, lora)

        # The continuations are the same for every question: tokenised once, right-padded.
        conts = [tok(verbalise(m, tool_names), add_special_tokens=False)["input_ids"]
                 + [tok.eos_token_id] for m in range(self.n_subsets)]
        width = max(map(len, conts))
        self.register_buffer("cont_ids", torch.tensor(
            [c + [tok.pad_token_id] * (width - len(c)) for c in conts]), persistent=False)
        self.register_buffer("cont_mask", torch.tensor(
            [[1] * len(c) + [0] * (width - len(c)) for c in conts]), persistent=False)
        self.prompts: list[torch.Tensor] = []

    def prepare(self, questions: list[Question]) -> None:
        texts = [policy_text(q, self.cfg.sequence_window) + PROMPT_SUFFIX for q in questions]
        enc = self.tokenizer(texts, truncation=True, max_length=self.cfg.max_length)
        self.prompts = [torch.tensor(ids) for ids in enc["input_ids"]]  # unpadded, one per q

    def log_probs(self, idx: torch.Tensor) -> torch.Tensor:
        logliks = torch.stack([self.sequence_logliks(self.prompts[i]) for i in idx.tolist()])
        return torch.log_softmax(logliks, dim=-1)

    def sequence_logliks(self, prompt: torch.Tensor) -> torch.Tensor:
        """[2^K] log p(continuation_m | prompt), from one prompt forward and one batched
        continuation forward over the prompt's repeated KV cache."""
        n, ids, mask = self.n_subsets, self.cont_ids, self.cont_mask
        prompt = prompt.to(ids.device)[None]
        p = prompt.shape[1]
        out = self.model(input_ids=prompt, use_cache=True)
        cache = out.cache
        cache.batch_repeat_interleave(n)
        # Token 0 of each continuation is predicted by the prompt's last logits ...
        first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)[ids[:, 0]]
        # ... tokens 1.. by the continuation forward (its last input token predicts nothing).
        rest = self.model(input_ids=ids[:, :-1], cache=cache,
                          attention_mask=torch.cat([mask.new_ones(n, p), mask[:, :-1]], dim=1),
                          position_ids=torch.arange(p, p + ids.shape[1] - 1,
                                                    device=ids.device).expand(n, -1)).logits
        rest = rest.float()
        token_lp = rest.gather(-1, ids[:, 1:, None])[..., 0] - rest.logsumexp(-1)
        return first + (token_lp * mask[:, 1:]).sum(dim=1)

    def save_adapter(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)

    def load_adapter(self, path: Path) -> None:
        set_peft_model_state_dict(self.model, load_peft_weights(str(path), device="cpu"))
