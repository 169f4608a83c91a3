"""Embedding providers behind one protocol, plus a content-hash vector cache."""

from .base import Embedder, create_embedder
from .cache import CachedEmbedder, EmbeddingCache

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingCache", "create_embedder"]
