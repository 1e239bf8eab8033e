"""Tier 3: training on a tiny encoder built in the test: LoRA moves, the base stays frozen;
both trainers find each family's best subset; seeded runs and resumed runs reproduce bit for
bit; bad inputs fail before training starts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from fgpo.errors import InputError
from fgpo.policy import build_policy
from fgpo.policy.base import DEFAULT_BACKBONE, PolicyConfig, resolve_backbone
from fgpo.evaluate import evaluate_test
from fgpo.question import Question
from fgpo.rewards.table import RewardTable, RunData
from fgpo.train.base import Batch
from fgpo.train.config import TrainConfig
from fgpo.train.estimators import ESTIMATORS
from fgpo.train.grpo import GRPOConfig
from fgpo.train.loop import config_hash, train_run
from fgpo.train.schedule import Schedule

TOOLS = ["composition", "motif_scan", "orf_finder"]  # K = 3: 8 subsets
BEST = {"gc": 0b001, "motif": 0b010, "orf": 0b110}    # each family's uniquely best subset


@pytest.fixture(scope="module")
def tiny_backbone(tmp_path_factory) -> str:
    """A 2-layer, 32-wide BERT with random weights and MiniLM's (offline) tokenizer."""
    path = tmp_path_factory.mktemp("tiny_bert")
    tok = AutoTokenizer.from_pretrained(resolve_backbone(DEFAULT_BACKBONE))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         max_position_embeddings=64), add_pooling_layer=False).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def synthetic_data(n_per_family: int = 12) -> RunData:
    """Questions whose text names the family; reward 1 only for the family's best subset, so
    the optimum is unique and known. (No tool cost here: GRPO's std normalisation blows a
    0.01 cost difference up to a unit advantage, and groups that miss the best subset then
    push towards the empty set; that is GRPO's behaviour, not what this test is about.)"""
    qs, fams = [], []
    for fam in BEST:
        for i in range(n_per_family):
            qs.append(Question(id=f"{fam}-{i:03d}", benchmark="synthetic", family=fam,
                               question=f"What does the {fam} analysis say about sample {i}?",
                               sequences={"seq": "ACGT" * 5}, options=["yes", "no"], answer=0,
                               split="train" if i < n_per_family - 4 else
                               ("val" if i < n_per_family - 2 else "test")))
            fams.append(fam)
    n_tools = np.array([bin(m).count("1") for m in range(8)])
    correct = np.array([[1.0 if m == BEST[f] else 0.0 for m in range(8)] for f in fams])
    return RunData(qs, RewardTable(question_ids=[q.id for q in qs],
                                   splits=np.array([q.split for q in qs]),
                                   families=np.array(fams), reward=correct,
                                   correct=correct, n_tools=n_tools, meta={"fingerprint": "t"}),
                   TOOLS)


def tiny_cfg(backbone: str, **kw) -> TrainConfig:
    # A 2-layer 32-wide encoder and 12 questions per family: the loop's code paths in seconds.
    policy = PolicyConfig(backbone=backbone, lora_target_modules=["query", "value"],
                          lora_layers=[], max_length=24, lora_r=4)
    # 24 train questions in batches of 8: 3 batches per epoch.
    base = dict(epochs=4, batch_size=8, learning_rate=1e-2, head_lr_mult=10.0, evals_per_epoch=2,
                checkpoint_every=5, warmup_ratio=0.0, lr_schedule="constant", beta=0.0,
                policy=policy, grpo=GRPOConfig(group_size=8, inner_epochs=2),
                allow_degenerate_table=True)  # tiny tables: val is too small for the noise check
    base.update(kw)
    return TrainConfig(**base)


def _lora_and_base(policy):
    lora = {n: p.detach().clone() for n, p in policy.named_parameters() if "lora_" in n}
    base = {n: p.detach().clone() for n, p in policy.named_parameters() if not p.requires_grad}
    return lora, base


