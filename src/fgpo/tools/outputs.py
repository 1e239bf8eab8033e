"""Tool outputs: all K tools run once on every question, and the loader of the cached table.

A subset's evidence is later a selection of these cached outputs: tools never rerun per subset.
"""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from fgpo.errors import InputError
from fgpo.question import Question, load_questions, question_digest, require_digests
from fgpo.seqio import atomic_write_parquet, iter_chunks, read_parquet, read_parquet_metadata
from fgpo.tools.base import ToolOutput
from fgpo.tools.toolset import ToolsConfig, build_tools, require_fingerprint, tool_fingerprint

_WORKER_TOOLS: list | None = None


def _init_worker(cfg: ToolsConfig) -> None:
    global _WORKER_TOOLS
    _WORKER_TOOLS = build_tools(cfg)


def _run_chunk(chunk: list[tuple[str, str, dict[str, str]]]) -> list[dict[str, Any]]:
    rows = []
    for qid, digest, seqs in chunk:
        for tool in _WORKER_TOOLS:
            out = tool.run(seqs)
            rows.append({"question_id": qid, "question_digest": digest, "tool": tool.name,
                         "text": out.text, "data": json.dumps(out.data, sort_keys=True)})
    return rows


def run_tools(questions: list[Question], cfg: ToolsConfig, progress: bool = True) -> pd.DataFrame:
    """Long table (question_id, question_digest, tool, text, data-as-JSON), one row per
    question x tool; the digest ties each row to the question content it was computed for."""
    tools = build_tools(cfg)
    for t in tools:  # warm the threshold cache once in the parent, not in every worker
        t.run({"seq": "ACGT" * 10})
    work = [(q.id, question_digest(q), q.sequences) for q in questions]
    chunks = list(iter_chunks(work, cfg.chunk_size))
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=len(work), desc="tools", unit="q", disable=not progress)
    if cfg.workers == 1 or len(chunks) == 1:
        _init_worker(cfg)
        for chunk in chunks:
            rows.extend(_run_chunk(chunk))
            bar.update(len(chunk))
    else:
        with ProcessPoolExecutor(cfg.workers, initializer=_init_worker, initargs=(cfg,)) as ex:
            for chunk, res in zip(chunks, ex.map(_run_chunk, chunks)):
                rows.extend(res)
                bar.update(len(chunk))
    bar.close()
    return pd.DataFrame(rows, columns=["question_id", "question_digest", "tool", "text", "data"])


def write_tool_outputs(benchmark: Path, cfg: ToolsConfig, out: Path) -> Path:
    """Run the tools on every question of the benchmark file `benchmark` -> `out`, with the
    tool set's fingerprint and config in the file's metadata."""
    df = run_tools(load_questions(benchmark), cfg)
    meta = {"benchmark": benchmark.stem, "fingerprint": tool_fingerprint(cfg),
            "tools": cfg.names, "K": len(cfg.names), "config": asdict(cfg)}
    return atomic_write_parquet(df, out, metadata=meta)


def load_tool_outputs(path: str | Path, cfg: ToolsConfig, questions: list[Question] | None = None
                      ) -> dict[str, dict[str, ToolOutput]]:
    """{question_id: {tool name: ToolOutput}}; refuses outputs built for another tool set, and
    outputs of a question whose content (digest) differs from `questions`' (e.g. re-imported)."""
    path = Path(path)
    if not path.exists():
        raise InputError("tool outputs not found (run `dvc repro tools`)", file=str(path))
    rebuild = "`dvc repro tools`"
    require_fingerprint(read_parquet_metadata(path, rebuild=rebuild), cfg, str(path),
                        "the tools stage")
    df = read_parquet(path, rebuild=rebuild)
    require_digests(df, questions or [], str(path),
                    f"`fgpo tools {path.stem}` (or `dvc repro tools`)")
    out: dict[str, dict[str, ToolOutput]] = {}
    for r in df.itertuples(index=False):
        out.setdefault(r.question_id, {})[r.tool] = ToolOutput(r.text, json.loads(r.data))
    incomplete = [q for q, d in out.items() if set(d) != set(cfg.names)]
    if incomplete:
        raise InputError(f"{len(incomplete)} question(s) lack some tool outputs",
                         file=str(path), record=incomplete[0], field="tool")
    return out

