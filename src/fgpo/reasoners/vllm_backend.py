"""Offline vLLM engine with automatic prefix caching (GPU; optional extra `fgpo[vllm]`).

All 2^K prompts of a question share the prefix before the tool evidence (see
fgpo.reasoners.prompt), so requests are sorted by question id before batching: prompts of one
question sit together and reuse the cached prefix. Answers come back in the caller's order.
"""

from __future__ import annotations

import gc
from typing import Any

from fgpo.errors import InputError
from fgpo.reasoners.base import Reasoner, ReasonerSpec, Request
from fgpo.reasoners.prompt import option_letters, render_messages

MISSING = ("backend 'vllm' needs the optional extra: pip install 'fgpo[vllm]' (a GPU machine "
           "with CUDA); or use backend 'openai' against a `vllm serve` server")


class VLLMReasoner(Reasoner):
    """Greedy chat completions from `vllm.LLM`, optionally constrained to the option letters."""

    def __init__(self, spec: ReasonerSpec) -> None:
        try:
            import vllm
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as e:
            raise InputError(MISSING, field="backend") from e
        self.spec = spec
        self._sampling_params = vllm.SamplingParams
        self._structured = StructuredOutputsParams
        self.llm: Any = vllm.LLM(model=spec.model, enable_prefix_caching=True,
                                 tensor_parallel_size=spec.tensor_parallel_size,
                                 gpu_memory_utilization=spec.gpu_memory_utilization,
                                 max_model_len=spec.max_model_len, dtype=spec.dtype)

    def sampling_params(self, request: Request) -> Any:
        """Greedy decoding; with `structured_choice`, only the question's option letters."""
        kwargs: dict[str, Any] = {"temperature": 0.0, "max_tokens": self.spec.max_new_tokens}
        if self.spec.structured_choice:
            kwargs["structured_outputs"] = self._structured(choice=option_letters(request.question))
        return self._sampling_params(**kwargs)

    def answer(self, requests: list[Request]) -> list[str]:
        # stable sort: a question's prompts stay in the caller's (mask) order
        order = sorted(range(len(requests)), key=lambda i: requests[i].question.id)
        out: list[str] = [""] * len(requests)
        for start in range(0, len(order), self.spec.batch_size):
            chunk = order[start:start + self.spec.batch_size]
            batch = [requests[i] for i in chunk]
            outputs = self.llm.chat([render_messages(r.question, r.evidence) for r in batch],
                                    [self.sampling_params(r) for r in batch], use_tqdm=False)
            for i, o in zip(chunk, outputs):
                out[i] = o.outputs[0].text
        return out

    def close(self) -> None:
        import torch

        self.llm = None
        gc.collect()  # the engine holds reference cycles; free its GPU memory now
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