def test_one_step_moves_lora_and_leaves_the_base_frozen(tiny_backbone):
    cfg = tiny_cfg(tiny_backbone)
    policy = build_policy(cfg.policy, 3, TOOLS, seed=0)
    data = synthetic_data()
    policy.prepare(data.questions)
    lora0, base0 = _lora_and_base(policy)
    assert lora0 and base0 and all(not p.requires_grad for n, p in policy.named_parameters()
                                   if "lora_" not in n and not n.startswith("head."))
    logp = policy.log_probs(torch.arange(8))
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(8))
    torch.testing.assert_close(logp, torch.full((8, 8), -np.log(8.0)))  # zero head: uniform
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    for _ in range(2):  # LoRA B starts at zero: its gradient needs the head to move first
        opt.zero_grad()
        (-policy.log_probs(torch.arange(8))[:, 3].mean()).backward()
        opt.step()
    lora1, base1 = _lora_and_base(policy)
    assert any(not torch.equal(lora0[n], lora1[n]) for n in lora0 if "lora_B" in n)
    assert all(torch.equal(base0[n], base1[n]) for n in base0)
    assert policy.log_probs(torch.arange(8))[:, 3].mean() > -np.log(8.0)


@pytest.mark.parametrize("method", ["fgpo", "grpo"])
def test_both_trainers_converge_to_each_familys_best_subset(tiny_backbone, method):
    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=20, head_lr_mult=3.0)
    result = train_run(method, cfg, data, seed=0, progress=False)
    assert not any(k.startswith("test/") for k in result.final)  # training never reads test
    test, sel = evaluate_test(result.policy, data, cfg.zero_signal_group_size)
    assert (sel["mask"] == sel["family"].map(BEST)).all(), sel
    assert test["test/accuracy"] == 1.0
    if method == "grpo":  # concentrated policy -> sampled groups collide -> no signal
        late = [h["train/zero_signal_frac"] for h in result.history[-6:]]
        assert np.mean(late) > 0.5
        assert result.final["budget/reward_evals"] == 20 * 24 * 8  # epochs x N x G
    else:  # every step reads its questions' 8 cells; each question's paid once with a cache
        assert result.final["budget/reward_evals"] == 20 * 24 * 8
        assert result.final["budget/reward_evals_unique"] == 24 * 8 == \
            result.final["budget/table_cells_train"]


@pytest.mark.parametrize("method", list(ESTIMATORS))  # every registered estimator
def test_seeded_runs_reproduce_bit_for_bit(tiny_backbone, method):
    data, cfg = synthetic_data(), tiny_cfg(tiny_backbone, epochs=2)
    a = train_run(method, cfg, data, seed=3, progress=False)
    b = train_run(method, cfg, data, seed=3, progress=False)
    assert a.history == b.history
    sa, sb = a.policy.state_dict(), b.policy.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    c = train_run(method, cfg, data, seed=4, progress=False)
    assert c.history != a.history


class _Interrupt:
    """A tracker that dies at a given step, as a killed process would."""

    run_id = None

    def __init__(self, at: int) -> None:
        self.at = at

    def log_metrics(self, metrics, step):
        if step == self.at:
            raise KeyboardInterrupt

    def flush(self):
        pass


@pytest.mark.parametrize("method", list(ESTIMATORS))  # every registered estimator
def test_resumed_run_ends_identical_to_an_uninterrupted_one(tiny_backbone, tmp_path, method):
    data, cfg = synthetic_data(), tiny_cfg(tiny_backbone, epochs=4, checkpoint_every=5)
    whole = train_run(method, cfg, data, seed=1, progress=False)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        train_run(method, cfg, data, seed=1, tracker=_Interrupt(at=8), checkpoint=ckpt,
                  progress=False)
    assert torch.load(ckpt, weights_only=False)["state"]["step"] == 5
    resumed = train_run(method, cfg, data, seed=1, checkpoint=ckpt, progress=False)
    assert resumed.history == whole.history
    sw, sr = whole.policy.state_dict(), resumed.policy.state_dict()
    assert all(torch.equal(sw[k], sr[k]) for k in sw)
    assert resumed.final == whole.final


