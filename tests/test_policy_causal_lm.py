"""CausalLMPolicy on a tiny randomly initialised Llama (no download): normalisation, prefix reuse
equal to brute-force scoring (values and gradients), a LoRA training step, bad config errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from fgpo.errors import InputError
from fgpo.policy.base import PolicyConfig, policy_text
from fgpo.policy.causal_lm import PROMPT_SUFFIX, CausalLMPolicy, verbalise
from fgpo.question import Question

TOOLS = ["gc_content", "motif_scan", "orf_finder"]
QUESTIONS = [
    Question(id="q0", benchmark="b", family="f", question="Is the GC content above 50%?",
             sequences={"seq": "ACGTGGCCGCGATATTGCA"}, options=["yes", "no"], answer=0),
    Question(id="q1", benchmark="b", family="f", question="Does it contain a TATA box?",
             sequences={"seq": "TTATAAAAGGCACGT"}, options=["yes", "no"], answer=1),
    Question(id="q2", benchmark="b", family="f", question="Same reading frame?",
             sequences={"seq1": "ATGAAACCCTAG", "seq2": "ATGCCCGGGTTTTGA"},
             options=["yes", "no"], answer=0),
]


@pytest.fixture(scope="module")
def backbone(tmp_path_factory: pytest.TempPathFactory) -> str:
    corpus = [policy_text(q, 48) + PROMPT_SUFFIX for q in QUESTIONS]
    corpus += [verbalise(m, TOOLS) for m in range(2 ** len(TOOLS))] * 5
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=fast.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        eos_token_id=fast.eos_token_id))
    path = tmp_path_factory.mktemp("tiny_llama")
    fast.save_pretrained(path)
    model.save_pretrained(path)
    return str(path)


def make_policy(backbone: str, **overrides: object) -> CausalLMPolicy:
    cfg = PolicyConfig(kind="causal_lm", backbone=backbone, lora_r=4,
                       lora_target_modules=["q_proj", "v_proj"], **{"max_length": 512, **overrides})
    torch.manual_seed(1)
    policy = CausalLMPolicy(cfg, TOOLS)
    policy.prepare(QUESTIONS)
    return policy


def randomise_lora(policy: CausalLMPolicy) -> None:
    """Non-zero LoRA B, so the adapters change the forward (B starts at zero)."""
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)


def brute_force_log_probs(policy: CausalLMPolicy, q: Question) -> torch.Tensor:
    """One uncached forward of prompt + continuation per subset, renormalised over subsets."""
    tok = policy.tokenizer
    prompt = tok(policy_text(q, policy.cfg.sequence_window) + PROMPT_SUFFIX)["input_ids"]
    logliks = []
    for m in range(policy.n_subsets):
        cont = tok(verbalise(m, TOOLS), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        ids = torch.tensor([prompt + cont])
        logp = torch.log_softmax(policy.model(input_ids=ids).logits[0], dim=-1)
        positions = torch.arange(len(prompt) - 1, ids.shape[1] - 1)
        logliks.append(logp[positions, ids[0, len(prompt):]].sum())
    return torch.log_softmax(torch.stack(logliks), dim=0)


def test_rows_normalised(backbone: str) -> None:
    policy = make_policy(backbone)
    with torch.no_grad():
        lp = policy.log_probs(torch.arange(len(QUESTIONS)))
    assert lp.shape == (len(QUESTIONS), 8)
    assert torch.allclose(lp.exp().sum(1), torch.ones(len(QUESTIONS)), atol=1e-6)
    assert lp.std(1).min() > 0  # the LM actually discriminates the subsets


def test_prefix_reuse_equals_brute_force(backbone: str) -> None:
    policy = make_policy(backbone)
    randomise_lora(policy)
    lora = [p for n, p in policy.model.named_parameters() if "lora_A" in n or "lora_B" in n]
    weights = torch.linspace(-1.0, 1.0, 8)  # a loss touching every subset

    fast = policy.log_probs(torch.arange(len(QUESTIONS)))
    fast_grads = torch.autograd.grad((fast * weights).sum(), lora)
    slow = torch.stack([brute_force_log_probs(policy, q) for q in QUESTIONS])
    slow_grads = torch.autograd.grad((slow * weights).sum(), lora)

    assert torch.allclose(fast, slow, atol=1e-5), (fast - slow).abs().max()
    # Gradients must flow through the cached prompt pass too, not only the continuations.
    for g_fast, g_slow in zip(fast_grads, slow_grads):
        assert torch.allclose(g_fast, g_slow, atol=1e-5), (g_fast - g_slow).abs().max()


def test_prompt_truncated_from_left(backbone: str) -> None:
    policy = make_policy(backbone, max_length=6)
    full = policy.tokenizer(policy_text(QUESTIONS[0], 48) + PROMPT_SUFFIX)["input_ids"]
    assert len(full) > 6
    assert policy.prompts[0].tolist() == full[-6:]


def test_training_step_moves_lora_only(backbone: str) -> None:
    policy = make_policy(backbone)
    base = {n: p.detach().clone() for n, p in policy.model.named_parameters()
            if "lora_" not in n}
    assert all(not p.requires_grad for n, p in policy.model.named_parameters() if n in base)
    idx, chosen = torch.arange(len(QUESTIONS)), 5  # {gc_content, orf_finder}
    with torch.no_grad():
        before = policy.log_probs(idx)[:, chosen]

    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    loss = -policy.log_probs(idx)[:, chosen].mean()
    opt.zero_grad()
    loss.backward()
    opt.step()

    with torch.no_grad():
        after = policy.log_probs(idx)[:, chosen]
    params = dict(policy.model.named_parameters())
    assert any(p.abs().sum() > 0 for n, p in params.items() if "lora_B" in n)
    assert all(torch.equal(params[n], v) for n, v in base.items())
    assert (after > before).all(), (before, after)


def test_bad_config_names_field(backbone: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="train.policy.lora_target_modules"):
        CausalLMPolicy(PolicyConfig(kind="causal_lm", backbone=backbone,
                                    lora_target_modules=["nonexistent_proj"]), TOOLS)
    with pytest.raises(InputError, match="train.policy.backbone"):
        CausalLMPolicy(PolicyConfig(kind="causal_lm", backbone=str(tmp_path / "missing"),
                                    lora_target_modules=["q_proj"]), TOOLS)
    with pytest.raises(InputError, match="train.policy.backbone"):
        CausalLMPolicy(PolicyConfig(kind="causal_lm", backbone=str(tmp_path),  # no model files
                                    lora_target_modules=["q_proj"]), TOOLS)
