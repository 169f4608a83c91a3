"""The embedder protocol: what every provider gives the index and the searcher (providers in factory.py)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors. Queries and passages may be encoded differently
    (e5 models use role prefixes), so the two directions are separate methods."""

    id: str  # identifies model and weights; stored in the index manifest
    dim: int

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, so that a dot product is a cosine."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)
