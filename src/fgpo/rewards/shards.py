"""Tables built in shards, one per server or GPU host: `reward_table.sharded` (which tables,
how many shards, each shard's endpoint) and the merge of N shard tables into one. Building a
shard is `fgpo.rewards.build` (asked by the reward_shard stage); nothing here asks a reasoner,
so the reward_merge stage does not depend on the reasoner backends."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fgpo.config import DEFAULT_PARAMS, from_dict, read_params
from fgpo.errors import InputError
from fgpo.question import Question, require_digests
from fgpo.rewards.cells import REBUILD
from fgpo.seqio import atomic_write_parquet, read_parquet, read_parquet_metadata


@dataclass
class ShardedConfig:
    """`reward_table.sharded`: tables built as N shard stages plus a merge stage (one shard per
    server or GPU host), so `dvc repro` builds and merges them with no manual step."""

    reasoners: list[str] = field(default_factory=list)
    """Names from `build` built this way: reward_shard@<reasoner>-<benchmark>-<i> asks the
    questions with index % N == i, reward_merge@<reasoner>-<benchmark> joins them."""
    shards: list[int] = field(default_factory=lambda: [0, 1])
    """The shard indices 0..N-1 (DVC's matrix axis; N = how many)."""
    base_urls: list[str] = field(default_factory=list)
    """openai backend: shard i's endpoint (N servers, one each); [] = every shard asks the
    spec's base_url (or the hf/vllm model runs where the shard stage runs)."""

    def __post_init__(self) -> None:
        if self.shards != list(range(len(self.shards))) or not self.shards:
            raise InputError(f"shards must be 0..N-1, e.g. [0, 1, 2, 3]; got {self.shards!r}",
                             field="reward_table.sharded.shards")
        if self.base_urls and len(self.base_urls) != len(self.shards):
            raise InputError(f"{len(self.base_urls)} base_urls for {len(self.shards)} shards: "
                             "give one endpoint per shard, or none", field=
                             "reward_table.sharded.base_urls")

    @property
    def n(self) -> int:
        return len(self.shards)

    def base_url(self, index: int) -> str | None:
        return self.base_urls[index] if self.base_urls else None

    @classmethod
    def load(cls, params: str | Path = DEFAULT_PARAMS, reasoner: str | None = None
             ) -> ShardedConfig:
        """`reward_table.sharded` alone (what the merge needs; the rest is the build's); with
        `reasoner`, refused unless that table is one built in shards."""
        raw = read_params(params).get("reward_table")
        if not isinstance(raw, dict):
            raise InputError("missing section 'reward_table'", file=str(params))
        try:
            cfg = from_dict(cls, raw.get("sharded") or {}, where="reward_table.sharded")
        except InputError as exc:
            raise InputError(exc.message, file=str(params), field=exc.field) from exc
        if reasoner is not None and reasoner not in cfg.reasoners:
            raise InputError(f"{reasoner!r} is not in reward_table.sharded.reasoners "
                             f"{cfg.reasoners}", file=str(params), field="reward_table.sharded")
        return cfg


def merge_shards(shards: list[Path], out: Path, questions: list[Question]) -> Path:
    """Concatenate per-shard tables (built by N servers, sharded by question) into one table.

    Shards must agree on everything but the endpoint (`spec.base_url`), cover every question
    exactly once, and each be complete; reasoner calls add up.
    """
    metas, frames = [], []
    for path in shards:
        if not path.exists():
            raise InputError("shard missing (build it with --shard I/N)", file=str(path))
        metas.append(read_parquet_metadata(path, rebuild="`fgpo reward-table --shard I/N`"))
        frames.append(read_parquet(path, rebuild="`fgpo reward-table --shard I/N`"))
        require_digests(frames[-1], questions, str(path), f"{REBUILD} with its --shard")
    same = {k for k in metas[0] if k not in ("spec", "n_questions", "reasoner_calls",
                                              "unparseable", "shard")}
    for path, meta in zip(shards[1:], metas[1:]):
        spec_a = {k: v for k, v in metas[0]["spec"].items() if k != "base_url"}
        spec_b = {k: v for k, v in meta["spec"].items() if k != "base_url"}
        diff = sorted(k for k in same if meta.get(k) != metas[0].get(k))
        if diff or spec_a != spec_b:
            raise InputError(f"shard differs from {shards[0]} in {diff or ['spec']}",
                             file=str(path), field=(diff or ["spec"])[0])
    df = pd.concat(frames, ignore_index=True)
    order = {q.id: i for i, q in enumerate(questions)}
    counts = df.groupby("question_id").size()
    n_sub = 2 ** metas[0]["K"]
    if set(counts.index) != set(order) or (counts != n_sub).any():
        raise InputError(f"shards do not cover the {len(order)} questions exactly once with "
                         f"{n_sub} subsets each", file=str(shards[0].parent), field="question_id")
    df = df.sort_values(["question_id", "mask"], key=lambda c: c.map(order) if c.name ==
                        "question_id" else c, kind="stable").reset_index(drop=True)
    meta = {**metas[0], "n_questions": len(order), "shard": None,
            "reasoner_calls": sum(m["reasoner_calls"] for m in metas),
            "unparseable": sum(m["unparseable"] for m in metas),
            "spec": {**metas[0]["spec"], "base_url": sorted({m["spec"]["base_url"] for m in metas})}}
    atomic_write_parquet(df, out, metadata=meta)
    return out
