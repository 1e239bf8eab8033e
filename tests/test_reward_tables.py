"""Reward tables: complete, resumable without repeating or losing a call, validated on load;
table statistics against hand computation and brute-force enumeration."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from fgpo.benchmarks import generate
from fgpo.benchmarks.config import BenchmarkConfig
from fgpo.errors import InputError
from fgpo.reasoners import Reasoner, ReasonerError, ReasonerSpec, build_reasoner
from fgpo.rewards.stats import table_stats, uniform_zero_signal
from fgpo.rewards.build import RewardTableConfig, build_table
from fgpo.rewards.table import RewardTable, load_reward_table
from fgpo.seqio import read_parquet_metadata
from fgpo.tools.toolset import ToolsConfig, build_tools, require_fingerprint

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SPEC = ReasonerSpec(backend="rule", profile="overloaded_generalist")
# 12 questions x 64 subsets = 768 cells: enough shards (2 questions each) to interrupt mid-way.
CFG = RewardTableConfig(tool_cost=0.01, shard_questions=2, reasoners={"r": SPEC}, build=["r"])


@pytest.fixture(scope="module")
def small():
    qs = generate("genomeqa", BenchmarkConfig(n_questions=12, seed=4), progress=False)
    cfg = ToolsConfig()
    tools = build_tools(cfg)
    return qs, {q.id: {t.name: t.run(q.sequences) for t in tools} for q in qs}, cfg


class Counting(Reasoner):
    """Wraps a reasoner: counts every cell asked; optionally dies after `fail_after` batches."""

    def __init__(self, inner: Reasoner, fail_after: int | None = None, exc=KeyboardInterrupt):
        self.inner, self.spec, self.fail_after, self.exc = inner, inner.spec, fail_after, exc
        self.cells: list[tuple[str, int]] = []
        self.batches = 0

    def answer(self, requests):
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise self.exc("backend went away")
        self.batches += 1
        self.cells += [(r.question.id, r.mask) for r in requests]
        return self.inner.answer(requests)


def _build(small, out, reasoner=None):
    qs, outs, cfg = small
    return build_table(qs, outs, cfg, "r", SPEC, CFG, out, "genomeqa", reasoner=reasoner,
                       progress=False)


def test_table_is_complete_and_rewards_follow_answers(small, tmp_path):
    qs, _, cfg = small
    path = _build(small, tmp_path / "t.parquet")
    df = pd.read_parquet(path)
    assert len(df) == len(qs) * 64 and not df.duplicated(["question_id", "mask"]).any()
    answer = {q.id: q.answer for q in qs}
    assert (df.correct == (df.parsed == df.question_id.map(answer))).all()
    np.testing.assert_allclose(df.reward, df.correct - 0.01 * df.n_tools, atol=1e-6)
    assert (df.n_tools == df["mask"].map(lambda m: bin(m).count("1"))).all()
    meta = read_parquet_metadata(path)
    assert meta["reasoner_calls"] == len(df) and meta["K"] == 6 and meta["tools"] == cfg.names
    assert not list(tmp_path.glob("*.journal.jsonl"))
    table = load_reward_table(path, cfg.names)
    assert table.reward.shape == (12, 64)


@pytest.mark.parametrize("exc", [KeyboardInterrupt, ReasonerError])
def test_interrupted_build_resumes_without_repeating_or_losing_calls(small, tmp_path, exc):
    reference = pd.read_parquet(_build(small, tmp_path / "ref.parquet"))
    out = tmp_path / "t.parquet"
    first = Counting(build_reasoner(SPEC), fail_after=3, exc=exc)
    with pytest.raises(exc):
        _build(small, out, first)
    assert not out.exists() and first.batches == 3
    second = Counting(build_reasoner(SPEC))
    _build(small, out, second)
    asked = first.cells + second.cells
    assert len(asked) == len(set(asked)) == 12 * 64  # each cell asked exactly once
    pd.testing.assert_frame_equal(pd.read_parquet(out), reference)
    assert read_parquet_metadata(out)["reasoner_calls"] == 12 * 64


def test_torn_journal_line_is_dropped_and_recomputed(small, tmp_path):
    out = tmp_path / "t.parquet"
    with pytest.raises(KeyboardInterrupt):
        _build(small, out, Counting(build_reasoner(SPEC), fail_after=2))
    journal = tmp_path / "t.parquet.journal.jsonl"
    n_lines = journal.read_text().count("\n")
    with journal.open("a") as fh:
        fh.write('{"q": "genomeqa-promoter-0000')  # killed mid-write
    second = Counting(build_reasoner(SPEC))
    _build(small, out, second)
    assert len(second.cells) == 12 * 64 - (n_lines - 1)
    pd.testing.assert_frame_equal(pd.read_parquet(out),
                                  pd.read_parquet(_build(small, tmp_path / "ref.parquet")))


def test_journal_of_another_configuration_is_refused(small, tmp_path):
    qs, outs, cfg = small
    out = tmp_path / "t.parquet"
    with pytest.raises(KeyboardInterrupt):
        _build(small, out, Counting(build_reasoner(SPEC), fail_after=1))
    other = ReasonerSpec(backend="rule", profile="careful_expert")
    with pytest.raises(InputError, match="another configuration.*spec"):
        build_table(qs, outs, cfg, "r", other, CFG, out, "genomeqa", progress=False)


def _rewrite(path: Path, df: pd.DataFrame) -> None:
    schema_meta = pq.read_schema(path).metadata
    table = __import__("pyarrow").Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.replace_schema_metadata(schema_meta), path)


def test_load_refuses_missing_duplicate_and_foreign_tables(small, tmp_path):
    _, _, cfg = small
    path = _build(small, tmp_path / "t.parquet")
    with pytest.raises(InputError, match=r"built for the tools .*tools.names"):
        load_reward_table(path, cfg.names[:5])  # what training checks: the bit order
    with pytest.raises(InputError, match=r"built for the tools .*tools.names"):
        load_reward_table(path, cfg.names[::-1])
    # the tools' settings and versions: the fingerprint, checked by readers holding the tool set
    with pytest.raises(InputError, match=r"another tool set.*motif_scan.fpr: 0.0001 -> 0.001"):
        require_fingerprint(load_reward_table(path, cfg.names).meta, ToolsConfig(motif_fpr=1e-3),
                            str(path), "the reward_table stage")
    df = pd.read_parquet(path)
    _rewrite(path, df.drop(index=[5, 6]))
    with pytest.raises(InputError, match=r"lack cells.*62 of 64"):
        load_reward_table(path, cfg.names)
    _rewrite(path, pd.concat([df, df.iloc[[7]]]))
    with pytest.raises(InputError, match="duplicate"):
        load_reward_table(path, cfg.names)
    with pytest.raises(InputError, match="not found"):
        load_reward_table(tmp_path / "none.parquet", cfg.names)


# ---- a real kill, in a subprocess -------------------------------------------------------------
@pytest.mark.slow
def test_sigkill_mid_build_then_resume_matches_uninterrupted(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["prepare"]["genomeqa"]["n_questions"] = 12  # a few shards is all a kill test needs
    params["reward_table"]["shard_questions"] = 1
    params["reward_table"]["reasoners"]["slow"] = {"backend": "rule", "profile": "tool_skeptic",
                                                  "latency_s": 0.004}
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "params.yaml").write_text(yaml.safe_dump(params))
        for cmd in (["prepare", "genomeqa"], ["tools", "genomeqa"]):
            subprocess.run([BIN / "fgpo", *cmd], cwd=tmp_path / d, env=env, check=True,
                           capture_output=True)
    subprocess.run([BIN / "fgpo", "reward-table", "slow", "genomeqa"], cwd=tmp_path / "a",
                   env=env, check=True, capture_output=True)
    journal = tmp_path / "b/data/reward_tables/slow/genomeqa.parquet.journal.jsonl"
    proc = subprocess.Popen([BIN / "fgpo", "reward-table", "slow", "genomeqa"],
                            cwd=tmp_path / "b", env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and (not journal.exists() or journal.read_text().count("\n") < 200):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = journal.read_text().count("\n") - 1
    assert 0 < done < 12 * 64, "the kill must land mid-build"
    r = subprocess.run([BIN / "fgpo", "reward-table", "slow", "genomeqa"], cwd=tmp_path / "b",
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # the module logger says so on stderr, with the count the journal held
    assert (f"INFO fgpo.rewards.builder: data/reward_tables/slow/genomeqa.parquet: resuming "
            f"an interrupted build, {done} cells answered already") in r.stderr
    quiet = tmp_path / "b/data/reward_tables/slow"
    assert not any(p.name.endswith(".journal.jsonl") for p in quiet.iterdir())
    a = tmp_path / "a/data/reward_tables/slow/genomeqa.parquet"
    b = tmp_path / "b/data/reward_tables/slow/genomeqa.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
    assert read_parquet_metadata(a) == read_parquet_metadata(b)
    assert read_parquet_metadata(b)["reasoner_calls"] == 12 * 64


# ---- statistics -------------------------------------------------------------------------------
def _hand_table() -> RewardTable:
    # K=2 (4 subsets: {}, {t0}, {t1}, {t0,t1}); 4 questions; tool_cost 0.1
    correct = np.array([[0, 1, 0, 1],    # train: t0 needed
                        [0, 1, 1, 1],    # train
                        [1, 1, 1, 1],    # val: constant correctness
                        [0, 0, 1, 0]],   # test: only t1 alone
                       dtype=float)
    n_tools = np.array([0, 1, 1, 2])
    return RewardTable(question_ids=["a", "b", "c", "d"],
                       splits=np.array(["train", "train", "val", "test"]),
                       families=np.array(["f", "f", "g", "g"]), reward=correct - 0.1 * n_tools,
                       correct=correct, n_tools=n_tools, meta={"reasoner_calls": 16})


def test_table_stats_by_hand():
    s = table_stats(_hand_table(), group_size=2)
    # best fixed on train: subset 1 and 3 both reach 1.0; fewer tools wins -> mask 1 ({t0})
    assert s["table/best_fixed_mask"] == 1 and s["table/best_fixed_tools"] == 1
    assert s["train/no_tools_accuracy"] == 0.0 and s["train/all_tools_accuracy"] == 1.0
    assert s["train/random_accuracy"] == pytest.approx(5 / 8)
    assert s["test/best_fixed_accuracy"] == 0.0 and s["test/oracle_accuracy"] == 1.0
    assert s["test/random_accuracy"] == pytest.approx(0.25)
    assert s["val/oracle_reward"] == pytest.approx(1.0)  # empty subset, no cost
    assert s["table/constant_correct_row_frac"] == 0.25
    assert s["table/constant_reward_row_frac"] == 0.0  # the tool cost breaks the tie
    # oracle tools: a -> {t0} 1, b -> {t0} or {t1} 1, c -> {} 0, d -> {t1} 1
    assert s["table/oracle_tools_per_question"] == pytest.approx(0.75)
    assert s["budget/table_cells"] == 16


def test_uniform_zero_signal_equals_enumeration():
    rng = np.random.default_rng(0)
    reward = rng.choice([0.0, 0.9, 1.0], size=(6, 4))
    reward[0] = 1.0  # a constant row always gives zero signal
    for g in (2, 3, 4):
        exact = uniform_zero_signal(reward, g)
        brute = [np.mean([len({row[i] for i in idx}) == 1
                          for idx in itertools.product(range(4), repeat=g)]) for row in reward]
        np.testing.assert_allclose(exact, brute)
    assert uniform_zero_signal(reward, 3)[0] == 1.0


def test_question_shards_merge_into_the_unsharded_table(small, tmp_path):
    """N servers each build their share of questions; the merge equals a single build."""
    from fgpo.rewards.shards import merge_shards

    qs, outs, cfg = small
    reference = _build(small, tmp_path / "ref.parquet")
    shards = []
    for i in range(3):
        spec = ReasonerSpec(backend="rule", profile="overloaded_generalist",
                            base_url=f"http://127.0.0.1:80{i}0/v1")
        shards.append(build_table(qs[i::3], outs, cfg, "r", spec, CFG,
                                  tmp_path / f"t.shard{i}of3.parquet", "genomeqa",
                                  progress=False, shard=f"{i}/3"))
    merged = merge_shards(shards, tmp_path / "t.parquet", qs)
    pd.testing.assert_frame_equal(pd.read_parquet(merged), pd.read_parquet(reference))
    assert read_parquet_metadata(merged)["reasoner_calls"] == 12 * 64
    with pytest.raises(InputError, match="exactly once"):
        merge_shards(shards[:2], tmp_path / "t2.parquet", qs)
    stale = [_changed(q) if q is qs[4] else q for q in qs]  # a shard built for old content
    with pytest.raises(InputError, match=r"t\.shard1of3\.parquet.*question digest"):
        merge_shards(shards, tmp_path / "t2.parquet", stale)


# ---- the table matches the benchmark it is loaded with ------------------- -----------
def _changed(q):
    """The same question id with other content (as a re-import with another seed gives)."""
    from dataclasses import replace
    return replace(q, sequences={k: v[1:] + v[0] for k, v in q.sequences.items()})


def _stage_data(small, tmp_path, table=True):
    """A data/ dir as the stages see it (benchmark, tool outputs, a table) and its params."""
    from fgpo.question import to_frame
    from fgpo.seqio import atomic_write_parquet
    from fgpo.tools.toolset import tool_fingerprint
    from dataclasses import asdict as config_dict
    from fgpo.tools.outputs import run_tools

    qs, _, cfg = small
    data = tmp_path / "data"
    atomic_write_parquet(to_frame(qs), data / "benchmarks/genomeqa.parquet")
    atomic_write_parquet(run_tools(qs, ToolsConfig(workers=1), progress=False),
                         data / "tool_outputs/genomeqa.parquet",
                         metadata={"benchmark": "genomeqa", "fingerprint": tool_fingerprint(cfg),
                                   "tools": cfg.names, "config": config_dict(cfg)})
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "tools": {"workers": 1},
        "reward_table": {"shard_questions": 6, "build": ["r"],
                         "reasoners": {"r": {"backend": "rule",
                                             "profile": "overloaded_generalist"}}}}))
    path = data / "reward_tables/r/genomeqa.parquet"
    if table:
        _build(small, path)
    return data, params, path


def _both_loaders_refuse(data, params, tmp_path, *needles):
    """`fgpo table-stats`'s loader and `fgpo train`'s refuse, naming each needle."""
    from fgpo.rewards.data import load_run_data
    from fgpo.stages import table_stats

    loaders = {"table-stats": lambda: table_stats.main("r", "genomeqa", params, data, tmp_path / "m"),
               "train": lambda: load_run_data("r", "genomeqa", ToolsConfig().names, data)}
    for name, load in loaders.items():
        with pytest.raises(InputError) as exc:
            load()
        for needle in needles:
            assert needle in str(exc.value), (name, str(exc.value))
    assert not (tmp_path / "m").exists()  # no metrics written from a bad table


def test_table_lacking_a_whole_question_is_refused_by_stats_and_train(small, tmp_path):
    data, params, path = _stage_data(small, tmp_path)
    df = pd.read_parquet(path)
    gone = df.question_id.iloc[-1]
    _rewrite(path, df[df.question_id != gone])  # all 64 rows of one question deleted
    _both_loaders_refuse(data, params, tmp_path, str(path), gone, "missing from the table")
    # ... and a complete question that is not in the benchmark (foreign rows)
    _rewrite(path, pd.concat([df, df[df.question_id == gone].assign(question_id="someone-else")]))
    _both_loaders_refuse(data, params, tmp_path, str(path), "someone-else", "not in the bench")


def test_table_built_for_other_question_content_is_refused(small, tmp_path):
    from fgpo.question import to_frame
    from fgpo.seqio import atomic_write_parquet

    qs, _, _ = small
    data, params, path = _stage_data(small, tmp_path)
    stale = qs[5].id
    atomic_write_parquet(to_frame([_changed(q) if q.id == stale else q for q in qs]),
                         data / "benchmarks/genomeqa.parquet")  # re-imported: same ids
    _both_loaders_refuse(data, params, tmp_path, str(path), stale, "question digest")


def test_reward_table_build_refuses_tool_outputs_of_other_question_content(small, tmp_path):
    from fgpo.question import to_frame
    from fgpo.rewards.builder import build
    from fgpo.seqio import atomic_write_parquet

    qs, _, _ = small
    data, params, table = _stage_data(small, tmp_path, table=False)
    stale = qs[3].id
    atomic_write_parquet(to_frame([_changed(q) if q.id == stale else q for q in qs]),
                         data / "benchmarks/genomeqa.parquet")
    with pytest.raises(InputError) as exc:
        build("r", "genomeqa", params, data)
    msg = str(exc.value)
    assert str(data / "tool_outputs/genomeqa.parquet") in msg and stale in msg
    assert "question digest" in msg and "fgpo tools genomeqa" in msg
    assert not table.exists() and not list(table.parent.glob("*.journal.jsonl"))


def test_files_without_question_digests_are_refused(small, tmp_path):
    from fgpo.rewards.builder import build

    data, params, path = _stage_data(small, tmp_path)
    _rewrite(path, pd.read_parquet(path).drop(columns="question_digest"))
    with pytest.raises(InputError, match="no question_digest column.*rebuild"):
        load_reward_table(path, ToolsConfig().names)
    outputs = data / "tool_outputs/genomeqa.parquet"
    _rewrite(outputs, pd.read_parquet(outputs).drop(columns="question_digest"))
    path.unlink()
    with pytest.raises(InputError, match="no question_digest column.*rebuild") as exc:
        build("r", "genomeqa", params, data)
    assert str(outputs) in str(exc.value)


def test_resumed_build_with_changed_questions_does_not_mix_old_cells(small, tmp_path):
    qs, outs, cfg = small
    out = tmp_path / "t.parquet"
    with pytest.raises(KeyboardInterrupt):
        _build(small, out, Counting(build_reasoner(SPEC), fail_after=1))  # q0, q1 journaled
    changed = [_changed(qs[0]), *qs[1:]]
    with pytest.raises(InputError, match=r"another configuration.*questions"):
        build_table(changed, outs, cfg, "r", SPEC, CFG, out, "genomeqa", progress=False)
    assert not out.exists()


def test_table_settings_read_the_readers_part_and_validate_it(tmp_path):
    """The readers' view of `reward_table:` takes G, the built names and the tool cost, passes
    over the build's keys (validated by the build stage), and refuses a bad G naming the field."""
    from fgpo.rewards.table import TableSettings

    p = tmp_path / "params.yaml"
    p.write_text("reward_table:\n  tool_cost: 0.5\n  group_size: 4\n  build: [a, b]\n"
                 "  reasoners: {a: {backend: nonsense}}\n")
    assert TableSettings.load(p) == TableSettings(group_size=4, build=["a", "b"], tool_cost=0.5)
    p.write_text("reward_table:\n  group_size: 1\n")
    with pytest.raises(InputError) as exc:
        TableSettings.load(p)
    assert exc.value.field == "reward_table.group_size" and exc.value.file == str(p)
    with pytest.raises(InputError, match="build lists"):  # the build's own, stricter check
        RewardTableConfig(build=["a"])


