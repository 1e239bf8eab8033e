"""HF and vLLM reasoner backends, offline.

HF: a tiny randomly initialised Llama with a byte-level BPE tokenizer trained here, saved to a
temporary folder and loaded through `build_reasoner` (nothing is downloaded).
vLLM: the real package is absent, so the missing-extra error is checked, then the engine wiring
is checked against a fake `vllm` package injected into sys.modules.
"""

from __future__ import annotations

import os
import random
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import torch

os.environ["HF_HUB_OFFLINE"] = "1"

from fgpo.errors import InputError  # noqa: E402
from fgpo.question import Question  # noqa: E402
from fgpo.reasoners import ReasonerSpec, Request, build_reasoner  # noqa: E402
from fgpo.reasoners.prompt import SYSTEM, render_messages, render_prompt  # noqa: E402
from fgpo.tools.base import ToolOutput  # noqa: E402

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


# ---- fixtures: questions, requests, a tiny random model -------------------------------------

def _dna(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("ACGT") for _ in range(n))


def _questions() -> list[Question]:
    rng = random.Random(0)
    return [
        Question(id="q2", benchmark="t", family="gc", question="Is the GC content above 50%?",
                 sequences={"seq": _dna(rng, 40)}, options=["yes", "no"], answer=0),
        Question(id="q1", benchmark="t", family="orf", question="How many ORFs are there?",
                 sequences={"seq": _dna(rng, 24)}, options=["0", "1", "2", "3"], answer=2),
        Question(id="q3", benchmark="t", family="var", question="Which base changed?",
                 sequences={"ref": _dna(rng, 16), "alt": _dna(rng, 16)},
                 options=["A", "C", "G", "T"], answer=3),
    ]


@pytest.fixture(scope="module")
def requests_() -> list[Request]:
    q2, q1, q3 = _questions()
    gc = ToolOutput(text="composition: GC 55.0%, length 40 bp.", data={"gc": 0.55})
    orf = ToolOutput(text="orf_finder: 1 ORF at 3..20 (+).", data={"n": 1})
    # interleaved questions and different lengths: exercises sorting and left padding
    return [Request(q2, 0), Request(q1, 1, {"orf_finder": orf}),
            Request(q2, 1, {"composition": gc}), Request(q3, 0), Request(q1, 0),
            Request(q3, 3, {"composition": gc, "orf_finder": orf})]


def _corpus() -> list[str]:
    rng = random.Random(1)
    words = (SYSTEM + " Question Options Sequence Tool outputs none Answer with the letter of "
             "exactly one option GC content ORF base changed yes no bp composition").split()
    lines = [SYSTEM, "A) B) C) D) A, B, C, D"]
    for _ in range(300):
        lines.append(" ".join(rng.choice(words) for _ in range(8)) + " " + _dna(rng, 30))
    return lines


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Plain and chat-template copies of a random Llama; the tokenizer has an eos, no pad."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=2048, initializer_range=0.2,
                         eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    model = LlamaForCausalLM(config)
    root = tmp_path_factory.mktemp("tiny")
    paths = {"plain": root / "plain", "chat": root / "chat"}
    for kind, path in paths.items():
        tok.chat_template = CHAT_TEMPLATE if kind == "chat" else None
        tok.save_pretrained(path)
        model.save_pretrained(path)
    return paths


def _hf(path: Path, **kw: Any):
    return build_reasoner(ReasonerSpec(backend="hf", model=str(path), **kw))


# ---- HF backend --------------------------------------------------------------------------------

def test_hf_generate_deterministic_and_batch_invariant(tiny_model, requests_) -> None:
    one = _hf(tiny_model["plain"], decoding="generate", max_new_tokens=6, batch_size=1)
    four = _hf(tiny_model["plain"], decoding="generate", max_new_tokens=6, batch_size=4)
    a = one.answer(requests_)
    assert len(a) == len(requests_) and all(isinstance(t, str) for t in a)
    assert any(a), "the random model should emit some text"
    assert one.answer(requests_) == a
    assert four.answer(requests_) == a  # left padding leaves every row's greedy path unchanged
    assert one.tokenizer.pad_token == "<eos>"


def test_hf_choice_matches_unpadded_argmax(tiny_model, requests_) -> None:
    r = _hf(tiny_model["plain"], decoding="choice", batch_size=4)
    got = r.answer(requests_)
    expected = []
    with torch.inference_mode():
        for req in requests_:
            text = render_prompt(req.question, req.evidence) + "\nAnswer:"
            ids = r.tokenizer(text, return_tensors="pt")["input_ids"]
            last = r.model(input_ids=ids).logits[0, -1]
            letters = "ABCD"[: len(req.question.options)]
            ids_ = [r.tokenizer.encode(c, add_special_tokens=False) for c in letters]
            assert all(len(i) == 1 for i in ids_)
            expected.append(letters[int(torch.stack([last[i[0]] for i in ids_]).argmax())])
    assert got == expected
    for req, letter in zip(requests_, got):
        assert letter in list("ABCD"[: len(req.question.options)])


