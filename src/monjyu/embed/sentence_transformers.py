"""sentence-transformers models by name or local path (extra: `pip install monjyu[st]`)."""

from __future__ import annotations

import numpy as np

from ..config import EmbeddingConfig
from ..errors import ConfigError
from .base import normalize


class SentenceTransformerEmbedder:
    def __init__(self, cfg: EmbeddingConfig):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "embedding.provider 'sentence-transformers' needs the extra: "
                "pip install torch==2.13.0 'monjyu[st]'"
            ) from exc
        try:
            self._model = SentenceTransformer(cfg.model, device="cpu")
        except Exception as exc:  # noqa: BLE001 - hub, file and format errors all land here
            raise ConfigError(
                f"cannot load sentence-transformers model '{cfg.model}': {exc}. "
                "Give a local path, or a model name with network access to download it once."
            ) from exc
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.id = f"st/{cfg.model}"
        self._cfg = cfg

    def _run(self, texts: list[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode([prefix + t for t in texts], batch_size=self._cfg.batch_size,
                                  convert_to_numpy=True, show_progress_bar=False)
        return normalize(vecs)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, self._cfg.passage_prefix)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, self._cfg.query_prefix)