@pytest.mark.parametrize("cost", [0.0, 0.05])
def test_a_table_at_another_tool_cost_equals_a_rebuild_with_zero_reasoner_calls(small, tmp_path,
                                                                                monkeypatch,
                                                                                cost):
    """The ablation's tables: transforming the 0.01 table to `cost` gives, cell for cell, what
    a build at `cost` gives, and asks the reasoner nothing (a build would ask every cell)."""
    import dataclasses

    from fgpo.rewards import build
    from fgpo.rewards.cost import with_tool_cost

    qs, outs, cfg = small
    base = _build(small, tmp_path / "base.parquet")
    counting = Counting(build_reasoner(SPEC))
    rebuilt = build_table(qs, outs, cfg, "r", SPEC, dataclasses.replace(CFG, tool_cost=cost),
                          tmp_path / "rebuilt.parquet", "genomeqa", reasoner=counting,
                          progress=False)
    assert len(counting.cells) == len(qs) * 64  # what a rebuild costs

    def no_reasoner(*a, **kw):
        raise AssertionError("the transform built a reasoner")
    monkeypatch.setattr(build, "build_reasoner", no_reasoner)
    monkeypatch.setattr(Reasoner, "answer", no_reasoner, raising=False)
    derived = with_tool_cost(base, tmp_path / "derived.parquet", cost)
    pd.testing.assert_frame_equal(pd.read_parquet(derived), pd.read_parquet(rebuilt))
    assert not pd.read_parquet(derived).reward.equals(pd.read_parquet(base).reward)
    meta_d, meta_r = read_parquet_metadata(derived), read_parquet_metadata(rebuilt)
    assert meta_d.pop("reasoner_calls") == 0 and meta_r.pop("reasoner_calls") == len(qs) * 64
    assert meta_d.pop("derived_from")["tool_cost"] == 0.01
    assert meta_d == meta_r
    same = with_tool_cost(base, tmp_path / "same.parquet", 0.01)  # the source's cost: a copy
    assert same.read_bytes() == base.read_bytes()
    table = load_reward_table(derived, cfg.names, qs)  # loads like any table
    np.testing.assert_array_equal(table.correct, load_reward_table(base, cfg.names, qs).correct)


