"""Building exhaustive reward tables: every question x every one of the 2^K tool subsets, asked
once of a reasoner.

A build appends each answered batch to a journal (JSON lines, flushed and fsynced) beside the
target; a rerun after an interruption skips the journaled cells, so no completed reasoner call
is repeated or lost. When every cell is in, the table is written atomically and the journal
removed. Every row records the question's content digest (`question_digest`); the journal
header records the digest of the whole question list, so a resumed build never mixes cells
asked for other question content. Reading a table is `fgpo.rewards.table` (no reasoner there:
the stages that only read tables do not depend on the reasoner backends).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from fgpo.config import check_number, qualify
from fgpo.errors import InputError
from fgpo.question import Question, question_digest, require_digests
from fgpo.reasoners import Reasoner, ReasonerSpec, Request, build_reasoner
from fgpo.reasoners.parse import parse_answer
from fgpo.reasoners.prompt import TEMPLATE_HASH
from fgpo.rewards.cells import require_finite_cells
from fgpo.rewards.shards import ShardedConfig
from fgpo.rewards.table import COLUMNS, TableSettings
from fgpo.seqio import atomic_write_parquet, read_parquet, read_parquet_metadata
from fgpo.tools.base import ToolOutput
from fgpo.tools.subsets import subset_tools, tools_per_mask
from fgpo.tools.toolset import ToolsConfig, fingerprint_spec, tool_fingerprint


@dataclass
class RewardTableConfig(TableSettings):
    """`reward_table:` section of params.yaml (the readers' part is `TableSettings`)."""

    shard_questions: int = 25
    """Questions per reasoner batch and journal flush (a kill loses at most the batch in flight)."""
    reasoners: dict[str, ReasonerSpec] = field(default_factory=dict)
    """name -> ReasonerSpec (backend rule | vllm | openai | hf and its settings)."""
    unsharded: list[str] | None = None
    """Names from `build` whose table one `reward_table` stage builds (DVC's matrix axis, so
    params.yaml spells it out); None (in code) = those of `build` not in `sharded`."""
    sharded: ShardedConfig = field(default_factory=ShardedConfig)
    """Names from `build` built as shard stages and a merge stage."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(self.shard_questions, "reward_table.shard_questions",
                     "questions per reasoner batch, e.g. 25", ge=1, integer=True)
        missing = [n for n in self.build if n not in self.reasoners]
        if missing:
            raise InputError(f"build lists {missing}, not defined under reward_table.reasoners",
                             field="reward_table.build")
        if self.unsharded is None:
            self.unsharded = [n for n in self.build if n not in self.sharded.reasoners]
        # DVC cannot join lists: each table of `build` is named in exactly one of the two
        both = sorted(set(self.unsharded) & set(self.sharded.reasoners))
        neither = [n for n in self.build if n not in self.unsharded + self.sharded.reasoners]
        extra = [n for n in self.unsharded + self.sharded.reasoners if n not in self.build]
        if both or neither or extra:
            raise InputError(f"each name in build goes in exactly one of unsharded and "
                             f"sharded.reasoners (in both: {both}; in neither: {neither}; not in "
                             f"build: {extra})", field="reward_table.unsharded")

    def spec(self, name: str) -> ReasonerSpec:
        if name not in self.reasoners:
            raise InputError(f"unknown reasoner {name!r}; defined: {sorted(self.reasoners)}",
                             field="reward_table.reasoners")
        return self.reasoners[name]


def subset_evidence(outputs: dict[str, ToolOutput], names: list[str], mask: int
                    ) -> dict[str, ToolOutput]:
    """The cached outputs of the tools whose bits are set in `mask`, in bit order."""
    return {n: outputs[n] for n in subset_tools(mask, names)}


# ---- the journal -----------------------------------------------------------------------------
def _journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".journal.jsonl")


def journal_cells(out: Path) -> int:
    """Cells an interrupted build of `out` has answered already (0 when none is pending)."""
    path = _journal_path(out)
    if not path.exists():
        return 0
    return max(path.read_bytes().count(b"\n") - 1, 0)  # less the header line


def _read_journal(path: Path, header: dict[str, Any]) -> dict[tuple[str, int], str]:
    """Answered cells of an interrupted build; a torn last line (killed mid-write) is dropped."""
    if not path.exists():
        return {}
    raw = path.read_bytes()
    good = raw[: raw.rfind(b"\n") + 1]
    if len(good) != len(raw):
        with path.open("r+b") as fh:
            fh.truncate(len(good))
    lines = good.decode().splitlines()
    if not lines or json.loads(lines[0]) != header:
        theirs = json.loads(lines[0]) if lines else {}
        diff = sorted(k for k in header if theirs.get(k) != header[k])
        raise InputError(f"an interrupted build for another configuration is in the way "
                         f"(differs in {diff}); delete it to start over", file=str(path),
                         field=diff[0] if diff else "header")
    cells = {}
    for n, line in enumerate(lines[1:], start=2):
        rec = json.loads(line)
        key = (rec["q"], rec["m"])
        if key in cells:
            raise InputError("cell answered twice", file=str(path), record=f"line {n}")
        cells[key] = rec["a"]
    return cells


def _append(path: Path, lines: list[str]) -> None:
    with path.open("a") as fh:
        fh.write("".join(lines))
        fh.flush()
        os.fsync(fh.fileno())


# ---- build -----------------------------------------------------------------------------------
def build_table(questions: list[Question], outputs: dict[str, dict[str, ToolOutput]],
                tools_cfg: ToolsConfig, name: str, spec: ReasonerSpec, cfg: RewardTableConfig,
                out: Path, benchmark: str, reasoner: Reasoner | None = None,
                progress: bool = True, shard: str | None = None) -> Path:
    """Ask the reasoner every missing (question, subset) cell, then write the table."""
    names, n_sub = tools_cfg.names, 2 ** len(tools_cfg.names)
    header = {"fingerprint": tool_fingerprint(tools_cfg), "reasoner": name,
              "spec": spec.public(), "template_hash": TEMPLATE_HASH, "benchmark": benchmark,
              "shard": shard, "questions": questions_digest(questions)}
    out.parent.mkdir(parents=True, exist_ok=True)
    journal = _journal_path(out)
    cells = _read_journal(journal, header)
    if not journal.exists():
        _append(journal, [json.dumps(header, sort_keys=True) + "\n"])
    missing = [q for q in questions if any((q.id, m) not in cells for m in range(n_sub))]
    bar = tqdm(total=len(questions) * n_sub, initial=min(len(cells), len(questions) * n_sub),
               desc=f"reward table {name}/{benchmark}", unit="cell", disable=not progress)
    try:
        reasoner = reasoner or build_reasoner(spec)
    except InputError as exc:  # e.g. an unknown rule profile: name the reasoner it belongs to
        bar.close()
        raise InputError(exc.message, file=exc.file, record=exc.record,
                         field=qualify(exc.field, f"reward_table.reasoners.{name}")) from exc
    try:
        for start in range(0, len(missing), cfg.shard_questions):
            batch = [Request(q, m, subset_evidence(outputs[q.id], names, m))
                     for q in missing[start:start + cfg.shard_questions]
                     for m in range(n_sub) if (q.id, m) not in cells]
            answers = reasoner.answer(batch)
            _append(journal, [json.dumps({"q": r.question.id, "m": r.mask, "a": a}) + "\n"
                              for r, a in zip(batch, answers)])
            cells.update({(r.question.id, r.mask): a for r, a in zip(batch, answers)})
            bar.update(len(batch))
    finally:
        bar.close()
        reasoner.close()
    df = assemble(questions, cells, len(names), cfg.tool_cost)
    require_finite_cells(df, str(out))  # never write a table no reader would load
    meta = {**{k: v for k, v in header.items() if k != "questions"},  # rows carry digests
            "tools": names, "K": len(names), "tool_cost": cfg.tool_cost,
            "n_questions": len(questions), "reasoner_calls": len(cells),
            "unparseable": int((df.parsed < 0).sum())}
    meta["fingerprint_spec"] = fingerprint_spec(tools_cfg)  # a mismatch can name the setting
    atomic_write_parquet(df, out, metadata=meta)
    journal.unlink()
    return out


def questions_digest(questions: list[Question]) -> str:
    """One digest of the ordered question list (ids and contents) a build asks about."""
    h = hashlib.sha256()
    for q in questions:
        h.update(f"{q.id}\t{question_digest(q)}\n".encode())
    return h.hexdigest()[:16]


def assemble(questions: list[Question], cells: dict[tuple[str, int], str], n_tools: int,
             tool_cost: float) -> pd.DataFrame:
    """Rows in question order x mask order; correctness and reward from the parsed answer."""
    rows = []
    sizes = tools_per_mask(n_tools).tolist()
    for q in questions:
        digest = question_digest(q)
        for m in range(len(sizes)):
            raw = cells[(q.id, m)]
            parsed = parse_answer(raw, q.options)
            correct = int(parsed == q.answer)
            rows.append((q.id, digest, q.split, q.family, m, sizes[m], correct,
                         correct - tool_cost * sizes[m], raw, -1 if parsed is None else parsed))
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.astype({"mask": "int32", "n_tools": "int8", "correct": "int8",
                      "reward": "float32", "parsed": "int8"})
