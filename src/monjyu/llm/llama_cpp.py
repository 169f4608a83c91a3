"""In-process chat model from a .gguf file via llama-cpp-python: no server, no network.

llama.cpp calls block and one model instance is not safe to share between threads, so every
call runs in a worker thread, one at a time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..config import LLMConfig
from ..errors import ConfigError, ServiceError
from ..runtime import cpu_cores
from .base import LLM, CallOptions, Reply, estimate_tokens
from .cache import ResponseCache


class LlamaCppLLM(LLM):
    def __init__(self, cfg: LLMConfig, cache: ResponseCache | None = None):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ConfigError("llm.provider 'llama-cpp' needs llama-cpp-python: "
                              "pip install 'monjyu[llama]' (it compiles llama.cpp, a few minutes)") from None
        if not cfg.model_path:
            raise ConfigError("llm.model_path must name a .gguf model file for provider 'llama-cpp'")
        path = Path(cfg.model_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"llm.model_path {path} does not exist; point it at a .gguf model file")
        try:
            # Every core for the prompt and the reply: llama-cpp-python's default is half of them,
            # which halves the prompt's speed on a small machine.
            self._llama = Llama(model_path=str(path), n_ctx=cfg.context_window, verbose=False,
                                chat_format=cfg.chat_format or None, n_threads=cpu_cores(),
                                n_threads_batch=cpu_cores())
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"llama.cpp cannot load {path}: {exc}; is it a .gguf file this version reads?") from None
        super().__init__(f"llama-cpp/{path.name}", cfg, cache)
        self._lock = threading.Lock()

    def _kwargs(self, messages: list[dict[str, str]], opts: CallOptions) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"messages": messages, "max_tokens": opts.max_tokens, "temperature": opts.temperature}
        if opts.json_schema is not None:
            # llama.cpp turns the schema into a grammar: the model cannot produce anything else.
            kwargs["response_format"] = {"type": "json_object", "schema": opts.json_schema}
        return kwargs

    async def _complete(self, messages: list[dict[str, str]], opts: CallOptions) -> Reply:
        def run() -> dict[str, Any]:
            with self._lock:
                return self._llama.create_chat_completion(**self._kwargs(messages, opts))

        try:
            out = await asyncio.to_thread(run)
        except (ValueError, RuntimeError) as exc:  # e.g. prompt longer than the context window
            raise ServiceError(f"llama.cpp ({self.id}) failed: {exc}; a prompt longer than "
                               f"llm.context_window ({self._cfg.context_window}) is the usual cause") from None
        usage = out.get("usage") or {}
        return Reply(out["choices"][0]["message"]["content"] or "", self.id,
                     usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))

    async def _stream(self, messages: list[dict[str, str]], opts: CallOptions) -> AsyncIterator[str | Reply]:
        """A producer thread feeds deltas into an asyncio queue; it stops when the consumer does."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()
        stop = threading.Event()

        def produce() -> None:
            try:
                with self._lock:
                    for chunk in self._llama.create_chat_completion(**self._kwargs(messages, opts), stream=True):
                        if stop.is_set():
                            break
                        delta = chunk["choices"][0]["delta"].get("content")
                        if delta:
                            loop.call_soon_threadsafe(queue.put_nowait, delta)
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except Exception as exc:  # handed to the consumer, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)

        producer = loop.run_in_executor(None, produce)
        parts: list[str] = []
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise ServiceError(f"llama.cpp ({self.id}) failed while streaming: {item}")
                parts.append(item)
                yield item
        finally:
            stop.set()
            await producer
        # The stream reports no usage: one delta is about one token; the prompt is estimated.
        prompt = "\n".join(m["content"] for m in messages)
        yield Reply("".join(parts), self.id, estimate_tokens(prompt), len(parts), estimated=True)

    async def aclose(self) -> None:
        await asyncio.to_thread(self._llama.close)
