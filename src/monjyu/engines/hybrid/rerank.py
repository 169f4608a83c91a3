"""Stage 3: rerankers behind one protocol. The offline default needs no download: each passage is
scored by its best sentence under the local relevance scorer. Users with a cross-encoder
(sentence-transformers or fastembed) or a hosted rerank API configure that instead."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Protocol

import httpx
import numpy as np
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from ...config import RerankConfig
from ...errors import ConfigError, ServiceError
from ...query import Query
from ..relevance import LocalRelevanceScorer


class Reranker(Protocol):
    name: str

    def scores(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
               vectors: np.ndarray | None = None) -> np.ndarray:
        """Higher is more relevant; scale is the reranker's own. `vectors`: the texts' embeddings
        when the index has them (rerankers that read the texts themselves ignore them)."""


_STATEMENTS = re.compile(r"(?<=[.!?。！？])\s*")


class LocalReranker:
    """Relevance on the local scorer's 0-10 scale from the passage's own embedding (stored in the
    index: nothing is embedded at query time) and the question terms named by its best sentence:
    a passage that states the answer in one sentence beats one that only shares its topic.
    Sentences here are cut at final stops only; no offsets are needed, so no full segmenter runs
    (pysbd costs ~4 ms a passage, more than everything else in this stage)."""

    name = "local"

    def __init__(self, scorer: LocalRelevanceScorer):
        self.scorer = scorer

    def scores(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
               vectors: np.ndarray | None = None) -> np.ndarray:
        if vectors is None:
            vectors = self.scorer.embed(list(texts))
        parts = [[p for p in _STATEMENTS.split(t) if p] or [t] for t in texts]
        return self.scorer.score_with_vectors(query, query_vector, vectors, parts)


class ReaderReranker:
    """The project's own cross-encoder (engines/cross_encoder.py, the reader's model): a passage
    scores as its best sentence's log-odds of answering. rerank.provider: cross-encoder with no
    rerank.model, offline, nothing to download."""

    name = "cross-encoder:monjyu-reader"

    def __init__(self):
        from ..cross_encoder import shared_reader_model

        self._model = shared_reader_model()

    def scores(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
               vectors: np.ndarray | None = None) -> np.ndarray:
        parts = [[p for p in _STATEMENTS.split(t) if p.strip()] or [t] for t in texts]
        flat = self._model.scores(query.text, [p for ps in parts for p in ps])
        out, at = np.empty(len(texts), dtype=np.float32), 0
        for i, ps in enumerate(parts):
            out[i] = flat[at:at + len(ps)].max()
            at += len(ps)
        return out


class CrossEncoderReranker:
    """A cross-encoder from sentence-transformers (model name or local path), e.g.
    cross-encoder/ms-marco-MiniLM-L-6-v2 or BAAI/bge-reranker-v2-m3."""

    def __init__(self, cfg: RerankConfig):
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ConfigError("rerank.provider 'cross-encoder' needs: pip install torch==2.13.0 'monjyu[st]'") from exc
        try:
            self._model = CrossEncoder(cfg.model, device="cpu")
        except Exception as exc:  # noqa: BLE001 - hub, file and format errors all land here
            raise ConfigError(f"cannot load cross-encoder '{cfg.model}': {exc}. Give a local path, or a model "
                              "name with network access to download it once.") from exc
        self.name = f"cross-encoder:{cfg.model}"

    def scores(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
               vectors: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(self._model.predict([(query.text, t) for t in texts], show_progress_bar=False), dtype=np.float32)


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


class APIReranker:
    """A hosted rerank endpoint in the common shape (Cohere, Jina, Voyage, and servers such as
    Infinity or TEI that copy it): POST {base_url}/rerank with model, query, documents;
    the reply lists {index, relevance_score} under "results" (or "data")."""

    def __init__(self, cfg: RerankConfig):
        if not cfg.base_url or not cfg.model:
            raise ConfigError("rerank.provider 'api' needs rerank.base_url (e.g. https://api.cohere.com/v2) and rerank.model")
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        self._url = cfg.base_url.rstrip("/") + "/rerank"
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._cfg = cfg
        self.name = f"api:{cfg.model}"

    def scores(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
               vectors: np.ndarray | None = None) -> np.ndarray:
        @retry(retry=retry_if_exception(_retryable), stop=stop_after_attempt(self._cfg.max_retries + 1),
               wait=wait_exponential(multiplier=0.2, max=10), reraise=True)
        def call() -> dict:
            response = httpx.post(self._url, headers=self._headers, timeout=self._cfg.timeout_s,
                                  json={"model": self._cfg.model, "query": query.text, "documents": list(texts),
                                        "top_n": len(texts)})
            response.raise_for_status()
            return response.json()

        try:
            body = call()
        except httpx.HTTPStatusError as exc:
            raise ServiceError(f"rerank API {self._url} answered {exc.response.status_code}; check rerank.base_url, "
                               f"rerank.model and the key in {self._cfg.api_key_env}") from None
        except (httpx.TransportError, ValueError) as exc:
            raise ServiceError(f"rerank API {self._url} failed ({type(exc).__name__}); is it reachable?") from None
        out = np.full(len(texts), -np.inf, dtype=np.float32)
        for item in body.get("results", body.get("data", [])):
            if 0 <= int(item["index"]) < len(texts):
                out[int(item["index"])] = float(item.get("relevance_score", item.get("score", 0.0)))
        return out


def create_reranker(cfg: RerankConfig, scorer: LocalRelevanceScorer) -> Reranker | None:
    if cfg.provider == "none":
        return None
    if cfg.provider == "local":
        return LocalReranker(scorer)
    if cfg.provider == "cross-encoder":
        return CrossEncoderReranker(cfg) if cfg.model else ReaderReranker()
    if cfg.provider == "api":
        return APIReranker(cfg)
    raise ConfigError(f"unknown rerank.provider '{cfg.provider}' (local, cross-encoder, api, none)")
