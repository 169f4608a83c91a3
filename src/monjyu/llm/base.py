"""The chat-model protocol every engine calls and usage accounting (providers in factory.py).

Providers implement two private coroutines (`_complete`, `_stream`); this base class adds what
must behave the same everywhere: structured output with one repair call, the response cache,
usage metering, and the sync twins of the async methods.
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..config import LLMConfig
from ..errors import ServiceError
from . import structured

if TYPE_CHECKING:
    from .cache import ResponseCache


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


Messages = str | Sequence[Message | dict[str, str]]


@dataclass
class Usage:
    """Cost of one or more calls. Cached calls count as calls but spend no tokens;
    `estimated_calls` counts calls whose server reported no token counts (we estimated them)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached_calls: int = 0
    estimated_calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "latency_s": round(self.latency_s, 3), "total_tokens": self.total_tokens}


class UsageMeter:
    """Accumulates usage of every call of one LLM; safe from threads and tasks (no await inside).
    Each call is also added to the UsageScopes active in the caller's context."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Usage] = []
        self._total = Usage()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self._records.append(usage)
            self._total = self._total + usage
        for scope in _scopes.get():
            if scope.meter is None or scope.meter is self:
                scope.add(usage)

    @property
    def total(self) -> Usage:
        with self._lock:
            return self._total

    @property
    def records(self) -> list[Usage]:
        with self._lock:
            return list(self._records)


_scopes: ContextVar[tuple[UsageScope, ...]] = ContextVar("monjyu_usage_scopes", default=())


class UsageScope:
    """Usage of the calls made inside `with UsageScope() as u:` by this task and the tasks and
    threads it starts (context variables follow them), so concurrent requests on one LLM are
    accounted separately. Given an `llm`, only that model's calls count."""

    def __init__(self, llm: LLM | None = None):
        self.meter = llm.meter if llm is not None else None
        self.usage = Usage()
        self._lock = threading.Lock()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.usage = self.usage + usage

    def to_dict(self) -> dict[str, Any]:
        return self.usage.to_dict()

    def __enter__(self) -> UsageScope:
        self._token = _scopes.set((*_scopes.get(), self))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _scopes.reset(self._token)


@dataclass
class ChatResult:
    text: str
    parsed: BaseModel | None
    usage: Usage
    model: str
    cached: bool = False


@dataclass
class CallOptions:
    max_tokens: int
    temperature: float
    json_schema: dict[str, Any] | None = None  # set: the provider asks for JSON output


