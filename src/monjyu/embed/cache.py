"""Vectors cached by content hash in SQLite, so re-indexing embeds only text it has not seen; the
recent questions' vectors in memory."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..kv import SqliteKV
from .base import Embedder

LOOKUP = 8192  # texts looked up in the cache at a time
# Cache misses handed to the model at a time: enough short texts (sentences, phrases) that each of
# the model's worker threads gets several padded batches (64 phrases made one batch, leaving a core
# idle), few enough that a killed build keeps what it embedded and progress moves every few seconds.
EMBED_CHUNK = 512
RECENT_QUERIES = 256  # questions whose vectors a searching process keeps in memory


class EmbeddingCache:
    """float32 vectors keyed by sha256(embedder id, role, text)."""

    def __init__(self, path: str | Path):
        self._kv = SqliteKV(path, "vectors")

    @staticmethod
    def key(embedder_id: str, role: str, text: str) -> str:
        return hashlib.sha256(f"{embedder_id}\x00{role}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        return {k: np.frombuffer(v, dtype=np.float32) for k, v in self._kv.get_many(keys).items()}

    def put_many(self, items: list[tuple[str, np.ndarray]]) -> None:
        self._kv.put_many([(k, np.asarray(v, np.float32).tobytes()) for k, v in items])

    def close(self) -> None:
        self._kv.close()


class CachedEmbedder:
    """Wraps any Embedder; passages are looked up by hash first, new ones embedded in batches. The
    last RECENT_QUERIES questions' vectors stay in memory, by content: a question asked again (in
    another mode, say) is not embedded again, and the questions a search derives (lazy search's
    bridges) cost no write to disk."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache, batch_size: int = EMBED_CHUNK):
        self.inner = inner
        self.cache = cache
        self.batch_size = batch_size
        self.id = inner.id
        self.hits = 0
        self.misses = 0
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()  # question -> vector, oldest first
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_passages(self, texts: list[str], progress=None) -> np.ndarray:
        """Vectors of `texts` in order, looked up (and embedded when missing) LOOKUP texts at a time
        into one array: a 100k-unit build never holds every cached vector twice over."""
        out: np.ndarray | None = None
        for start in range(0, len(texts), LOOKUP):
            part = self._embed_part(texts[start:start + LOOKUP], progress)
            if out is None:
                out = np.empty((len(texts), part.shape[1]), dtype=np.float32)
            out[start:start + len(part)] = part
        return out if out is not None else np.zeros((0, self.dim), dtype=np.float32)

    def _embed_part(self, texts: list[str], progress) -> np.ndarray:
        keys = [EmbeddingCache.key(self.id, "passage", t) for t in texts]
        found = self.cache.get_many(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if progress:
            progress(len(texts) - len(todo))
        for start in range(0, len(todo), self.batch_size):
            idx = todo[start:start + self.batch_size]
            vecs = self.inner.embed_passages([texts[i] for i in idx])
            self.cache.put_many([(keys[i], v) for i, v in zip(idx, vecs)])
            for i, v in zip(idx, vecs):
                found[keys[i]] = v
            if progress:
                progress(len(idx))
        return np.vstack([found[k] for k in keys])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        with self._lock:  # what is known now: another thread may push it out before we are done
            known = {t: self._recent[t] for t in texts if t in self._recent}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, self.inner.embed_queries(missing)))
        with self._lock:
            for t in texts:
                self._recent[t] = known[t]
                self._recent.move_to_end(t)
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return np.vstack([known[t] for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)