class _OneSample:
    """A third estimator, written as a new one would be: REINFORCE with one subset per question
    (no baseline), drawn from pi; it only implements the fgpo.train.base interface."""

    name, Config, steps_per_batch = "one_sample", dict, 1

    def __init__(self, cfg, own, rewards, n_train, generator):
        self.rewards, self.generator, self.evals = rewards, generator, 0

    def collect(self, step, policy, next_batch):
        idx = next_batch()
        with torch.no_grad():
            masks = torch.multinomial(policy.log_probs(idx).exp(), 1, generator=self.generator)
        self.evals += len(idx)
        return _Sampled(idx, masks)

    def loss(self, policy, batch, ref_logp):
        logp = policy.log_probs(batch.idx)
        r = self.rewards[batch.idx].gather(1, batch.masks)
        loss = -(logp.gather(1, batch.masks) * r).mean()
        return loss, logp, {"zero_signal_frac": (r == 0).float().mean()}

    reward_evals = property(lambda self: self.evals)
    reward_evals_unique = property(lambda self: self.evals)

    def state_dict(self):
        return {"evals": self.evals}

    def load_state_dict(self, state):
        self.evals = state["evals"]


class _Sampled(Batch):
    def __init__(self, idx, masks):
        super().__init__(idx)
        self.masks = masks


def test_an_estimator_is_one_class_and_one_registry_entry(tiny_backbone, tmp_path, monkeypatch):
    """The loop knows estimators only through the registry: a new one trains, logs its own
    counts, checkpoints and resumes with no change to the loop."""
    assert TrainConfig().methods == list(ESTIMATORS)  # the config's default: every registered one
    monkeypatch.setitem(ESTIMATORS, "one_sample", _OneSample)
    data, cfg = synthetic_data(), tiny_cfg(tiny_backbone, epochs=2, checkpoint_every=2)
    cfg.one_sample = {}  # its settings section (TrainConfig gets one per estimator at import)
    whole = train_run("one_sample", cfg, data, seed=0, progress=False)
    assert [h["train/reward_evals"] for h in whole.history] == [0, 8, 16, 24, 32, 40, 48]
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        train_run("one_sample", cfg, data, seed=0, tracker=_Interrupt(at=3), checkpoint=ckpt,
                  progress=False)
    resumed = train_run("one_sample", cfg, data, seed=0, checkpoint=ckpt, progress=False)
    assert resumed.history == whole.history and resumed.final == whole.final
    with pytest.raises(InputError, match="unknown method"):
        train_run("ppo", cfg, data, seed=0, progress=False)


def test_bad_backbone_and_lora_targets_fail_before_training(tiny_backbone, tmp_path):
    data = synthetic_data()  # a train split at least batch_size large (else that fails first)
    with pytest.raises(InputError, match="train.policy.backbone"):
        train_run("fgpo", tiny_cfg(str(tmp_path / "no" / "such" / "model")), data, 0,
                  progress=False)
    bad = tiny_cfg(tiny_backbone)
    bad = replace(bad, policy=replace(bad.policy, lora_target_modules=["q_proj"]))
    with pytest.raises(InputError, match="lora_target_modules"):
        train_run("fgpo", bad, data, 0, progress=False)
    with pytest.raises(InputError, match="group_size"):
        tiny_cfg(tiny_backbone, grpo=GRPOConfig(group_size=1))
    with pytest.raises(InputError, match="train.methods"):
        tiny_cfg(tiny_backbone, methods=["ppo"])


