"""One client for every OpenAI-compatible chat endpoint: OpenAI, Azure OpenAI, Ollama, vLLM,
llama.cpp server, LM Studio.

Transient failures (429, 5xx, connection errors, timeouts) are retried with exponential backoff;
what is left becomes a ServiceError that says which URL failed and what to try. The API key is
sent in a header only: it never appears in URLs, messages or repr.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from email.utils import parsedate_to_datetime
from time import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from ..config import LLMConfig
from ..errors import ConfigError, ServiceError
from .base import LLM, CallOptions, Reply, estimate_tokens
from .cache import ResponseCache

OPENAI_URL = "https://api.openai.com/v1"
OPTIONAL_FIELDS = ("response_format", "stream_options")  # dropped when a server rejects them
_LoopResources = tuple[httpx.AsyncClient, asyncio.Semaphore]


class _OptionRejected(Exception):
    """The server answered 400 to an optional request field; retry without it."""

    def __init__(self, option: str):
        self.option = option


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


def _retry_after_s(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time())
        except (TypeError, ValueError):
            return None


class OpenAICompatLLM(LLM):
    def __init__(self, cfg: LLMConfig, cache: ResponseCache | None = None, *,
                 backoff_s: float = 0.5, max_retry_after_s: float = 60.0):
        azure = cfg.provider == "azure"
        if not cfg.model:
            raise ConfigError(f"llm.model is required for provider '{cfg.provider}' "
                              "(the model name, or the deployment name for Azure)")
        base = cfg.base_url.rstrip("/") or ("" if azure else OPENAI_URL)
        if azure and not base:
            raise ConfigError("llm.base_url is required for provider 'azure' (https://<resource>.openai.azure.com)")
        if azure and not cfg.api_version:
            raise ConfigError("llm.api_version is required for provider 'azure' (e.g. 2024-10-21)")
        host = urlsplit(base).netloc or base
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        if not key and (azure or host.endswith(("api.openai.com", ".openai.azure.com"))):
            variable = cfg.api_key_env or "(llm.api_key_env is empty)"
            raise ConfigError(f"environment variable {variable} holds no API key; set it to your "
                              f"{'Azure OpenAI' if azure else 'OpenAI'} key (llm.api_key_env names the variable)")
        super().__init__(f"{cfg.provider}/{cfg.model}@{host}", cfg, cache)
        if azure:
            self.url = f"{base}/openai/deployments/{cfg.model}/chat/completions"
            self._params = {"api-version": cfg.api_version}
            self._headers = {"api-key": key}
        else:
            self.url = f"{base}/chat/completions"
            self._params = {}
            self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._key = key
        self._backoff_s = backoff_s
        self._max_retry_after_s = max_retry_after_s
        self._unsupported: set[str] = set()
        # httpx clients and semaphores belong to one event loop; keep one pair per loop.
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopResources]
        self._per_loop = weakref.WeakKeyDictionary()
        self._per_loop_lock = threading.Lock()

    # -- provider hooks ------------------------------------------------------------------------

    async def _complete(self, messages: list[dict[str, str]], opts: CallOptions) -> Reply:
        client, slots = self._resources()
        async with slots:
            resp = await self._post(client, lambda: self._body(messages, opts, stream=False), stream=False)
        try:
            data = resp.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise ServiceError(f"LLM endpoint {self.url} returned a body that is not a chat completion: "
                               f"{self._redact(resp.text[:200])!r}; check that llm.base_url is an "
                               "OpenAI-compatible endpoint (usually ending in /v1)") from None
        return self._reply(text, data.get("model"), data.get("usage"), messages)

    async def _stream(self, messages: list[dict[str, str]], opts: CallOptions) -> AsyncIterator[str | Reply]:
        client, slots = self._resources()
        async with slots:
            resp = await self._post(client, lambda: self._body(messages, opts, stream=True), stream=True)
            parts: list[str] = []
            usage, model = None, None
            try:
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise ServiceError(f"LLM endpoint {self.url} sent a stream event that is not JSON: "
                                           f"{self._redact(data[:200])!r}") from None
                    if chunk.get("error"):
                        raise ServiceError(f"LLM endpoint {self.url} reported an error mid-stream: "
                                           f"{self._redact(str(chunk['error'])[:200])}")
                    model = chunk.get("model") or model
                    usage = chunk.get("usage") or usage
                    for choice in chunk.get("choices") or []:
                        delta = (choice.get("delta") or {}).get("content")
                        if delta:
                            parts.append(delta)
                            yield delta
            except httpx.TimeoutException:
                raise ServiceError(f"LLM endpoint {self.url} stalled for more than {self._cfg.timeout_s}s "
                                   "mid-stream; raise llm.timeout_s or use a faster model") from None
            except httpx.TransportError as exc:
                raise ServiceError(f"connection to LLM endpoint {self.url} broke mid-stream "
                                   f"({type(exc).__name__}); try again") from None
            finally:
                await resp.aclose()
        yield self._reply("".join(parts), model, usage, messages)

    async def aclose(self) -> None:
        with self._per_loop_lock:
            pair = self._per_loop.pop(asyncio.get_running_loop(), None)
        if pair is not None:
            await pair[0].aclose()

    # -- HTTP ----------------------------------------------------------------------------------

    def _resources(self) -> _LoopResources:
        loop = asyncio.get_running_loop()
        with self._per_loop_lock:
            pair = self._per_loop.get(loop)
            if pair is None:
                client = httpx.AsyncClient(headers=self._headers, timeout=httpx.Timeout(self._cfg.timeout_s),
                                           limits=httpx.Limits(max_connections=self._cfg.concurrency))
                pair = self._per_loop[loop] = (client, asyncio.Semaphore(self._cfg.concurrency))
            return pair

    def _body(self, messages: list[dict[str, str]], opts: CallOptions, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._cfg.model, "messages": messages,
                                "temperature": opts.temperature, "max_tokens": opts.max_tokens}
        if opts.json_schema is not None:
            body["response_format"] = {"type": "json_object"}
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        for option in self._unsupported:
            body.pop(option, None)
        return body

    async def _post(self, client: httpx.AsyncClient, make_body: Callable[[], dict[str, Any]],
                    stream: bool) -> httpx.Response:
        """POST with retries; a successful (2xx) response, open when streaming. The caller holds a
        concurrency slot throughout, backoff included, which also eases a rate-limited server."""
        while True:
            try:
                return await self._post_with_retries(client, make_body(), stream)
            except _OptionRejected as rejected:
                self._unsupported.add(rejected.option)

    async def _post_with_retries(self, client: httpx.AsyncClient, body: dict[str, Any], stream: bool) -> httpx.Response:
        attempts = self._cfg.max_retries + 1
        retrying = AsyncRetrying(stop=stop_after_attempt(attempts), wait=self._wait,
                                 retry=retry_if_exception(_retryable), reraise=True)
        try:
            return await retrying(self._attempt, client, body, stream)
        except httpx.HTTPStatusError as exc:
            raise ServiceError(self._status_message(exc.response, attempts)) from None
        except httpx.TimeoutException:
            raise ServiceError(f"LLM endpoint {self.url} did not answer within {self._cfg.timeout_s}s "
                               f"(llm.timeout_s), {attempts} attempt(s); raise llm.timeout_s or use a "
                               "smaller model") from None
        except httpx.TransportError as exc:
            raise ServiceError(f"cannot reach LLM endpoint {self.url} ({type(exc).__name__}, "
                               f"{attempts} attempt(s)); {self._unreachable_hint()}") from None

    async def _attempt(self, client: httpx.AsyncClient, body: dict[str, Any], stream: bool) -> httpx.Response:
        request = client.build_request("POST", self.url, params=self._params, json=body)
        resp = await client.send(request, stream=stream)
        if resp.status_code >= 400:
            await resp.aread()
            await resp.aclose()
            if resp.status_code == 400:
                for option in OPTIONAL_FIELDS:
                    if option in body and option in resp.text:
                        raise _OptionRejected(option)
            resp.raise_for_status()
        return resp

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with jitter; a 429's Retry-After wins (capped)."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 429:
            after = _retry_after_s(exc.response.headers.get("Retry-After"))
            if after is not None:
                return min(after, self._max_retry_after_s)
        backoff = min(self._backoff_s * 2 ** (state.attempt_number - 1), 30.0)
        return backoff * random.uniform(1.0, 1.25)

    # -- messages and accounting ---------------------------------------------------------------

    def _reply(self, text: str, model: str | None, usage: dict | None, messages: list[dict[str, str]]) -> Reply:
        model = model or self._cfg.model
        if usage and usage.get("prompt_tokens") is not None and usage.get("completion_tokens") is not None:
            return Reply(text, model, int(usage["prompt_tokens"]), int(usage["completion_tokens"]))
        prompt = "\n".join(m["content"] for m in messages)
        return Reply(text, model, estimate_tokens(prompt), estimate_tokens(text), estimated=True)

    def _status_message(self, resp: httpx.Response, attempts: int) -> str:
        code = resp.status_code
        try:
            error = resp.json().get("error")
            detail = error.get("message", str(error)) if isinstance(error, dict) else str(error or resp.text)
        except (ValueError, AttributeError):
            detail = resp.text
        if code in (401, 403):
            hint = f"check the API key in the environment variable {self._cfg.api_key_env}"
        elif code == 404:
            hint = "check llm.model and llm.base_url" + (
                " (the Azure deployment name and llm.api_version)" if self._cfg.provider == "azure" else
                "; for Ollama, pull the model first (`ollama pull <model>`)")
        elif code == 429:
            hint = "the service is rate limiting: lower llm.concurrency or try again later"
        elif code >= 500:
            hint = "the server failed: try again later or look at its logs"
        else:
            hint = "check the llm settings"
        return (f"LLM endpoint {self.url} answered HTTP {code} after {attempts} attempt(s): "
                f"{self._redact(detail[:200])}; {hint}")

    def _unreachable_hint(self) -> str:
        parts = urlsplit(self.url)
        if parts.port == 11434:
            return "is Ollama running? start it with `ollama serve`"
        if parts.hostname in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
            return f"is the local model server running on port {parts.port}? check llm.base_url"
        return "check llm.base_url and the network connection"

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text
