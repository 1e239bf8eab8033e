"""Map a reasoner's free-text answer to an option index (None when it names no option)."""

from __future__ import annotations

import re

from fgpo.question import LETTERS

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_MARKUP = re.compile(r"[*_`#]")
_PATTERNS = [
    re.compile(r"^\s*\(?([A-Za-z])\)?\s*[.):]?\s*$"),                 # "B", "b", "(B)", "B."
    re.compile(r"\banswer\s*(?:is|:|=)?\s*(?:option\s*)?\(?([A-Z])\)?(?![A-Za-z])", re.I),
    re.compile(r"\boption\s*\(?([A-Z])\)?(?![A-Za-z])", re.I),        # "Option B: ..."
    re.compile(r"^\s*\(?([A-Z])\)?\s*[).:\-]"),                       # "B) no", "B: ..."
    re.compile(r"^\s*\(([A-Z])\)"),                                   # "(B) no"
]


def parse_answer(raw: str | None, options: list[str]) -> int | None:
    """Option index named by `raw`, else None (refusals and off-list letters count as wrong).

    Accepts a bare letter in either case, "The answer is (B).", "Option B: ...", "B) no",
    markdown emphasis, a leading <think> block, or the exact text of one option.
    """
    if not raw:
        return None
    text = _MARKUP.sub("", _THINK.sub("", raw)).strip()
    if not text:
        return None
    n = len(options)
    for pattern in _PATTERNS:
        m = pattern.search(text)
        if m:
            idx = LETTERS.index(m.group(1).upper())
            return idx if idx < n else None
    norm = text.lower().rstrip(".! ")
    exact = [i for i, opt in enumerate(options) if opt.lower() == norm]
    if len(exact) == 1:
        return exact[0]
    named = [i for i, opt in enumerate(options)
             if re.search(rf"(?<![\w-]){re.escape(opt.lower())}(?![\w-])", norm)]
    return named[0] if len(named) == 1 else None