@pytest.mark.parametrize("change, field", [
    (dict(learning_rate=-1e-3), "train.learning_rate"),
    (dict(learning_rate=0.0), "train.learning_rate"),
    (dict(learning_rate="1e-3"), "train.learning_rate"),   # YAML reads 1e-3 as a string
    (dict(head_lr_mult=0.0), "train.head_lr_mult"),
    (dict(evals_per_epoch=0), "train.evals_per_epoch"),
    (dict(epochs=0), "train.epochs"),
    (dict(checkpoint_rule="best"), "train.checkpoint_rule"),
    (dict(checkpoint_every=0), "train.checkpoint_every"),
    (dict(weight_decay=-0.1), "train.weight_decay"),
    (dict(max_grad_norm=0.0), "train.max_grad_norm"),
    (dict(beta=-0.01), "train.beta"),
    (dict(entropy_coef=-0.01), "train.entropy_coef"),
    (dict(eps=0.0), "train.eps"),
    (dict(threads=0), "train.threads"),
    (dict(seeds=[]), "train.seeds"),
    (dict(seeds=[0, 1, 0]), "train.seeds"),
    (dict(methods=[]), "train.methods"),
    (dict(methods=["fgpo", "fgpo"]), "train.methods"),
    (dict(batch_size=0), "train.batch_size"),
    (dict(grpo=dict(clip_eps=0.0)), "train.grpo.clip_eps"),
    (dict(grpo=dict(inner_epochs=0)), "train.grpo.inner_epochs"),
    (dict(policy=dict(lora_dropout=1.0)), "train.policy.lora_dropout"),
    (dict(policy=dict(lora_alpha=0)), "train.policy.lora_alpha"),
    (dict(policy=dict(max_length=0)), "train.policy.max_length"),
    (dict(policy=dict(lora_layers=[-1])), "train.policy.lora_layers"),
])
def test_out_of_range_settings_are_refused_by_the_config(change, field):
    """Validated when the config is built: before any model, data or tracking work. (A
    negative rate used to train silently worse; evals_per_epoch/checkpoint_every 0 crashed with a
    ZeroDivisionError after the model loaded.)"""
    nested = {"grpo": GRPOConfig, "policy": PolicyConfig}
    with pytest.raises(InputError) as exc:
        TrainConfig(**{k: nested[k](**v) if k in nested else v for k, v in change.items()})
    assert exc.value.field == field
    assert "must be" in str(exc.value) and "got" in str(exc.value)  # the range and the value


def test_batch_size_above_the_train_split_is_refused_before_the_model(tmp_path):
    data = synthetic_data()  # 3 families x 8 train questions
    n_train = len(data.rows("train"))
    # the backbone does not exist: the batch-size error must come first, before any loading
    cfg = tiny_cfg(str(tmp_path / "no" / "such" / "model"), batch_size=n_train + 1)
    with pytest.raises(InputError) as exc:
        train_run("fgpo", cfg, data, 0, progress=False)
    assert exc.value.field == "train.batch_size" and f"({n_train} questions)" in str(exc.value)


def _tiny_bert():
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, vocab_size=50))


def _adapted(model, targets, layers) -> list[str]:
    """The modules peft adapts under our config (the LoRA layers it inserted)."""
    from peft import get_peft_model

    from fgpo.policy.lora import lora_config
    peft_model = get_peft_model(model, lora_config(model, targets, layers, r=2))
    return sorted(n.removeprefix("base_model.model.").removesuffix(".lora_A")
                  for n, _ in peft_model.named_modules() if n.endswith(".lora_A"))


def test_lora_target_suggestion_lists_only_linear_modules():
    """The suggestion used to show one module from the middle of the list (an activation)."""
    from fgpo.policy.lora import lora_config

    model = _tiny_bert()
    with pytest.raises(InputError, match="train.policy.lora_target_modules") as exc:
        lora_config(model, ["q_proj"], [])
    listed = str(exc.value).split("Linear modules are ")[1]
    linear = {n.split(".", 3)[3] for n, m in model.named_modules()
              if isinstance(m, torch.nn.Linear) and n.startswith("encoder.layer.")}
    assert eval(listed) == sorted(linear)  # every block Linear suffix, and nothing else
    assert "attention.self.query" in listed and "act" not in listed
    with pytest.raises(InputError, match="'query' not found"):  # no block 7 in two layers
        lora_config(model, ["query"], [7])


def test_pooler_is_never_adapted():
    """BERT's bare `dense` also names the pooler; peft adapts inside the chosen blocks only."""
    hits = _adapted(_tiny_bert(), ["dense"], [])
    assert "pooler.dense" not in hits and len(hits) == 6  # 3 dense per block x 2 blocks
    assert _adapted(_tiny_bert(), ["attention.output.dense"], [1]) == [
        "encoder.layer.1.attention.output.dense"]
    assert _adapted(_tiny_bert(), ["query", "value"], [0]) == [
        "encoder.layer.0.attention.self.query", "encoder.layer.0.attention.self.value"]


