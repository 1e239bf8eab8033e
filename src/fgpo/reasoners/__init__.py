"""Frozen reasoners: one interface (`Reasoner.answer`), several backends chosen by name.

rule   - five deterministic rule-based profiles (the embedded default, no weights)
vllm   - offline vLLM engine with prefix caching (GPU; optional extra `fgpo[vllm]`)
openai - any OpenAI-compatible endpoint (`vllm serve`, hosted APIs; extra `fgpo[openai]`)
hf     - a transformers causal LM from a local path or hub id
"""

from __future__ import annotations

import importlib

from fgpo.errors import InputError
from fgpo.reasoners.base import BACKENDS, Reasoner, ReasonerError, ReasonerSpec, Request  # noqa: F401

_MODULES = {"rule": ("fgpo.reasoners.rule", "RuleReasoner"),
            "vllm": ("fgpo.reasoners.vllm_backend", "VLLMReasoner"),
            "openai": ("fgpo.reasoners.openai_backend", "OpenAIReasoner"),
            "hf": ("fgpo.reasoners.hf", "HFReasoner")}


_EXTRAS = {"openai": "openai"}
"""Backends whose client library is an optional extra imported with the module (vllm's is
imported when the engine starts, with its own message)."""


def build_reasoner(spec: ReasonerSpec) -> Reasoner:
    """Instantiate the backend named by `spec.backend` (imported only when used)."""
    module, cls = _MODULES[spec.backend]
    try:
        backend = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        extra = _EXTRAS.get(spec.backend)
        if extra is None or exc.name != extra:
            raise
        raise InputError(f"backend {spec.backend!r} needs the {extra!r} extra: "
                         f"pip install -e '.[{extra}]'", field="backend") from None
    return getattr(backend, cls)(spec)
