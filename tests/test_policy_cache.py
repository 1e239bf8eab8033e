"""The frozen-prefix cache: layers below the lowest adapted one run once per question set, and
the policy's log-probabilities, gradients and training metrics are those of the full forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.errors import InputError
from fgpo.policy import encoder
from fgpo.policy.base import PolicyConfig, resolve_backbone
from fgpo.policy.encoder import EncoderPolicy
from fgpo.rewards.table import RewardTable, RunData
from fgpo.train.config import TrainConfig
from fgpo.train.settings import resolve_device
from fgpo.train.loop import train_run

TOOLS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def questions():
    """Real benchmark questions (generated genomeqa and seqcalc: the texts the policy reads in
    the pipeline), of mixed token lengths."""
    qs = (generate("genomeqa", BenchmarkConfig(n_questions=12, seed=1), progress=False)
          + generate("seqcalc", BenchmarkConfig(n_questions=8, seed=1), progress=False))
    return qs


@pytest.fixture(autouse=True)
def own_cache_dir(tmp_path, monkeypatch):
    """Each test its own on-disk cache and an empty in-process one."""
    monkeypatch.setenv("FGPO_CACHE_DIR", str(tmp_path / "cache"))
    encoder._FROZEN.clear()


def _moved(cfg: PolicyConfig, questions, seed: int = 0) -> EncoderPolicy:
    """A policy whose head and LoRA B (zero at start) are moved, so log pi is not uniform and
    every adapted weight has a gradient."""
    torch.manual_seed(seed)
    p = EncoderPolicy(cfg, len(TOOLS))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, prm in sorted(p.named_parameters()):
            if prm.requires_grad:
                prm.add_(torch.randn(prm.shape, generator=gen) * 0.05)
    p.prepare(questions)
    return p.eval()


@pytest.mark.parametrize("layers, targets", [([5], ["query", "value"]),
                                             ([4, 5], ["query", "value"]),
                                             ([2, 5], ["query", "value"]),
                                             ([5], ["query", "key", "value"])])
def test_cached_log_probs_and_gradients_equal_the_full_forward(questions, layers, targets):
    full = _moved(PolicyConfig(lora_layers=layers, lora_target_modules=targets,
                               cache_frozen_layers=False), questions)
    cached = _moved(PolicyConfig(lora_layers=layers, lora_target_modules=targets,
                                 cache_frozen_layers=True), questions)
    assert full.frozen is None and cached.frozen is not None and cached.start == min(layers)
    # the first adapted layer's q/k/v base outputs are cached too: [3, questions, tokens, 384]
    assert full.proj is None and cached.proj.shape == (3, *cached.frozen.shape)
    idx = torch.arange(len(questions))  # the batch is trimmed to its longest input
    a, b = full.log_probs(idx), cached.log_probs(idx)
    assert a.std() > 1e-3  # not uniform: the comparison sees the weights
    torch.testing.assert_close(b, a, atol=1e-5, rtol=0)
    sub = torch.tensor([3, 0, 17])  # a sub-batch, shorter than the longest question
    torch.testing.assert_close(cached.log_probs(sub), full.log_probs(sub), atol=1e-5, rtol=0)
    weights = torch.randn(a.shape, generator=torch.Generator().manual_seed(1))
    (a * weights).sum().backward()
    (b * weights).sum().backward()
    grads = {n: q.grad for n, q in full.named_parameters() if q.requires_grad}
    assert len(grads) == 1 + 2 * len(targets) * len(layers) + 1  # head W, b + each A, B
    for n, q in cached.named_parameters():
        if q.requires_grad:
            assert grads[n].abs().max() > 0, n
            torch.testing.assert_close(q.grad, grads[n], atol=1e-5, rtol=1e-4)


def test_cached_states_are_the_backbones_own_hidden_states(questions):
    """Independent truth: transformers' own forward with output_hidden_states."""
    p = _moved(PolicyConfig(lora_layers=[4, 5]), questions)
    base = AutoModel.from_pretrained(resolve_backbone(p.cfg.backbone), add_pooling_layer=False)
    with torch.no_grad():
        ref = base.eval()(input_ids=p.input_ids, attention_mask=p.attention_mask,
                          output_hidden_states=True).hidden_states[4]
    keep = p.attention_mask.bool()
    torch.testing.assert_close(p.frozen[keep], ref[keep], atol=1e-5, rtol=0)