def test_the_tool_cost_transform_refuses_a_negative_cost_and_a_file_that_is_no_table(small,
                                                                                      tmp_path):
    from fgpo.rewards.cost import with_tool_cost

    base = _build(small, tmp_path / "base.parquet")
    with pytest.raises(InputError, match="tool_cost"):
        with_tool_cost(base, tmp_path / "x.parquet", -0.01)
    pd.DataFrame({"correct": [1]}).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError) as err:
        with_tool_cost(tmp_path / "bad.parquet", tmp_path / "y.parquet", 0.0)
    assert err.value.field == "n_tools" and "bad.parquet" in str(err.value)
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "y.parquet").exists()


def test_sharded_settings_are_checked():
    from fgpo.rewards.build import RewardTableConfig
    from fgpo.rewards.shards import ShardedConfig
    from fgpo.reasoners import ReasonerSpec

    assert ShardedConfig(shards=[0, 1, 2], base_urls=["a", "b", "c"]).base_url(2) == "c"
    assert ShardedConfig(shards=[0, 1]).base_url(1) is None  # the spec's own endpoint
    with pytest.raises(InputError, match="0..N-1"):
        ShardedConfig(shards=[1, 2])
    with pytest.raises(InputError, match="one endpoint per shard"):
        ShardedConfig(shards=[0, 1], base_urls=["a"])
    specs = {n: ReasonerSpec(profile="careful_expert") for n in ("a", "b")}
    ok = RewardTableConfig(build=["a", "b"], reasoners=specs, unsharded=["a"],
                           sharded=ShardedConfig(reasoners=["b"]))
    assert ok.sharded.n == 2
    for unsharded, sharded, word in ((["a", "b"], ["b"], "in both: ['b']"),
                                     (["a"], [], "in neither: ['b']"),
                                     (["a", "c"], ["b"], "not in build: ['c']")):
        with pytest.raises(InputError, match=re.escape(word)):
            RewardTableConfig(build=["a", "b"], reasoners=specs, unsharded=unsharded,
                              sharded=ShardedConfig(reasoners=sharded))


