"""Sequence normalisation, labelled-collection readers and atomic parquet writes."""

from __future__ import annotations

import csv
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from Bio.Data.IUPACData import ambiguous_dna_letters
from Bio.SeqIO.FastaIO import SimpleFastaParser

from fgpo.errors import InputError

IUPAC_DNA = frozenset(ambiguous_dna_letters)  # ACGT + RYSWKMBDHVN
_WHITESPACE = re.compile(r"\s+")


def normalise_sequence(raw: str, *, file: str | None = None, record: str | int | None = None,
                       field: str = "sequence") -> str:
    """Upper-case, drop whitespace and line breaks; refuse anything outside IUPAC DNA.

    N and the other IUPAC ambiguity codes are kept (tools skip them); RNA 'U', digits, gaps
    and protein letters are errors naming where they were found.
    """
    if raw is None or (isinstance(raw, float) and pd.isna(raw)):
        raise InputError("empty sequence", file=file, record=record, field=field)
    seq = _WHITESPACE.sub("", str(raw)).upper()
    if not seq:
        raise InputError("empty sequence", file=file, record=record, field=field)
    bad = sorted(set(seq) - IUPAC_DNA)
    if bad:
        pos = min(seq.index(c) for c in bad)
        raise InputError(f"character(s) {bad} outside IUPAC DNA (first at position {pos})",
                         file=file, record=record, field=field)
    return seq


def read_fasta(path: str | Path) -> list[tuple[str, str]]:
    """(id, normalised sequence) for every record; malformed files name the record."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", file=str(path))
    text = path.read_text()
    if not text.strip():
        raise InputError("empty file", file=str(path))
    if not text.lstrip().startswith(">"):
        raise InputError("not FASTA: first non-blank line must start with '>'", file=str(path),
                         record=1, field="header")
    records = []
    with path.open() as fh:
        for i, (title, seq) in enumerate(SimpleFastaParser(fh), start=1):
            rid = title.split()[0] if title.strip() else ""
            if not rid:
                raise InputError("record has an empty header", file=str(path), record=i,
                                 field="header")
            records.append((rid, normalise_sequence(seq, file=str(path), record=f"{i} ({rid})")))
    return records


def read_labelled_csv(path: str | Path, seq_col: str = "seq", label_col: str = "label"
                      ) -> list[tuple[str, str, int]]:
    """(row id, normalised sequence, 0/1 label) for every CSV row."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", file=str(path))
    if path.stat().st_size == 0:
        raise InputError("empty file", file=str(path))
    out = []
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        cols = reader.fieldnames or []
        for col in (seq_col, label_col):
            if col not in cols:
                raise InputError(f"missing column '{col}' (columns: {cols})", file=str(path),
                                 record="header", field=col)
        for row in reader:
            i = reader.line_num  # the file line this record ended on (blank lines skipped)
            if None in row or any(v is None for v in row.values()):
                raise InputError("wrong number of fields", file=str(path), record=f"line {i}")
            seq = normalise_sequence(row[seq_col], file=str(path), record=f"line {i}", field=seq_col)
            label = str(row[label_col]).strip()
            if label not in {"0", "1"}:
                raise InputError(f"label must be 0 or 1, got {label!r}", file=str(path),
                                 record=f"line {i}", field=label_col)
            out.append((f"row{len(out) + 1}", seq, int(label)))
    if not out:
        raise InputError("no data rows", file=str(path))
    return out


def atomic_write_parquet(df: pd.DataFrame, path: str | Path, metadata: dict[str, Any] | None = None
                         ) -> Path:
    """Write `df` to a temporary file beside `path`, then rename: never a half-written parquet."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        meta = dict(table.schema.metadata or {})
        meta[b"fgpo"] = json.dumps(metadata, sort_keys=True).encode()
        table = table.replace_schema_metadata(meta)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_parquet_metadata(path: str | Path) -> dict[str, Any]:
    """The `fgpo` metadata block written by `atomic_write_parquet` ({} if none)."""
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"fgpo")
    return json.loads(raw) if raw else {}


def atomic_write_text(text: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


def iter_chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