def test_a_saved_adapter_loads_back_with_peft_and_gives_the_same_log_probs(tiny_backbone,
                                                                           tmp_path):
    """What `save_adapter` writes is a plain peft adapter (plus the head): PeftModel loads it
    onto a fresh backbone, and the policy's log-probabilities come out the same."""
    from peft import PeftModel
    from transformers import AutoModel

    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=1)
    cfg = replace(cfg, policy=replace(cfg.policy, lora_layers=[1]))
    trained = train_run("fgpo", cfg, data, seed=0, progress=False).policy
    assert any(float(p.abs().sum()) > 0 for n, p in trained.named_parameters() if "lora_B" in n)
    trained.save_adapter(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_config.json").exists()

    fresh = build_policy(cfg.policy, len(data.tool_names), data.tool_names, seed=1)
    fresh.prepare(data.questions)
    fresh.eval()
    rows = torch.arange(len(data.questions))
    untrained = fresh.log_probs(rows)
    fresh.backbone = PeftModel.from_pretrained(
        AutoModel.from_pretrained(tiny_backbone, add_pooling_layer=False), tmp_path / "adapter")
    fresh.head.load_state_dict(torch.load(tmp_path / "adapter" / "subset_head.pt"))
    fresh.prepare(data.questions)
    fresh.eval()
    torch.testing.assert_close(fresh.log_probs(rows), trained.log_probs(rows))
    assert not torch.allclose(untrained, trained.log_probs(rows), atol=1e-3)  # it moved


# ---- the declared schedule and the selected checkpoint ----------------------------------------

def test_schedule_arithmetic_by_hand():
    # 50 questions in batches of 16: 4 batches per epoch (16, 16, 16, 2); 3 epochs.
    fgpo = Schedule(n_train=50, batch_size=16, epochs=3, steps_per_batch=1, evals_per_epoch=2)
    grpo = Schedule(n_train=50, batch_size=16, epochs=3, steps_per_batch=2, evals_per_epoch=2)
    assert (fgpo.batches_per_epoch, fgpo.total_steps, grpo.total_steps) == (4, 12, 24)
    assert fgpo.question_visits == grpo.question_visits == 150
    assert fgpo.validation_steps() == [2, 4, 6, 8, 10, 12]      # after batches 2, 4, 6, ...
    assert grpo.validation_steps() == [4, 8, 12, 16, 20, 24]    # the same batches, mu = 2
    # more validation points than batches: one per batch
    assert Schedule(5, 4, 1, 1, 10).validation_steps() == [1, 2]


def test_log_spaced_validation_is_dense_early_and_the_same_visits_for_every_method():
    # 720 questions / 16 = 45 batches per epoch, 3 epochs = 135 batches, 12 points:
    # 135^(k/11) = 1, 1.56, 2.44, 3.81, 5.95, 9.29, 14.5, 22.7, 35.4, 55.3, 86.4, 135, rounded,
    # each at least one past the one before (1.56 and 2.44 both round to 2: 2, then 3)
    fgpo = Schedule(720, 16, 3, steps_per_batch=1, evals_per_epoch=4, spacing="log")
    grpo = Schedule(720, 16, 3, steps_per_batch=2, evals_per_epoch=4, spacing="log")
    assert fgpo.validation_batches() == [1, 2, 3, 4, 6, 9, 15, 23, 35, 55, 86, 135]
    assert grpo.validation_steps() == [2 * b for b in fgpo.validation_batches()]
    assert len(fgpo.validation_steps()) == len(Schedule(720, 16, 3, 1, 4).validation_steps())
    # six of twelve points inside the first quarter epoch (11 batches); even spacing: one
    assert sum(b <= 11 for b in fgpo.validation_batches()) == 6
    assert Schedule(10, 4, 1, 1, 5, "log").validation_batches() == [1, 2, 3]  # one per batch


class _Visits:
    """A tracker that records the train rows each method is handed (through the loop's log)."""

    run_id = None

    def __init__(self) -> None:
        self.metrics: list[dict] = []

    def log_metrics(self, metrics, step):
        self.metrics.append({"step": step, **metrics})

    def flush(self):
        pass


@pytest.mark.parametrize("epochs", [1, 3])
def test_both_methods_visit_every_train_question_epochs_times(tiny_backbone, monkeypatch,
                                                               epochs):
    """Count the rows each estimator actually draws: the same multiset for FGPO and GRPO,
    every train question exactly `epochs` times, although GRPO takes mu = 2 steps per batch.
    A train split of 24 in batches of 7 leaves a remainder batch (7, 7, 7, 3)."""
    from fgpo.train import loop

    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, epochs=epochs, batch_size=7)
    drawn: dict[str, list[int]] = {}
    original = loop.next_batch
    for method in ("fgpo", "grpo"):
        rows: list[int] = []

        def counting(*a, rows=rows, **kw):
            batch = original(*a, **kw)
            rows.extend(batch.tolist())
            return batch
        monkeypatch.setattr(loop, "next_batch", counting)
        result = train_run(method, cfg, data, seed=0, progress=False)
        drawn[method] = rows
        assert result.final["budget/question_visits"] == epochs * 24
        mu = cfg.grpo.inner_epochs if method == "grpo" else 1
        assert result.final["budget/optimizer_steps"] == epochs * 4 * mu
        if method == "grpo":  # one on-demand evaluation per sampled subset: epochs x N x G
            assert result.final["budget/reward_evals"] == epochs * 24 * cfg.grpo.group_size
    train_rows = data.rows("train").tolist()
    for method, rows in drawn.items():
        assert sorted(rows) == sorted(train_rows * epochs), method


