"""OpenAIReasoner against a local in-test chat-completions server (loopback only)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fgpo.errors import InputError
from fgpo.question import Question
from fgpo.reasoners import ReasonerError, ReasonerSpec, Request, build_reasoner
from fgpo.reasoners.prompt import render_messages
from fgpo.tools.base import ToolOutput

KEY_ENV = "FGPO_TEST_OPENAI_KEY"
SECRET = "sk-test-SECRET-123"
EVIDENCE = {"composition": ToolOutput(text="[composition] GC 50%", data={})}


# --- fake server ----------------------------------------------------------------------------

class FakeServer:
    """Records bodies, Authorization headers, attempts per prompt and peak requests in flight.

    `behave(prompt, attempt)` -> (HTTP status, seconds to sleep before answering).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []
        self.attempts: Counter[str] = Counter()
        self.in_flight = self.peak = 0
        self.behave: Callable[[str, int], tuple[int, float]] = lambda prompt, attempt: (200, 0.0)
        self.raw_200: bytes | None = None  # sent instead of a completion (a broken proxy)
        self.url = ""


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_POST(self) -> None:
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        with fake.lock:
            fake.bodies.append(body)
            fake.auth.append(self.headers.get("Authorization"))
            fake.attempts[prompt] += 1
            attempt = fake.attempts[prompt]
            fake.in_flight += 1
            fake.peak = max(fake.peak, fake.in_flight)
        status, delay = fake.behave(prompt, attempt)
        time.sleep(delay)
        with fake.lock:  # before replying, so the client cannot overlap its next request
            fake.in_flight -= 1
        if self.path != "/v1/chat/completions":
            status = 404
        letter = "A" if "GC 50%" in prompt else "B"
        payload = ({"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                    "model": body["model"], "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                      "total_tokens": 2},
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": letter}}]}
                   if status == 200 else  # echoes the key: the reasoner must redact it
                   {"error": {"message": f"boom {self.headers.get('Authorization')}",
                              "type": "server_error"}})
        data = json.dumps(payload).encode()
        if status == 200 and fake.raw_200 is not None:
            data = fake.raw_200
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[FakeServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    fake = FakeServer()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.fake = fake  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield fake
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def question(i: int) -> Question:
    return Question(id=f"q{i}", benchmark="b", family="f", question=f"Is it {i}?",
                    sequences={"seq": "ACGT"}, options=["yes", "no"], answer=0)


def requests(n: int) -> list[Request]:
    return [Request(question(i), mask=i % 2, evidence=EVIDENCE if i % 2 else {})
            for i in range(n)]


def spec(url: str, **kw: object) -> ReasonerSpec:
    return ReasonerSpec(backend="openai", model="test-model", base_url=url, api_key_env=KEY_ENV,
                        **kw)  # type: ignore[arg-type]


# --- tests ----------------------------------------------------------------------------------

def test_answers_in_order_with_bounded_concurrency(server: FakeServer) -> None:
    server.behave = lambda prompt, attempt: (200, 0.02 * (len(prompt) % 4 + prompt.count("1")))
    reqs = requests(20)
    answers = build_reasoner(spec(server.url, concurrency=4, max_new_tokens=7)).answer(reqs)
    assert answers == ["A" if r.evidence else "B" for r in reqs]
    assert 2 <= server.peak <= 4
    assert set(server.auth) == {"Bearer EMPTY"}
    by_prompt = {b["messages"][-1]["content"]: b for b in server.bodies}
    for r in reqs:
        body = by_prompt[render_messages(r.question, r.evidence)[-1]["content"]]
        assert body["messages"] == render_messages(r.question, r.evidence)
        assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0, 7)
        assert body["structured_outputs"] == {"choice": ["A", "B"]}

    server.bodies.clear()
    build_reasoner(spec(server.url, structured_choice=False)).answer(requests(2))
    assert len(server.bodies) == 2 and all("structured_outputs" not in b for b in server.bodies)


def test_retries_server_errors(server: FakeServer) -> None:
    server.behave = lambda prompt, attempt: (500 if attempt <= 2 else 200, 0.0)
    reqs = requests(3)
    answers = build_reasoner(spec(server.url, max_retries=2)).answer(reqs)
    assert answers == ["B", "A", "B"]
    assert sorted(server.attempts.values()) == [3, 3, 3]