def test_hf_choice_computes_the_last_positions_logits_only(tiny_model, requests_) -> None:
    """logits_to_keep=1: the model returns [batch, 1, vocab], not a row per prompt token."""
    r = _hf(tiny_model["plain"], decoding="choice", batch_size=4)
    shapes = []
    r.model.register_forward_hook(lambda mod, args, out: shapes.append(tuple(out.logits.shape)))
    r.answer(requests_[:4])
    assert shapes and all(s[1] == 1 for s in shapes), shapes


def test_hf_prompt_text_plain_and_chat(tiny_model, requests_) -> None:
    req = requests_[1]
    plain = _hf(tiny_model["plain"])
    assert plain.prompt_text(req) == render_prompt(req.question, req.evidence) + "\nAnswer:"
    chat = _hf(tiny_model["chat"], decoding="choice")
    text = chat.prompt_text(req)
    assert text.startswith(f"<|system|>\n{SYSTEM}\n")
    assert render_messages(req.question, req.evidence)[1]["content"] in text
    assert "orf_finder: 1 ORF" in text and text.endswith("<|assistant|>\n")
    for req, letter in zip(requests_, chat.answer(requests_)):
        assert letter in list("ABCD"[: len(req.question.options)])


def test_hf_dtype_and_close(tiny_model) -> None:
    r = _hf(tiny_model["plain"], dtype="bfloat16")
    assert r.model.dtype == torch.bfloat16
    r.close()
    assert r.model is None


@pytest.mark.parametrize("model", ["./no/such/model", "/no/such/model", "no/such/model"])
def test_hf_missing_local_path(model: str) -> None:
    with pytest.raises(InputError, match="field 'model'") as e:
        build_reasoner(ReasonerSpec(backend="hf", model=model))
    assert e.value.field == "model"


def test_hf_hub_id_is_not_a_path_error() -> None:
    # "org/name" is a hub id: offline, the hub lookup fails, not the path check
    with pytest.raises(OSError):
        build_reasoner(ReasonerSpec(backend="hf", model="fgpo-test/no-such-model"))


# ---- vLLM backend (real package absent; fake package for the wiring) -------------------------

def test_vllm_missing_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import fails even where vllm is installed
    with pytest.raises(InputError, match=r"fgpo\[vllm\]"):
        build_reasoner(ReasonerSpec(backend="vllm", model="x"))


@pytest.fixture
def fake_vllm(monkeypatch) -> types.SimpleNamespace:
    rec = types.SimpleNamespace(llm=None, calls=[])

    class StructuredOutputsParams:
        def __init__(self, choice: list[str]) -> None:
            self.choice = choice

    class SamplingParams:
        def __init__(self, temperature: float = 1.0, max_tokens: int = 16,
                     structured_outputs: StructuredOutputsParams | None = None) -> None:
            self.temperature, self.max_tokens = temperature, max_tokens
            self.structured_outputs = structured_outputs

    class LLM:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            rec.llm = self

        def chat(self, messages, sampling_params, use_tqdm: bool = True):
            assert not use_tqdm and len(messages) == len(sampling_params)
            rec.calls.append((messages, sampling_params))
            # echo the user message so the test can tell which prompt each answer belongs to
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=m[1]["content"])])
                    for m in messages]

    sp = types.ModuleType("vllm.sampling_params")
    sp.StructuredOutputsParams, sp.SamplingParams = StructuredOutputsParams, SamplingParams
    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams, vllm.sampling_params = LLM, SamplingParams, sp
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sp)
    return rec


def test_vllm_wiring_structured(fake_vllm, requests_) -> None:
    spec = ReasonerSpec(backend="vllm", model="m", batch_size=4, max_new_tokens=3,
                        tensor_parallel_size=2, gpu_memory_utilization=0.5, max_model_len=1024,
                        dtype="bfloat16")
    r = build_reasoner(spec)
    assert fake_vllm.llm.kwargs == dict(model="m", enable_prefix_caching=True,
                                        tensor_parallel_size=2, gpu_memory_utilization=0.5,
                                        max_model_len=1024, dtype="bfloat16")
    out = r.answer(requests_)
    assert out == [render_prompt(q.question, q.evidence) for q in requests_]
    assert [len(m) for m, _ in fake_vllm.calls] == [4, 2]
    by_prompt = {render_prompt(q.question, q.evidence): q for q in requests_}
    sent = [(by_prompt[m[1]["content"]], m, p) for ms, ps in fake_vllm.calls
            for m, p in zip(ms, ps)]
    assert [q.question.id for q, _, _ in sent] == ["q1", "q1", "q2", "q2", "q3", "q3"]
    for q, m, p in sent:
        assert m == render_messages(q.question, q.evidence)
        assert p.temperature == 0.0 and p.max_tokens == 3
        assert p.structured_outputs.choice == list("ABCD"[: len(q.question.options)])
    r.close()
    assert r.llm is None


def test_vllm_unstructured(fake_vllm, requests_) -> None:
    r = build_reasoner(ReasonerSpec(backend="vllm", model="m", structured_choice=False))
    assert len(r.answer(requests_)) == len(requests_)
    (_, params), = fake_vllm.calls
    assert all(p.structured_outputs is None and p.temperature == 0.0 for p in params)