@dataclass
class Reply:
    """What a provider returns for one request."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False
    latency_s: float = 0.0

    def usage(self) -> Usage:
        return Usage(calls=1, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                     latency_s=self.latency_s, estimated_calls=int(self.estimated))


def estimate_tokens(text: str) -> int:
    """Rough token count for servers that report none: ~4 ASCII chars per token, 1 per other char."""
    ascii_chars = sum(1 for c in text if c.isascii())
    return max(1, ascii_chars // 4 + (len(text) - ascii_chars)) if text else 0


class LLM(ABC):
    """A chat model. Use `achat`/`astream` from async code, `chat`/`stream` from sync code."""

    id: str

    def __init__(self, id: str, cfg: LLMConfig, cache: ResponseCache | None = None):
        self.id = id
        self.meter = UsageMeter()
        self._cfg = cfg
        self._cache = cache

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"

    # -- providers implement these -------------------------------------------------------------

    @abstractmethod
    async def _complete(self, messages: list[dict[str, str]], opts: CallOptions) -> Reply: ...

    @abstractmethod
    def _stream(self, messages: list[dict[str, str]], opts: CallOptions) -> AsyncIterator[str | Reply]:
        """Yields text deltas, then one final Reply with the whole text and token counts."""

    async def aclose(self) -> None:
        """Release connections or model memory held for the running event loop."""

    # -- public API ----------------------------------------------------------------------------

    async def achat(self, messages: Messages, *, schema: type[BaseModel] | None = None,
                    max_tokens: int | None = None, temperature: float | None = None) -> ChatResult:
        """One completion. With `schema`, the reply is parsed into it (one repair call at most);
        a reply that still does not fit raises ServiceError."""
        msgs = as_dicts(messages)
        opts = self._options(max_tokens, temperature)
        lang = structured.language_of(msgs)
        if schema is not None:
            opts.json_schema = schema.model_json_schema()
            msgs = structured.with_schema_instruction(msgs, opts.json_schema, lang)

        key = self._cache.key(self.id, msgs, asdict(opts), schema) if self._cache else None
        if key is not None:
            start = time.perf_counter()
            if (hit := self._cache.get(key)) is not None:
                try:
                    parsed = structured.parse(hit["text"], schema) if schema else None
                except ValueError:  # the schema changed since: ask the model again
                    hit = None
            if hit is not None:
                usage = Usage(calls=1, cached_calls=1, latency_s=time.perf_counter() - start)
                self.meter.add(usage)
                return ChatResult(hit["text"], parsed, usage, hit["model"], cached=True)

        reply = await self._timed_complete(msgs, opts)
        usage = reply.usage()
        parsed = None
        if schema is not None:
            try:
                parsed = structured.parse(reply.text, schema)
            except ValueError as first_error:
                repair = structured.repair_messages(msgs, reply.text, str(first_error), lang)
                reply = await self._timed_complete(repair, opts)
                usage = usage + reply.usage()
                try:
                    parsed = structured.parse(reply.text, schema)
                except ValueError as exc:
                    raise ServiceError(
                        f"LLM {self.id} did not return JSON matching {schema.__name__}, even after one repair "
                        f"request: {exc}; reply began {reply.text[:120]!r}. Try a larger model or a lower "
                        "llm.temperature") from None
        if key is not None:
            self._cache.put(key, {"text": reply.text, "model": reply.model})
        return ChatResult(reply.text, parsed, usage, reply.model)

    async def astream(self, messages: Messages, *, max_tokens: int | None = None,
                      temperature: float | None = None) -> AsyncIterator[str]:
        """Text deltas as they arrive; the call's usage goes to the meter when the stream ends
        (estimated from the text so far when it ends early)."""
        msgs = as_dicts(messages)
        start = time.perf_counter()
        final: Reply | None = None
        parts: list[str] = []
        try:
            async with aclosing(self._stream(msgs, self._options(max_tokens, temperature))) as events:
                async for item in events:
                    if isinstance(item, Reply):
                        final = item
                    else:
                        parts.append(item)
                        yield item
        finally:
            if final is None and parts:  # the caller stopped early, or the connection broke mid-way
                prompt = "\n".join(m["content"] for m in msgs)
                final = Reply("".join(parts), self.id, estimate_tokens(prompt), estimate_tokens("".join(parts)),
                              estimated=True)
            if final is not None:
                final.latency_s = time.perf_counter() - start
                self.meter.add(final.usage())

    def chat(self, messages: Messages, *, schema: type[BaseModel] | None = None,
             max_tokens: int | None = None, temperature: float | None = None) -> ChatResult:
        """Sync `achat`; works with or without an event loop running in this thread."""
        return run_sync(self.achat(messages, schema=schema, max_tokens=max_tokens, temperature=temperature))

    def stream(self, messages: Messages, *, max_tokens: int | None = None,
               temperature: float | None = None) -> Iterator[str]:
        """Sync `astream`; the stream runs on the shared background loop."""
        agen = self.astream(messages, max_tokens=max_tokens, temperature=temperature)
        try:
            while True:
                try:
                    yield run_sync(_anext(agen))
                except StopAsyncIteration:
                    return
        finally:
            run_sync(agen.aclose())

    def close(self) -> None:
        run_sync(self.aclose())

    # -- helpers -------------------------------------------------------------------------------

    def _options(self, max_tokens: int | None, temperature: float | None) -> CallOptions:
        return CallOptions(max_tokens=max_tokens or self._cfg.max_tokens,
                           temperature=self._cfg.temperature if temperature is None else temperature)

    async def _timed_complete(self, msgs: list[dict[str, str]], opts: CallOptions) -> Reply:
        start = time.perf_counter()
        reply = await self._complete(msgs, opts)
        reply.latency_s = time.perf_counter() - start
        self.meter.add(reply.usage())
        return reply


def as_dicts(messages: Messages) -> list[dict[str, str]]:
    """Accept a bare prompt string, Message objects or OpenAI-style dicts."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for m in messages:
        role, content = (m.role, m.content) if isinstance(m, Message) else (m["role"], m["content"])
        out.append({"role": role, "content": content})
    return out


# -- sync bridge: one background event loop shared by all sync calls --------------------------

_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _loop_thread
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _loop_thread = threading.Thread(target=_loop.run_forever, name="monjyu-llm", daemon=True)
            _loop_thread.start()
        return _loop


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even when the calling thread already runs an
    event loop (a Jupyter cell, an async web handler): it runs on a private loop thread instead,
    so HTTP connections and concurrency limits are shared by all sync callers."""
    loop = _background_loop()
    if threading.current_thread() is _loop_thread:
        coro.close()
        raise RuntimeError("sync LLM call from inside the LLM loop; await the async method instead")
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def _anext(agen: AsyncIterator[str]) -> str:
    return await agen.__anext__()