def test_shard_stages_refuse_a_table_not_built_in_shards(tmp_path):
    from fgpo.rewards.shards import ShardedConfig
    from fgpo.stages import reward_merge, reward_shard

    params = tmp_path / "params.yaml"
    params.write_text("reward_table:\n  sharded: {reasoners: [big], shards: [0, 1, 2]}\n")
    assert ShardedConfig.load(params, "big").n == 3
    for call in (lambda: reward_shard.main("small", "genomeqa", 0, params, tmp_path, False),
                 lambda: reward_merge.main("small", "genomeqa", params, tmp_path)):
        with pytest.raises(InputError, match=r"'small' is not in .*\['big'\]") as err:
            call()
        assert err.value.field == "reward_table.sharded" and str(params) in str(err.value)
    with pytest.raises(InputError, match="shard 3 is not in"):
        reward_shard.main("big", "genomeqa", 3, params, tmp_path, False)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), float("-inf")])
def test_a_non_finite_reward_is_refused_by_stats_and_train_naming_the_cell(small, tmp_path,
                                                                           value):
    data, params, path = _stage_data(small, tmp_path)
    df = pd.read_parquet(path)
    df.loc[70, "reward"] = value  # question 2, subset 6
    _rewrite(path, df)
    cell = f"{df.question_id[70]} subset {df['mask'][70]}"
    _both_loaders_refuse(data, params, tmp_path, str(path), cell, "field 'reward'",
                         "non-finite")