def test_a_change_of_max_length_window_or_layers_recomputes_the_cache(questions):
    encoder._FROZEN.clear()
    first = _moved(PolicyConfig(lora_layers=[5]), questions)
    again = _moved(PolicyConfig(lora_layers=[5]), questions, seed=1)  # another run, same input
    assert again.frozen is first.frozen and len(encoder._FROZEN) == 1  # computed once
    shorter = _moved(PolicyConfig(lora_layers=[5], max_length=32), questions)
    assert shorter.frozen.shape[1] == 32 and first.frozen.shape[1] == 48
    window = _moved(PolicyConfig(lora_layers=[5], sequence_window=8), questions)
    assert not torch.equal(window.frozen, first.frozen)
    lower = _moved(PolicyConfig(lora_layers=[4, 5]), questions)
    assert lower.start == 4 and not torch.equal(lower.frozen, first.frozen)
    fewer = _moved(PolicyConfig(lora_layers=[5]), questions[:5])  # another question set
    assert fewer.frozen.shape[0] == 5
    torch.testing.assert_close(fewer.frozen, first.frozen[:5], atol=1e-5, rtol=0)
    keys = {encoder.frozen_key(p.backbone_path, p.start, p.input_ids, p.attention_mask, "cpu")
            for p in (first, shorter, window, lower, fewer)}
    assert len(keys) == 5
    assert len(list(encoder.frozen_cache_dir().glob("*.pt"))) == 5  # one file each


def test_the_next_process_loads_the_states_from_disk(questions, monkeypatch):
    first = _moved(PolicyConfig(lora_layers=[4, 5]), questions)
    [path] = encoder.frozen_cache_dir().glob("*.pt")
    encoder._FROZEN.clear()  # a new process: nothing in memory

    def no_compute(*args, **kwargs):
        raise AssertionError("recomputed although a matching file is on disk")

    with monkeypatch.context() as m:
        m.setattr(EncoderPolicy, "_layers", staticmethod(no_compute))
        again = _moved(PolicyConfig(lora_layers=[4, 5]), questions)
    assert torch.equal(again.frozen, first.frozen)
    # a file whose recorded key differs (e.g. a truncated digest collision) is not trusted
    torch.save({"key": "something else", "hidden": torch.zeros(1)}, path)
    encoder._FROZEN.clear()
    third = _moved(PolicyConfig(lora_layers=[4, 5]), questions)
    torch.testing.assert_close(third.frozen, first.frozen, atol=0, rtol=0)
    assert torch.load(path, weights_only=True)["key"] != "something else"  # rewritten
    assert not list(encoder.frozen_cache_dir().glob("*.tmp"))


def _run_data(questions) -> RunData:
    rng = np.random.default_rng(0)
    n = len(questions)
    correct = (rng.random((n, 8)) < 0.5).astype(float)
    n_tools = np.array([bin(m).count("1") for m in range(8)])
    splits = np.array(["train"] * 14 + ["val"] * 3 + ["test"] * (n - 17))
    return RunData(questions, RewardTable(
        question_ids=[q.id for q in questions], splits=splits,
        families=np.array([q.family for q in questions]), reward=correct - 0.01 * n_tools,
        correct=correct, n_tools=n_tools, meta={"fingerprint": "t"}), TOOLS)


