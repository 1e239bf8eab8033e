"""Sequence normalisation, labelled-collection readers and atomic parquet writes."""

from __future__ import annotations

import csv
import gzip
import html
import io
import json
import os
import re
import sys
import tempfile
import zlib
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
_GZIP_MAGIC = b"\x1f\x8b"
_CSV_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)  # the default 128 KiB is below long sequences
DEFAULT_REBUILD = "the stage that wrote it (`dvc repro`)"


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
    text = read_text_input(path)
    if not text.strip():
        raise InputError("empty file", file=str(path))
    if not text.lstrip().startswith(">"):
        raise InputError("not FASTA: first non-blank line must start with '>'", file=str(path),
                         record=1, field="header")
    records = []
    with io.StringIO(text, newline=None) as fh:  # universal newlines, as open() did
        for i, (title, seq) in enumerate(SimpleFastaParser(fh), start=1):
            # '>&gt;FP...' (HTML-escaped) or '>>FP...' headers: the id is 'FP...'
            title = html.unescape(title).lstrip(">").strip()
            rid = title.split()[0] if title else ""
            if not rid:
                raise InputError("record has an empty header", file=str(path), record=i,
                                 field="header")
            records.append((rid, normalise_sequence(seq, file=str(path), record=f"{i} ({rid})")))
    return records


def read_labelled_csv(path: str | Path, seq_col: str = "seq", label_col: str = "label"
                      ) -> list[tuple[str, str, int]]:
    """(row id, normalised sequence, 0/1 label) for every CSV row."""
    path = Path(path)
    text = read_text_input(path)
    if not text:
        raise InputError("empty file", file=str(path))
    out = []
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    with io.StringIO(text, newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            cols = reader.fieldnames or []
        except csv.Error as exc:
            raise InputError(f"unreadable CSV: {exc}", file=str(path), record="header") from None
        for col in (seq_col, label_col):
            if col not in cols:
                raise InputError(f"missing column '{col}' (columns: {cols})", file=str(path),
                                 record="header", field=col)
        for row in _csv_rows(reader, path):
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


def _csv_rows(reader: csv.DictReader, path: Path) -> Iterator[dict]:
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"unreadable CSV: {exc}", file=str(path),
                             record=f"line {reader.line_num}") from None
        yield row


def read_text_input(path: str | Path) -> str:
    """A user's text file as str: plain or gzip (by magic bytes), UTF-8 with or without a BOM.

    A missing path, a directory, a corrupt gzip or a binary file is an InputError naming it.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", file=str(path))
    if path.is_dir():
        raise InputError("is a directory, not a file", file=str(path))
    try:
        data = path.read_bytes()
        if data[:2] == _GZIP_MAGIC:
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read ({exc})", file=str(path)) from None
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError as exc:
        raise InputError(f"binary file, not UTF-8 text (byte {exc.start}); FASTA or CSV "
                         "expected (plain or gzipped)", file=str(path)) from None
    if "\x00" in text:
        raise InputError(f"binary file (NUL byte at {text.index(chr(0))}); FASTA or CSV "
                         "expected (plain or gzipped)", file=str(path))
    return text


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
        publish_temp(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _parquet_guard(path: str | Path, rebuild: str, read):
    try:
        return read()
    except FileNotFoundError:
        raise InputError(f"file not found; build it with {rebuild}", file=str(path)) from None
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"not a readable parquet file (truncated or corrupt?): {exc}; rebuild it "
                         f"with {rebuild}", file=str(path)) from None


def read_parquet(path: str | Path, *, rebuild: str = DEFAULT_REBUILD, **kw: Any) -> pd.DataFrame:
    """`pd.read_parquet`, but a truncated or corrupt file is an InputError naming it."""
    return _parquet_guard(path, rebuild, lambda: pd.read_parquet(path, **kw))


def read_parquet_metadata(path: str | Path, *, rebuild: str = DEFAULT_REBUILD) -> dict[str, Any]:
    """The `fgpo` metadata block written by `atomic_write_parquet` ({} if none)."""
    meta = _parquet_guard(path, rebuild, lambda: pq.read_schema(path).metadata) or {}
    raw = meta.get(b"fgpo")
    return json.loads(raw) if raw else {}


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: set and restore at once
    os.umask(mask)
    return mask


def publish_temp(tmp: str | Path, path: str | Path) -> None:
    """Give a `mkstemp` file (mode 0600) the usual 0666 & ~umask mode, then rename it to `path`."""
    os.chmod(tmp, 0o666 & ~current_umask())
    os.replace(tmp, path)


def atomic_write_text(text: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        publish_temp(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def iter_chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]
