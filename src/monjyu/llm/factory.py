"""The one place that picks a chat model from the configuration: a registry of providers by name.

Each provider is imported only when it is asked for (llama-cpp-python is an optional extra)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config import LLMConfig
from ..errors import ConfigError
from .base import LLM
from .cache import ResponseCache


def _openai_compatible(cfg: LLMConfig, cache: ResponseCache | None) -> LLM:
    from .openai_compat import OpenAICompatLLM

    return OpenAICompatLLM(cfg, cache)


def _llama_cpp(cfg: LLMConfig, cache: ResponseCache | None) -> LLM:
    from .llama_cpp import LlamaCppLLM

    return LlamaCppLLM(cfg, cache)


PROVIDERS: dict[str, Callable[[LLMConfig, ResponseCache | None], LLM]] = {
    "openai": _openai_compatible,
    "azure": _openai_compatible,
    "llama-cpp": _llama_cpp,
}


def create_llm(cfg: LLMConfig, cache_dir: Path | None = None) -> LLM | None:
    """The configured chat model, or None for provider "none" (engines then answer extractively)."""
    if cfg.provider == "none":
        return None
    make = PROVIDERS.get(cfg.provider)
    if make is None:
        raise ConfigError(f"unknown llm.provider '{cfg.provider}'; use none, {', '.join(PROVIDERS)}")
    cache = None
    if cfg.cache:
        if cache_dir is None:
            raise ConfigError("llm.cache is on but no cache directory was given; set cache_dir or turn llm.cache off")
        cache = ResponseCache(Path(cache_dir) / "llm.sqlite")
    return make(cfg, cache)