@pytest.mark.parametrize("method", ["fgpo", "grpo"])
def test_five_steps_with_and_without_the_cache_give_the_same_metrics(questions, method):
    data = _run_data(questions)
    runs = []
    for cache in (False, True):
        # MiniLM itself (the default policy), two epochs of 14 questions at a rate that moves it
        policy = PolicyConfig(lora_layers=[4, 5], cache_frozen_layers=cache)
        cfg = TrainConfig(epochs=2, batch_size=7, learning_rate=5e-3, evals_per_epoch=1,
                          checkpoint_every=5, policy=policy, allow_degenerate_table=True)
        runs.append(train_run(method, cfg, data, seed=0, progress=False))
    (a, b) = runs
    assert len(a.history) == len(b.history) > 2
    for ha, hb in zip(a.history, b.history):
        assert ha.keys() == hb.keys()
        for k in ha:
            assert ha[k] == pytest.approx(hb[k], abs=1e-5), (k, ha["step"])
    for k in a.final:
        assert a.final[k] == pytest.approx(b.final[k], abs=1e-5), k
    assert a.history[-1]["train/expected_reward"] != a.history[1]["train/expected_reward"]


def test_the_causal_lm_policy_refuses_the_cache_and_says_why():
    with pytest.raises(InputError, match="cache_frozen_layers: false") as e:
        PolicyConfig(kind="causal_lm", lora_layers=[10, 11])
    assert e.value.field == "train.policy.cache_frozen_layers"
    PolicyConfig(kind="causal_lm", lora_layers=[10, 11], cache_frozen_layers=False)
    PolicyConfig(kind="causal_lm", lora_layers=[])  # every layer adapted: nothing to cache


def test_device_cpu_works_and_cuda_is_refused_where_there_is_none(questions):
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(InputError, match="train.device"):
        TrainConfig(device="tpu")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: the refusal cannot happen here")
    with pytest.raises(InputError, match="sees no CUDA GPU; set train.device: cpu") as e:
        train_run("fgpo", TrainConfig(device="cuda", epochs=1, batch_size=4,
                                      allow_degenerate_table=True),
                  _run_data(questions), seed=0, progress=False)
    assert e.value.field == "train.device"


def test_a_one_question_input_example_does_not_evict_the_settings_states(questions):
    """Logging a run's model runs MLflow's input-example check through the encoder (a policy
    prepared on one question): the setting's states and projections must survive it, and a
    third question set evicts the least recently used."""
    encoder._FROZEN.clear()
    setting = _moved(PolicyConfig(lora_layers=[5]), questions)
    example = _moved(PolicyConfig(lora_layers=[5]), questions[:1])
    again = _moved(PolicyConfig(lora_layers=[5]), questions, seed=1)
    assert again.frozen is setting.frozen and again.proj is setting.proj  # not recomputed
    assert len(encoder._FROZEN) == 2 and all("proj" in e for e in encoder._FROZEN.values())
    third = _moved(PolicyConfig(lora_layers=[5]), questions[:3])
    assert len(encoder._FROZEN) == 2
    assert encoder._FROZEN.get(encoder.frozen_key(
        example.backbone_path, example.start, example.input_ids, example.attention_mask,
        "cpu")) is None  # the least recently used went
    assert third.frozen.shape[0] == 3 and encoder._FROZEN.get(encoder.frozen_key(
        again.backbone_path, again.start, again.input_ids, again.attention_mask,
        "cpu"))["hidden"] is setting.frozen


def test_the_step_timing_bench_drives_the_train_loops_own_step(questions):
    """bench/step_times.py (`make bench` and the GPU check) calls the train loop's optimizer and
    step functions directly: one timed step of every estimator, cached and not, so a change of
    their signatures breaks a test rather than the next benchmark run."""
    import math
    import sys
    from pathlib import Path

    from fgpo.train.estimators import ESTIMATORS
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from step_times import ms_per_step
    for method in ESTIMATORS:
        for cache in (False, True):
            ms = ms_per_step(questions, [5], cache, method, batch=2, repeats=1, mu=1)
            assert math.isfinite(ms) and ms > 0, (method, cache)
