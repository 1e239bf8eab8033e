"""The project's errors: bad input (naming the file, record and field at fault, so it is easy
to find), a reasoner backend that failed (the saved cells make a rerun resume), and training
that diverged (a non-finite loss: stopped before the weights took it)."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input. The message names where it is: file, record and field."""

    def __init__(self, message: str, *, file: str | None = None, record: str | int | None = None,
                 field: str | None = None) -> None:
        where = []
        if file is not None:
            where.append(f"file {file}")
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field '{field}'")
        self.message = message
        self.file, self.record, self.field = file, record, field
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ReasonerError(RuntimeError):
    """The backend failed after its retries; completed cells are saved, a rerun resumes."""


class DivergedError(RuntimeError):
    """Training produced a non-finite loss or gradient; the step was not applied."""
