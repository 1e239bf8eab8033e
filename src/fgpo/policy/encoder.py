"""Encoder policy: a pretrained encoder (default MiniLM) + peft LoRA + a subset head.

Frozen-prefix cache: the layers below the lowest adapted one hold no trainable weight and the
policy runs in eval mode (no dropout), so the hidden states entering that layer are a fixed
function of a question's tokens. With `cache_frozen_layers` they are computed once per question
set (`prepare`, no grad, batched) and kept in memory; every step then runs only the adapted
layers, the pooling and the head. A copy on disk ($FGPO_CACHE_DIR/frozen, for a backbone in a
local folder) lets the next process of the same benchmark (another reasoner's setting) load it
instead of recomputing; its name is a digest of everything the states depend on.

The first adapted layer's query, key and value projections are linear maps of those cached
states, so their frozen parts (the base weights' outputs; a LoRA adapter only adds its own
low-rank term) are cached as well: per step that layer computes the adapters' terms, the
attention, its output and the feed-forward block, not the three projections (a quarter of the
layer's multiply-adds; BERT-style layers, else the layer runs whole).
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections import OrderedDict
from pathlib import Path

import torch
import transformers
from peft import get_peft_model, load_peft_weights, set_peft_model_state_dict
from tqdm import tqdm
from peft.tuners.lora import LoraLayer
from transformers import AutoModel, AutoTokenizer
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward

from fgpo.config import cache_dir
from fgpo.errors import InputError
from fgpo.policy.base import Policy, PolicyConfig, policy_text, resolve_backbone
from fgpo.policy.heads import FactorizedHead, SubsetHead
from fgpo.policy.lora import lora_config
from fgpo.question import Question

# BERT-style encoders (embeddings, then encoder.layer[i](hidden, mask)) the cache can split.
CACHEABLE = ("bert", "roberta", "xlm-roberta", "electra", "camembert", "mpnet")
# Layers whose self-attention is BERT's (query/key/value, then the attention interface): their
# projections' frozen parts can be cached (mpnet's relative attention cannot).
PROJECTABLE = ("BertLayer", "RobertaLayer", "XLMRobertaLayer", "ElectraLayer", "CamembertLayer")
QKV = ("query", "key", "value")

class Memo(OrderedDict):
    """The last `size` entries used (least recently used out first): a training process
    alternates between one setting's question set and, when it logs each run's model, MLflow's
    check of a one-question input example; two entries keep the first from being recomputed
    after every run, and no more than two question sets stay in memory."""

    def __init__(self, size: int = 2) -> None:
        super().__init__()
        self.size = size

    def get(self, key: str) -> dict[str, torch.Tensor] | None:
        if key in self:
            self.move_to_end(key)
        return super().get(key)

    def put(self, key: str, value: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


# cache key -> {"hidden": the hidden states entering the first adapted layer, [N, max_length,
# H]; "proj": that layer's frozen projections of them, [3, N, T, H], once computed}. The key
# holds everything they depend on (backbone, first adapted layer, the token ids, which fix the
# texts, tokenizer, max_length and sequence_window, and the device), so every run of a setting
# in one process (methods x seeds) shares one entry and any change computes a new one.
_FROZEN = Memo()


def frozen_key(backbone: str, start: int, input_ids: torch.Tensor,
               attention_mask: torch.Tensor, device: torch.device | str) -> str:
    """The cache key of the frozen hidden states: a digest of everything that changes them (the
    backbone and, for a local folder, its files' names, sizes and times; the first adapted
    layer; the token ids, which fix texts, tokenizer, max_length and sequence_window; the
    device, whose kernels round differently)."""
    h = hashlib.sha256(f"{backbone}|layer<{start}|{torch.device(device).type}|".encode())
    folder = Path(backbone)
    if folder.is_dir():
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                st = f.stat()
                h.update(f"{f.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}|".encode())
    h.update(str(tuple(input_ids.shape)).encode())
    h.update(input_ids.cpu().numpy().tobytes())
    h.update(attention_mask.cpu().numpy().tobytes())
    return h.hexdigest()


def frozen_cache_dir() -> Path:
    """Where the frozen states are kept on disk ($FGPO_CACHE_DIR/frozen)."""
    return cache_dir() / "frozen"


class EncoderPolicy(Policy):
    def __init__(self, cfg: PolicyConfig, n_tools: int) -> None:
        super().__init__()
        self.cfg, self.n_subsets = cfg, 2 ** n_tools
        path = self.backbone_path = resolve_backbone(cfg.backbone)
        transformers.logging.set_verbosity_error()  # the unused pooler weights are expected
        transformers.logging.disable_progress_bar()  # a "Loading weights" bar per run: noise
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")  # peft -> hf
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            base = AutoModel.from_pretrained(path, add_pooling_layer=False)
        except OSError as exc:
            raise InputError(f"cannot load backbone: {exc}".splitlines()[0], file=cfg.backbone,
                             field="train.policy.backbone") from exc
        lora = lora_config(base, cfg.lora_target_modules, cfg.lora_layers, r=cfg.lora_r,
                           lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout)
        self.backbone = get_peft_model(base, lora)
        head = SubsetHead if cfg.head == "subset" else FactorizedHead
        self.head = head(base.config.hidden_size, n_tools)
        self.input_ids = self.attention_mask = None
        # ---- the first adapted layer: everything below it is cached (0 = no cache) ----
        n_layers = base.config.num_hidden_layers
        adapted = [layer for layer in cfg.lora_layers if layer < n_layers]
        self.start = min(adapted) if cfg.cache_frozen_layers and adapted else 0
        if self.start and base.config.model_type not in CACHEABLE:
            raise InputError(f"cache_frozen_layers needs a BERT-style encoder "
                             f"({', '.join(CACHEABLE)}); this backbone is "
                             f"{base.config.model_type!r}. Set train.policy.cache_frozen_layers: "
                             f"false", file=cfg.backbone, field="train.policy.cache_frozen_layers")
        self.frozen: torch.Tensor | None = None  # [N, T, H] entering layer `start`, or None
        self.proj: torch.Tensor | None = None    # [3, N, T, H] its q/k/v base outputs, or None

    def prepare(self, questions: list[Question]) -> None:
        enc = self.tokenizer([policy_text(q, self.cfg.sequence_window) for q in questions],
                             padding="max_length", truncation=True,
                             max_length=self.cfg.max_length, return_tensors="pt")
        device = self.device
        self.input_ids = enc["input_ids"].to(device)
        self.attention_mask = enc["attention_mask"].to(device)
        self.frozen = self._frozen_hidden() if self.start > 0 else None
        self.proj = self._frozen_projections() if self.frozen is not None and \
            self.cfg.cache_frozen_projections else None

    @torch.no_grad()
    def _frozen_hidden(self, batch_size: int = 256) -> torch.Tensor:
        """The hidden states entering layer `start` for every prepared question, in eval mode,
        memoised in this process (`_FROZEN`)."""
        key = frozen_key(self.backbone_path, self.start, self.input_ids, self.attention_mask,
                         self.device)
        if (entry := _FROZEN.get(key)) is not None:
            return entry["hidden"]
        on_disk = frozen_cache_dir() / f"{key[:32]}.pt" if Path(self.backbone_path).is_dir() \
            else None  # a hub name says nothing about the weights' revision: memory only
        if on_disk is not None and on_disk.exists():
            saved = torch.load(on_disk, map_location=self.device, weights_only=True)
            if saved["key"] == key:
                return _FROZEN.put(key, {"hidden": saved["hidden"]})["hidden"]
        bert = self.backbone.get_base_model()
        was_training = bert.training
        bert.eval()  # no dropout: the states are a pure function of the tokens
        chunks = []
        starts = range(0, len(self.input_ids), batch_size)
        for i in tqdm(starts, desc=f"frozen layers 0-{self.start - 1}", unit="batch",
                      disable=len(starts) < 8, leave=False):
            ids, mask = self.input_ids[i:i + batch_size], self.attention_mask[i:i + batch_size]
            chunks.append(self._layers(bert, bert.embeddings(input_ids=ids), mask,
                                       bert.encoder.layer[:self.start]))
        bert.train(was_training)
        hidden = torch.cat(chunks)
        if on_disk is not None:  # written whole or not at all (a kill, a parallel DVC worker)
            on_disk.parent.mkdir(parents=True, exist_ok=True)
            tmp = on_disk.with_suffix(f".{os.getpid()}.tmp")
            torch.save({"key": key, "hidden": hidden.cpu()}, tmp)
            os.replace(tmp, on_disk)
        return _FROZEN.put(key, {"hidden": hidden})["hidden"]

    @torch.no_grad()
    def _frozen_projections(self, batch_size: int = 256) -> torch.Tensor | None:
        """The base (frozen) query, key and value outputs of the first adapted layer for every
        prepared question, memoised with the frozen states (`_FROZEN`); None where the layer is
        not BERT-style or an adapter is not plain LoRA (then the layer runs whole)."""
        layer = self.backbone.get_base_model().encoder.layer[self.start]
        sa = getattr(getattr(layer, "attention", None), "self", None)
        if type(layer).__name__ not in PROJECTABLE or sa is None or \
                getattr(layer, "chunk_size_feed_forward", 0) or \
                not all(_plain_lora(getattr(sa, n)) for n in QKV):
            return None
        key = frozen_key(self.backbone_path, self.start, self.input_ids, self.attention_mask,
                         self.device)
        entry = _FROZEN.get(key) or _FROZEN.put(key, {"hidden": self.frozen})
        if "proj" not in entry:
            bases = [_base(getattr(sa, n)) for n in QKV]
            entry["proj"] = torch.stack([
                torch.cat([b(self.frozen[i:i + batch_size])
                           for i in range(0, len(self.frozen), batch_size)]) for b in bases])
        return entry["proj"]

    def _first_adapted(self, layer: torch.nn.Module, hidden: torch.Tensor, proj: torch.Tensor,
                       attn: torch.Tensor | None) -> torch.Tensor:
        """BertLayer's forward with its projections' frozen parts read from `proj` [3, B, T, H]
        (the same operations as transformers' BertSelfAttention, BertSelfOutput and the
        feed-forward block; `hidden` is the layer's input)."""
        sa = layer.attention.self
        shape = (*hidden.shape[:-1], -1, sa.attention_head_size)
        q, k, v = (_lora_terms(getattr(sa, n), hidden, proj[i]).view(shape).transpose(1, 2)
                   for i, n in enumerate(QKV))
        attention = ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation,
                                                          eager_attention_forward)
        context, _ = attention(sa, q, k, v, attn, dropout=sa.dropout.p if sa.training else 0.0,
                               scaling=sa.scaling)
        context = context.reshape(*hidden.shape[:-1], -1).contiguous()
        return layer.feed_forward_chunk(layer.attention.output(context, hidden))

    @staticmethod
    def _layers(bert: torch.nn.Module, hidden: torch.Tensor, mask: torch.Tensor,
                layers: torch.nn.ModuleList) -> torch.Tensor:
        attn = create_bidirectional_mask(config=bert.config, inputs_embeds=hidden,
                                         attention_mask=mask)
        for layer in layers:
            hidden = layer(hidden, attn)
        return hidden

    def log_probs(self, idx: torch.Tensor) -> torch.Tensor:
        idx = idx.to(self.input_ids.device)
        mask = self.attention_mask[idx]
        width = int(mask.sum(1).max())  # trim the batch to its longest input
        mask = mask[:, :width]
        if self.frozen is None:
            ids = self.input_ids[idx, :width]
            hidden = self.backbone(input_ids=ids, attention_mask=mask).last_hidden_state
        else:  # padded keys are masked, so trimming the cached states changes nothing
            bert = self.backbone.get_base_model()
            layers = bert.encoder.layer[self.start:]
            hidden = self.frozen[idx, :width]
            if self.proj is not None:
                attn = create_bidirectional_mask(config=bert.config, inputs_embeds=hidden,
                                                 attention_mask=mask)
                hidden = self._first_adapted(layers[0], hidden, self.proj[:, idx, :width], attn)
                layers = layers[1:]
            hidden = self._layers(bert, hidden, mask, layers) if len(layers) else hidden
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # mean pooling
        return torch.log_softmax(self.head(pooled), dim=-1)

    def save_adapter(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.backbone.save_pretrained(path)
        torch.save(self.head.state_dict(), path / "subset_head.pt")

    def load_adapter(self, path: Path) -> None:
        set_peft_model_state_dict(self.backbone, load_peft_weights(str(path), device="cpu"))
        self.head.load_state_dict(torch.load(path / "subset_head.pt", map_location="cpu",
                                             weights_only=True))


def _plain_lora(module: torch.nn.Module) -> bool:
    """A frozen Linear, or peft's LoRA Linear with plain (not DoRA or other variant) adapters,
    unmerged: its output is the base's plus the adapters' terms."""
    if isinstance(module, LoraLayer):
        return isinstance(module.get_base_layer(), torch.nn.Linear) and not module.merged \
            and not getattr(module, "lora_variant", {})
    return isinstance(module, torch.nn.Linear) and not module.weight.requires_grad


def _base(module: torch.nn.Module) -> torch.nn.Module:
    return module.get_base_layer() if isinstance(module, LoraLayer) else module


def _lora_terms(module: torch.nn.Module, x: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
    """`module(x)` given its base output `base`: plus each active adapter's
    lora_B(lora_A(dropout(x))) * scaling, as peft's LoRA Linear computes it."""
    if not isinstance(module, LoraLayer) or module.disable_adapters:
        return base
    out = base
    for name in module.active_adapters:
        if name in module.lora_A:
            out = out + module.lora_B[name](module.lora_A[name](module.lora_dropout[name](x))) \
                * module.scaling[name]
    return out
