"""The frozen-reasoner interface: a batch of (question, tool-subset evidence) -> raw answers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from fgpo.errors import InputError, ReasonerError  # noqa: F401 (the backends raise it)
from fgpo.question import Question
from fgpo.tools.base import ToolOutput

BACKENDS = ("rule", "vllm", "openai", "hf")


@dataclass
class ReasonerSpec:
    """One reasoner under `reward_table.reasoners.<name>` in params.yaml.

    Only the fields of the chosen backend are read. Secrets never live here: the OpenAI
    backend names the environment variable holding the key (`api_key_env`).
    """

    backend: str = "rule"
    """rule | vllm | openai | hf."""
    profile: str = ""
    """rule: the profile name (see fgpo.reasoners.rule.PROFILES)."""
    model: str = ""
    """vllm / hf: local path or hub id of the weights; openai: the served model name."""
    base_url: str = ""
    """openai: endpoint root, e.g. http://localhost:8000/v1 (a `vllm serve` server)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: name of the environment variable holding the API key (never the key itself)."""
    structured_choice: bool = True
    """vllm / openai: constrain the answer to the option letters with vLLM structured outputs
    (`SamplingParams(structured_outputs=StructuredOutputsParams(choice=...))`, or
    `extra_body={"structured_outputs": {"choice": ...}}` against a vLLM server). Set false
    for servers that are not vLLM."""
    max_new_tokens: int = 8
    """Generation budget of the answer (letters need few; raise for thinking models)."""
    batch_size: int = 64
    """Prompts per backend call (hf: per generate; vllm: per engine call)."""
    concurrency: int = 16
    """openai: requests in flight at once."""
    timeout_s: float = 60.0
    """openai: per-request timeout in seconds."""
    max_retries: int = 5
    """openai: retries with exponential back-off (on 429, 5xx, timeouts, connection errors)."""
    decoding: str = "generate"
    """hf: `generate` (greedy text, parsed) or `choice` (argmax over the option letters' next-
    token logits, the likelihood evaluation used by lm-eval for multiple choice)."""
    dtype: str = "auto"
    """hf / vllm: torch dtype of the weights (auto | bfloat16 | float16 | float32)."""
    tensor_parallel_size: int = 1
    """vllm: GPUs per engine."""
    gpu_memory_utilization: float = 0.85
    """vllm: fraction of GPU memory for weights + KV cache."""
    max_model_len: int = 4096
    """vllm: context length (prompts are at most ~2.5k tokens at K=6)."""
    latency_s: float = 0.0
    """rule: artificial per-call latency, to exercise resume and progress like an LLM."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"unknown backend {self.backend!r}; choose one of {list(BACKENDS)}",
                             field="backend")
        if self.backend == "rule" and not self.profile:
            raise InputError("backend 'rule' needs a profile", field="profile")
        if self.backend in ("vllm", "hf", "openai") and not self.model:
            raise InputError(f"backend {self.backend!r} needs a model",
                             field="model")
        if self.backend == "openai" and not self.base_url:
            raise InputError("backend 'openai' needs base_url",
                             field="base_url")
        if self.decoding not in ("generate", "choice"):
            raise InputError("decoding must be 'generate' or 'choice'",
                             field="decoding")

    def public(self) -> dict[str, Any]:
        """The spec as recorded in tables, journals and MLflow: the key itself never lives in it
        (only `api_key_env`, its variable's name), and a password in `base_url` is masked."""
        from dataclasses import asdict

        from fgpo.redact import redact
        return redact(asdict(self))


@dataclass
class Request:
    """One reward-table cell: a question and the evidence of one tool subset.

    `evidence` holds the selected tools' cached outputs in bit (tool) order.
    """

    question: Question
    mask: int
    evidence: dict[str, ToolOutput] = field(default_factory=dict)


class Reasoner(ABC):
    """A frozen reasoner. `answer` returns one raw text answer per request, in order."""

    spec: ReasonerSpec

    @abstractmethod
    def answer(self, requests: list[Request]) -> list[str]: ...

    def close(self) -> None:
        """Release engines, sessions or GPU memory (default: nothing)."""
