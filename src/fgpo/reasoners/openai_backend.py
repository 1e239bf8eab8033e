"""Reasoner over any OpenAI-compatible chat-completions endpoint (`vllm serve`, hosted APIs).

Requests go out concurrently (at most `spec.concurrency` in flight) through the official
`openai` client, whose own retry handles 408/409/429/5xx, timeouts and connection errors with
exponential back-off. The API key is read from the environment variable named by
`spec.api_key_env` at each `answer` call; it is never stored on the reasoner, logged or put
in an error message.
"""

from __future__ import annotations

import asyncio
import os

import openai
from openai import AsyncOpenAI

from fgpo.reasoners.base import Reasoner, ReasonerError, ReasonerSpec, Request
from fgpo.reasoners.prompt import option_letters, render_messages
from fgpo.redact import MASK, redact_text, redact_url

PLACEHOLDER_KEY = "EMPTY"
"""Sent when the key variable is unset; `vllm serve` without --api-key accepts any key."""

_FAILURES = (openai.APIStatusError, openai.APIConnectionError,  # APITimeoutError included
             openai.APIResponseValidationError)
_MALFORMED = (ValueError, TypeError, AttributeError, LookupError)  # a 200 that is no completion
_DETAIL_CHARS = 300


class OpenAIReasoner(Reasoner):
    """Frozen reasoner behind an OpenAI-compatible endpoint; one chat completion per cell."""

    def __init__(self, spec: ReasonerSpec) -> None:
        self.spec = spec

    def __repr__(self) -> str:
        s = self.spec
        return (f"OpenAIReasoner(base_url={s.base_url!r}, model={s.model!r}, "
                f"api_key_env={s.api_key_env!r}, concurrency={s.concurrency})")

    def answer(self, requests: list[Request]) -> list[str]:
        if not requests:
            return []
        key = os.environ.get(self.spec.api_key_env) or PLACEHOLDER_KEY
        try:
            return asyncio.run(self._answer_all(requests, key))
        except ExceptionGroup as group:
            # TaskGroup cancelled the other requests; report the first failure.
            failures = [e for e in _leaves(group) if isinstance(e, ReasonerError)]
            if not failures:
                raise
            raise failures[0] from None

    # --- async core ---------------------------------------------------------------------

    async def _answer_all(self, requests: list[Request], key: str) -> list[str]:
        s = self.spec
        sem = asyncio.Semaphore(s.concurrency)
        async with AsyncOpenAI(base_url=s.base_url, api_key=key, timeout=s.timeout_s,
                               max_retries=s.max_retries) as client:
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(self._answer_one(client, sem, r, key)) for r in requests]
        return [t.result() for t in tasks]

    async def _answer_one(self, client: AsyncOpenAI, sem: asyncio.Semaphore, req: Request,
                          key: str) -> str:
        s, q = self.spec, req.question
        extra = ({"structured_outputs": {"choice": option_letters(q)}} if s.structured_choice
                 else None)
        async with sem:
            try:
                resp = await client.chat.completions.create(
                    model=s.model, messages=render_messages(q, req.evidence), temperature=0,
                    max_tokens=s.max_new_tokens, extra_body=extra)
            except _FAILURES as err:
                # `from None`: the chained error carries the request, Authorization included.
                raise ReasonerError(self._failure_message(err, req, key)) from None
            except _MALFORMED as err:  # e.g. an HTML error page or a proxy's JSON sent as 200
                raise ReasonerError(self._failure_message(err, req, key, "malformed response "
                                                          "body")) from None
            try:
                content = resp.choices[0].message.content
            except _MALFORMED as err:  # valid JSON without `choices[0].message`
                raise ReasonerError(self._failure_message(
                    err, req, key, "response has no choices[0].message")) from None
        return content if isinstance(content, str) else ""

    def _failure_message(self, err: Exception, req: Request, key: str,
                         what: str = "") -> str:
        s = self.spec
        detail = f"{what + ': ' if what else ''}{type(err).__name__}: " \
                 f"{getattr(err, 'message', err)}"[:_DETAIL_CHARS]
        if key != PLACEHOLDER_KEY:
            detail = detail.replace(key, MASK)  # a server echoing the key must not leak it
        detail = redact_text(detail)  # e.g. a connection error quoting the URL with its password
        hint = ""
        if isinstance(err, openai.APIStatusError) and err.status_code in (401, 403):
            hint = f" Check the key in the environment variable {s.api_key_env}."
        return (f"OpenAI-compatible endpoint {redact_url(s.base_url)} (model {s.model!r}) "
                f"failed on "
                f"question {req.question.id!r}, mask {req.mask}: {detail} (after up to "
                f"{s.max_retries} retries with back-off).{hint} Completed cells are saved; "
                f"rerun the same command to resume.")


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside a (possibly nested) exception group."""
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out