def test_retries_timeouts(server: FakeServer) -> None:
    server.behave = lambda prompt, attempt: (200, 1.5 if attempt == 1 and "Is it 0?" in prompt
                                             else 0.0)
    answers = build_reasoner(spec(server.url, timeout_s=0.5, max_retries=2)).answer(requests(2))
    assert answers == ["B", "A"]
    assert sorted(server.attempts.values()) == [1, 2]


def test_persistent_failure_names_url_and_status_not_key(
        server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    server.behave = lambda prompt, attempt: (503, 0.0)
    s = spec(server.url, max_retries=1)
    reasoner = build_reasoner(s)
    with pytest.raises(ReasonerError) as info:
        reasoner.answer(requests(1))
    message = str(info.value)
    assert server.url in message and "503" in message and "rerun" in message
    assert SECRET not in message and SECRET not in repr(info.value)
    assert list(server.attempts.values()) == [2]
    assert set(server.auth) == {f"Bearer {SECRET}"}
    assert SECRET not in repr(reasoner) and SECRET not in str(s.public())


def test_failure_cancels_in_flight_requests(server: FakeServer) -> None:
    server.behave = lambda prompt, attempt: (400, 0.0) if "Is it 0?" in prompt else (200, 5.0)
    start = time.monotonic()
    with pytest.raises(ReasonerError, match="400"):
        build_reasoner(spec(server.url, max_retries=0)).answer(requests(2))
    assert time.monotonic() - start < 3.0


def test_unreachable_endpoint() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    start = time.monotonic()
    with pytest.raises(ReasonerError, match="APIConnectionError") as info:
        build_reasoner(spec(url, max_retries=0, timeout_s=5)).answer(requests(1))
    assert url in str(info.value)
    assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b'{"id": "x"}',
                                  b'{"choices": []}', b"[1, 2]",
                                  b'{"choices": [{"message": null}]}'])
def test_malformed_200_body_is_a_resumable_reasoner_error(server: FakeServer,
                                                          body: bytes) -> None:
    # a 200 that is not a completion used to escape as a raw ExceptionGroup (exit 1)
    server.raw_200 = body
    with pytest.raises(ReasonerError) as info:
        build_reasoner(spec(server.url, max_retries=0)).answer(requests(3))
    message = str(info.value)
    assert server.url in message and "rerun" in message
    assert "malformed" in message or "no choices" in message


def test_base_url_password_is_redacted_in_failures(server: FakeServer) -> None:
    server.behave = lambda prompt, attempt: (503, 0.0)
    url = server.url.replace("http://", "http://user:hunter2-PW@")
    with pytest.raises(ReasonerError) as info:
        build_reasoner(spec(url, max_retries=0)).answer(requests(1))
    assert "hunter2-PW" not in str(info.value) and "user:***@" in str(info.value)


def test_a_password_quoted_in_the_error_detail_is_redacted() -> None:
    # a connection error may quote the URL it could not reach, password included
    url = "http://user:hunter2-PW@10.0.0.1:8000/v1"
    reasoner = build_reasoner(spec(url, max_retries=0))
    err = ConnectionError(f"cannot connect to {url}/chat/completions")
    message = reasoner._failure_message(err, requests(1)[0], "sk-placeholder")
    assert "hunter2-PW" not in message and "user:***@10.0.0.1" in message


def test_recorded_spec_masks_a_base_url_password() -> None:
    # spec.public() goes into table metadata, build journals and MLflow params
    s = spec("http://user:hunter2-PW@10.0.0.1:8000/v1")
    assert s.public()["base_url"] == "http://user:***@10.0.0.1:8000/v1"
    assert s.public()["api_key_env"] == KEY_ENV
    assert "hunter2-PW" not in repr(s.public())


def test_without_the_openai_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # as if `fgpo[openai]` were not installed
    monkeypatch.delitem(sys.modules, "fgpo.reasoners.openai_backend", raising=False)
    with pytest.raises(InputError, match=r"pip install -e '\.\[openai\]'"):
        build_reasoner(spec("http://127.0.0.1:1/v1"))