@pytest.mark.parametrize("method", ["fgpo", "grpo"])
def test_the_selected_checkpoint_is_the_best_validation_point(tiny_backbone, method):
    """best_val: the returned policy is the one of the validation point with the highest
    val/expected_reward (re-validated here from scratch: its metrics equal that point's), and
    its final val/ numbers are that point's; last: the final step's."""
    from fgpo.train.loop import validate

    data = synthetic_data()
    # a rate high enough that the curve is not monotone on 6 validation questions
    cfg = tiny_cfg(tiny_backbone, epochs=6, evals_per_epoch=3, learning_rate=5e-2)
    result = train_run(method, cfg, data, seed=2, progress=False)
    points = [h for h in result.history if "val/expected_reward" in h]
    best = max(points, key=lambda h: (h["val/expected_reward"], -h["step"]))
    assert best["step"] < result.history[-1]["step"]  # the case under test: an earlier point
    assert result.final["checkpoint/step"] == best["step"]
    assert result.final["val/expected_reward"] == best["val/expected_reward"]
    again = validate(result.policy, data.table, data.rows("val"), cfg.zero_signal_group_size)
    assert again["expected_reward"] == pytest.approx(best["val/expected_reward"], abs=1e-6)
    assert again["accuracy"] == best["val/accuracy"]
    assert len(points) == 1 + 6 * 3  # step 0 and 3 per epoch, for either method

    last = train_run(method, replace(cfg, checkpoint_rule="last"), data, seed=2,
                     progress=False)
    def unmarked(history: list[dict]) -> list[dict]:
        return [{k: v for k, v in h.items() if k != "checkpoint/selected"} for h in history]
    # the rule changes only which policy is returned, and which point is marked selected
    assert unmarked(last.history) == unmarked(result.history)
    assert [h["step"] for h in result.history if "checkpoint/selected" in h] == [best["step"]]
    assert [h["step"] for h in last.history if "checkpoint/selected" in h] == [
        last.history[-1]["step"]]
    assert last.final["checkpoint/step"] == result.history[-1]["step"]
    again = validate(last.policy, data.table, data.rows("val"), cfg.zero_signal_group_size)
    assert again["expected_reward"] == pytest.approx(points[-1]["val/expected_reward"],
                                                     abs=1e-6)


