"""OpenAI-compatible embeddings endpoint: OpenAI, Azure OpenAI, Ollama, vLLM, LM Studio."""

from __future__ import annotations

import os

import httpx
import numpy as np
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from ..config import EmbeddingConfig
from ..errors import ConfigError, ServiceError
from .base import normalize


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code == 429 or exc.response.status_code >= 500
    return isinstance(exc, httpx.TransportError)


class OpenAIEmbedder:
    def __init__(self, cfg: EmbeddingConfig):
        if not cfg.base_url:
            raise ConfigError("embedding.base_url is required for provider 'openai' "
                              "(e.g. https://api.openai.com/v1 or http://localhost:11434/v1)")
        if not cfg.model:
            raise ConfigError("embedding.model is required for provider 'openai' (model or Azure deployment name)")
        self._cfg = cfg
        key = os.environ.get(cfg.api_key_env, "")
        base = cfg.base_url.rstrip("/")
        if cfg.api_version:  # Azure OpenAI
            self._url = f"{base}/openai/deployments/{cfg.model}/embeddings"
            self._params = {"api-version": cfg.api_version}
            headers = {"api-key": key} if key else {}
        else:
            self._url = f"{base}/embeddings"
            self._params = {}
            headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(headers=headers, timeout=cfg.timeout_s)
        self.id = f"openai/{cfg.model}"
        self.dim = 0  # learned from the first response

    @retry(retry=retry_if_exception(_retryable), stop=stop_after_attempt(5),
           wait=wait_exponential(multiplier=0.5, max=20), reraise=True)
    def _post(self, texts: list[str]) -> list[list[float]]:
        resp = self._client.post(self._url, params=self._params, json={"model": self._cfg.model, "input": texts})
        resp.raise_for_status()
        data = sorted(resp.json()["data"], key=lambda d: d["index"])
        return [d["embedding"] for d in data]

    def _run(self, texts: list[str], prefix: str) -> np.ndarray:
        out = []
        for i in range(0, len(texts), self._cfg.batch_size):
            batch = [prefix + t for t in texts[i:i + self._cfg.batch_size]]
            try:
                out.extend(self._post(batch))
            except httpx.HTTPStatusError as exc:
                raise ServiceError(f"embedding endpoint {self._url} answered {exc.response.status_code}: "
                                   f"{exc.response.text[:200]}") from exc
            except httpx.TransportError as exc:
                raise ServiceError(f"cannot reach embedding endpoint {self._url}: {exc}; "
                                   "check embedding.base_url and that the server runs") from exc
            except (KeyError, ValueError, TypeError) as exc:
                raise ServiceError(f"embedding endpoint {self._url} returned an unexpected body: {exc}") from exc
        vecs = normalize(np.array(out, dtype=np.float32)) if out else np.zeros((0, self.dim), np.float32)
        if out:
            self.dim = vecs.shape[1]
        return vecs

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, self._cfg.passage_prefix)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._run(texts, self._cfg.query_prefix)
