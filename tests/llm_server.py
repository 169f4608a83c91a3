"""A real OpenAI-compatible chat server for tests, on 127.0.0.1 and a free port.

It speaks the wire protocol (JSON and SSE streaming, usage, the Azure deployment path) so the
product's real HTTP client is what gets tested. Each test scripts it:

    def test_x(llm_server):
        llm_server.push(Scripted(status=429, headers={"Retry-After": "0"}), Scripted(content="hi"))
        llm = llm_server.make_llm()                 # an OpenAICompatLLM pointed at the server
        assert llm.chat("hello").text == "hi"
        assert len(llm_server.requests) == 2

With nothing scripted it answers deterministically from the prompt (see `echo_responder`):
the first sentence of the first numbered source, cited — "[1] Title (path)\\ntext" gives
"<first sentence of text> [1]".

Import the fixture into a test module with `from tests.llm_server import llm_server  # noqa: F401`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from monjyu.config import LLMConfig
from monjyu.llm.openai_compat import OpenAICompatLLM

AZURE_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")


@dataclass
class Scripted:
    """One scripted answer; the server pops one per request, then falls back to its responder."""

    content: str | None = None  # the reply text; None: ask the responder
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering (a client timeout below this fails)
    body: bytes | None = None  # raw body instead of a chat completion (e.g. malformed JSON)
    usage: bool = True  # report token usage (in streams too, when asked for)
    chunk_delay_s: float = 0.0  # pause between stream events


@dataclass
class Recorded:
    path: str  # with the query string
    headers: dict[str, str]
    body: dict[str, Any]


def count_tokens(text: str) -> int:
    """The server's deterministic 'tokenizer': whitespace-separated words."""
    return len(text.split())


def echo_responder(request: dict[str, Any]) -> str:
    """Cite the first numbered source: its first sentence then "[n]"; else echo the last user turn."""
    text = "\n".join(m.get("content") or "" for m in request.get("messages", []))
    source = re.search(r"^\[(\d+)\][^\n]*\n(.+?)(?:\n\s*\n|\Z)", text, re.MULTILINE | re.DOTALL)
    if source:
        sentence = re.split(r"(?<=[.!?。！？])\s*", source.group(2).strip(), maxsplit=1)[0]
        return f"{sentence} [{source.group(1)}]"
    users = [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "user"]
    return "echo: " + (users[-1] if users else "")


class LLMTestServer:
    def __init__(self, responder: Callable[[dict[str, Any]], str] = echo_responder):
        self.responder = responder
        self.script: deque[Scripted] = deque()
        self.requests: list[Recorded] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.v1 = self.url + "/v1"

    def push(self, *replies: Scripted) -> None:
        self.script.extend(replies)

    def config(self, **overrides: Any) -> LLMConfig:
        """Settings for the OpenAI-compatible provider pointed at this server."""
        values: dict[str, Any] = {"provider": "openai", "base_url": self.v1, "model": "test-model",
                                  "api_key_env": "MONJYU_TEST_LLM_KEY", "timeout_s": 5.0, "max_retries": 2}
        return LLMConfig(**{**values, **overrides})

    def make_llm(self, cache: Any = None, **overrides: Any) -> OpenAICompatLLM:
        """A client for this server with millisecond backoff, so retry tests run fast."""
        return OpenAICompatLLM(self.config(**overrides), cache, backoff_s=0.01)

    def start(self) -> LLMTestServer:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="llm-test-server", daemon=True).start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> LLMTestServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- called by the handler threads ---------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> Scripted:
        with self._lock:
            reply = self.script.popleft() if self.script else Scripted()
        if reply.content is None and reply.body is None and reply.status == 200:
            reply = Scripted(**{**reply.__dict__, "content": self.responder(body)})
        return reply

    def _count(self, body: dict[str, Any], reply: str) -> tuple[int, int]:
        prompt = count_tokens("\n".join(m.get("content") or "" for m in body.get("messages", [])))
        completion = count_tokens(reply)
        with self._lock:
            self.prompt_tokens += prompt
            self.completion_tokens += completion
        return prompt, completion


def _make_handler(server: LLMTestServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            if path != "/v1/chat/completions" and not AZURE_PATH.match(path):
                self._send(404, b'{"error": {"message": "no such route"}}')
                return
            body = json.loads(raw)
            with server._lock:
                server.requests.append(Recorded(self.path, dict(self.headers), body))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self._answer(body, server._next(body))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _answer(self, body: dict[str, Any], reply: Scripted) -> None:
            time.sleep(reply.delay_s)
            if reply.body is not None or reply.status != 200:
                payload = reply.body if reply.body is not None else json.dumps(
                    {"error": {"message": f"scripted status {reply.status}"}}).encode()
                self._send(reply.status, payload, reply.headers)
                return
            text = reply.content or ""
            prompt, completion = server._count(body, text)
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            model = body.get("model", "test-model")
            if not body.get("stream"):
                completion_body = {"id": "chatcmpl-test", "object": "chat.completion", "model": model,
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}]}
                if reply.usage:
                    completion_body["usage"] = usage
                self._send(200, json.dumps(completion_body).encode(), reply.headers)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            pieces = re.findall(r"\S+\s*|\s+", text)
            for piece in pieces:
                self._event({"object": "chat.completion.chunk", "model": model,
                             "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                time.sleep(reply.chunk_delay_s)
            self._event({"object": "chat.completion.chunk", "model": model,
                         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
                self._event({"object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
            self.wfile.flush()

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture
def llm_server():
    """A running LLMTestServer, stopped after the test."""
    with LLMTestServer() as server:
        yield server