def test_grpo_takes_one_policy_forward_per_step_and_the_same_loss_as_two(tiny_backbone):
    """At a sampling step pi_old is pi_theta, so GRPO's sampling forward (with grad) also gives
    that step's loss: mu = 2 costs 2 forwards per batch, not 3, and the loss (and its gradient)
    equals the one from a second, separate forward of the same weights."""
    from fgpo.train.grpo import grpo_loss
    from fgpo.train.loop import reference_logp

    data = synthetic_data()
    cfg = tiny_cfg(tiny_backbone, grpo=GRPOConfig(group_size=4, inner_epochs=2))
    policy = build_policy(cfg.policy, len(TOOLS), TOOLS, seed=0)
    policy.prepare(data.questions)
    policy.eval()
    rewards = torch.tensor(data.table.reward, dtype=torch.float32)
    est = ESTIMATORS["grpo"](cfg, cfg.grpo, rewards, 24, torch.Generator().manual_seed(1))
    ref = reference_logp("uniform", policy, 8)
    forwards = []
    original = policy.log_probs
    policy.log_probs = lambda idx: forwards.append(len(idx)) or original(idx)
    rows = iter([torch.arange(8), torch.arange(8, 16)])

    batch = est.collect(0, policy, lambda: next(rows))
    loss, logp, _ = est.loss(policy, batch, ref)
    assert forwards == [8]  # the sampling forward served the loss
    # the independent truth: the loss from a fresh forward of the same weights
    fresh = torch.log_softmax(original(batch.idx) / cfg.grpo.temperature, -1)
    truth, _ = grpo_loss(fresh.gather(1, batch.masks), batch.logp_old,
                         torch.full_like(batch.logp_old, -np.log(8)),
                         rewards[batch.idx].gather(1, batch.masks), cfg.grpo.clip_eps,
                         cfg.beta, cfg.eps)
    torch.testing.assert_close(loss, truth, rtol=0, atol=1e-7)
    loss.backward()  # the reused forward carries the graph to the LoRA weights and the head
    assert all(p.grad is not None for p in policy.trainable_parameters())
    assert est.collect(1, policy, lambda: next(rows)) is batch  # the second inner step
    est.loss(policy, batch, ref)
    assert forwards == [8, 8]  # weights may have moved: a new forward
    est.collect(2, policy, lambda: next(rows))
    assert forwards == [8, 8, 8]


@pytest.mark.parametrize("method", ["fgpo", "grpo"])
def test_a_non_finite_loss_stops_training_before_the_weights_take_it(tiny_backbone, method):
    """An infinite reward reaching the loop (past the table's own check) must not train on to
    NaN and report its last finite checkpoint as if healthy: the first non-finite loss stops."""
    from fgpo.errors import DivergedError

    data = synthetic_data()
    data.table.reward[:, 0] = float("inf")  # every question's empty subset
    cfg = tiny_cfg(tiny_backbone, epochs=1)
    with pytest.raises(DivergedError, match=r"step 1: the loss is (nan|inf|-inf)"):
        train_run(method, cfg, data, seed=0, progress=False)


def test_a_runs_key_covers_its_own_seed_but_not_the_seed_list_or_the_workers():
    """The runs cache's key: the frontier's seeds [0, 1, 2] read back the train stage's runs of
    seeds 0-2 trained under seeds [0, ..., 4]; another seed or another value is another run."""
    meta = {"fingerprint": "f", "reasoner": "r", "benchmark": "b"}
    cfg = TrainConfig(seeds=[0, 1, 2, 3, 4])
    key = config_hash(cfg, "fgpo", 1, meta)
    assert config_hash(replace(cfg, seeds=[0, 1, 2]), "fgpo", 1, meta) == key
    assert config_hash(replace(cfg, threads=1, workers=2), "fgpo", 1, meta) != key  # threads
    assert config_hash(replace(cfg, threads=1, workers=2), "fgpo", 1, meta) == \
        config_hash(replace(cfg, threads=1), "fgpo", 1, meta)
    assert config_hash(cfg, "fgpo", 2, meta) != key
    assert config_hash(cfg, "grpo", 1, meta) != key
    assert config_hash(replace(cfg, train_fraction=0.5), "fgpo", 1, meta) != key
    assert config_hash(cfg, "fgpo", 1, {**meta, "fingerprint": "g"}) != key