def test_a_correctness_other_than_0_or_1_is_refused(small, tmp_path):
    data, params, path = _stage_data(small, tmp_path)
    df = pd.read_parquet(path)
    df.loc[3, "correct"] = 2
    _rewrite(path, df)
    _both_loaders_refuse(data, params, tmp_path, str(path), "field 'correct'",
                         f"{df.question_id[3]} subset {df['mask'][3]}")


def test_table_stats_cli_exits_2_on_an_infinite_reward_and_writes_no_metrics(small, tmp_path):
    data, params, path = _stage_data(small, tmp_path)
    df = pd.read_parquet(path)
    df.loc[0, "reward"] = float("inf")
    _rewrite(path, df)
    fgpo = Path(sys.executable).parent / "fgpo"
    r = subprocess.run([str(fgpo), "table-stats", "r", "genomeqa", "--params", str(params),
                        "--data", str(data), "--metrics", str(tmp_path / "m")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "non-finite" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("cost", [float("inf"), float("nan"), -0.01, "0.01"])
def test_a_tool_cost_that_is_not_a_finite_non_negative_number_is_refused(cost):
    from fgpo.rewards.build import RewardTableConfig

    with pytest.raises(InputError) as info:
        RewardTableConfig(tool_cost=cost)
    assert info.value.field == "reward_table.tool_cost"


def test_the_cost_transform_refuses_an_infinite_cost_and_a_source_with_a_nan_reward(small,
                                                                                     tmp_path):
    from fgpo.rewards.cost import with_tool_cost

    base = _build(small, tmp_path / "base.parquet")
    with pytest.raises(InputError, match="tool_cost"):
        with_tool_cost(base, tmp_path / "x.parquet", float("inf"))
    df = pd.read_parquet(base)
    df.loc[5, "correct"] = 7
    _rewrite(base, df)
    with pytest.raises(InputError) as info:
        with_tool_cost(base, tmp_path / "y.parquet", 0.0)
    assert info.value.field == "correct" and "base.parquet" in str(info.value)
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "y.parquet").exists()
