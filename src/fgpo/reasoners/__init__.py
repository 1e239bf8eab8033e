"""Frozen reasoners: one interface (`Reasoner.answer`), several backends chosen by name.

rule   - five deterministic rule-based profiles (the embedded default, no weights)
vllm   - offline vLLM engine with prefix caching (GPU; optional extra `fgpo[vllm]`)
openai - any OpenAI-compatible endpoint (`vllm serve`, hosted APIs)
hf     - a transformers causal LM from a local path or hub id
"""

from __future__ import annotations

import importlib

from fgpo.reasoners.base import BACKENDS, Reasoner, ReasonerError, ReasonerSpec, Request  # noqa: F401

_MODULES = {"rule": ("fgpo.reasoners.rule", "RuleReasoner"),
            "vllm": ("fgpo.reasoners.vllm_backend", "VLLMReasoner"),
            "openai": ("fgpo.reasoners.openai_backend", "OpenAIReasoner"),
            "hf": ("fgpo.reasoners.hf", "HFReasoner")}


def build_reasoner(spec: ReasonerSpec) -> Reasoner:
    """Instantiate the backend named by `spec.backend` (imported only when used)."""
    module, cls = _MODULES[spec.backend]
    return getattr(importlib.import_module(module), cls)(spec)
