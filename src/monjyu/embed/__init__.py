"""Embedding providers behind one protocol, plus a content-hash vector cache."""

from .base import Embedder
from .cache import CachedEmbedder, EmbeddingCache
from .factory import create_embedder

__all__ = ["CachedEmbedder", "Embedder", "EmbeddingCache", "create_embedder"]
