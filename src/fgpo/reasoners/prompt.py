"""One prompt template for every LLM backend: question, options, sequence(s), tool evidence.

The evidence comes last, so all 2^K prompts of a question share everything before it: the
prefix a vLLM engine caches once per question.
"""

from __future__ import annotations

import hashlib

from fgpo.question import LETTERS, Question
from fgpo.tools.base import ToolOutput

SYSTEM = ("You are an expert in genomics and bioinformatics. Answer multiple-choice questions "
          "about DNA sequences. Tool outputs, when given, come from deterministic analysis "
          "programs run on the sequence; use them when they help.")
PREFIX = "Question: {question}\n\nOptions:\n{options}\n\n{sequences}\n\n"
EVIDENCE = "Tool outputs:\n{blocks}\n\n"
NO_EVIDENCE = "Tool outputs: none.\n\n"
SUFFIX = "Answer with the letter of exactly one option ({letters})."
TEMPLATE_HASH = hashlib.sha256("\x1e".join([SYSTEM, PREFIX, EVIDENCE, NO_EVIDENCE, SUFFIX])
                               .encode()).hexdigest()[:16]


def render_prefix(q: Question) -> str:
    """Everything shared by the 2^K prompts of `q` (question, options, sequences)."""
    options = "\n".join(f"{LETTERS[i]}) {opt}" for i, opt in enumerate(q.options))
    seqs = "\n".join(f"Sequence {label} ({len(s)} bp):\n{s}" for label, s in q.sequences.items())
    return PREFIX.format(question=q.question, options=options, sequences=seqs)


def render_prompt(q: Question, evidence: dict[str, ToolOutput], prefix: str | None = None
                  ) -> str:
    """The user message for `q` with the given tools' text blocks, in the order given
    (`prefix`: `render_prefix(q)` when the caller already has it)."""
    body = (EVIDENCE.format(blocks="\n".join(o.text for o in evidence.values())) if evidence
            else NO_EVIDENCE)
    letters = ", ".join(LETTERS[: len(q.options)])
    return (render_prefix(q) if prefix is None else prefix) + body + SUFFIX.format(letters=letters)


def render_messages(q: Question, evidence: dict[str, ToolOutput]) -> list[dict[str, str]]:
    """Chat messages (system + user) for chat-template backends."""
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": render_prompt(q, evidence)}]


def render_many(items: list[tuple[Question, dict[str, ToolOutput]]]) -> list[list[dict[str, str]]]:
    """`render_messages` for many (question, evidence) pairs, each question's prefix rendered
    once (the 2^K prompts of a question share it); identical output."""
    prefixes: dict[int, str] = {}
    out = []
    for q, evidence in items:
        prefix = prefixes.get(id(q))
        if prefix is None:
            prefix = prefixes[id(q)] = render_prefix(q)
        out.append([{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": render_prompt(q, evidence, prefix)}])
    return out


def option_letters(q: Question) -> list[str]:
    return list(LETTERS[: len(q.options)])
