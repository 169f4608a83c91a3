"""The Monjyu facade: the one place behaviour lives; CLI and MCP are thin shells over it."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .config import MonjyuConfig, load_config
from .embed import Embedder, create_embedder
from .errors import EmbedderMismatchError, MonjyuError
from .index import BuildReport, IndexBuilder, read_manifest
from .index.builder import ProgressFn, generation_dir
from .index.manifest import Manifest
from .retrieval import LoadedIndex, SearchFilters, Searcher
from .types import SearchResults

DEFAULT_INDEX_DIR = ".monjyu"
MODES = ("vector", "keyword", "hybrid", "graph")


class Monjyu:
    """Index a folder of documents and search it.

    >>> m = Monjyu("./.monjyu")
    >>> m.index(["samples/"])
    >>> m.search("how does lazy search save cost?", mode="hybrid", top_k=5).hits
    """

    def __init__(self, index_dir: str | Path = DEFAULT_INDEX_DIR, config: MonjyuConfig | None = None):
        self.index_dir = Path(index_dir)
        self.config = config or load_config()
        self._lock = threading.Lock()
        self._loaded: tuple[str, Searcher] | None = None
        self._query_embedder: Embedder | None = None

    # ------------------------------------------------------------------ indexing
    def index(self, paths: Iterable[str | Path], progress: ProgressFn | None = None) -> BuildReport:
        report = IndexBuilder(self.index_dir, self.config, progress).build(paths)
        self._loaded = None
        return report

    def manifest(self) -> Manifest:
        return read_manifest(self.index_dir)

    def status(self) -> dict[str, Any]:
        m = self.manifest()
        return {
            "index_dir": str(self.index_dir), "generation": m.generation, "built_at": m.built_at,
            "embedder": {"id": m.embedder_id, "dim": m.embedder_dim}, "token_counter": m.token_counter,
            "counts": m.counts, "build_seconds": m.build_seconds,
        }

    def generation_dir(self) -> Path:
        return generation_dir(self.index_dir, self.manifest().generation)

    def graph_stats(self) -> dict[str, Any]:
        from .index.graph_export import graph_stats

        return graph_stats(self.generation_dir())

    def export_graph(self, path: str | Path, fmt: str = "html") -> Path:
        from .index.graph_export import export_graphml, export_html

        if fmt not in ("html", "graphml"):
            raise MonjyuError(f"unknown graph export format '{fmt}' (html, graphml)")
        return (export_html if fmt == "html" else export_graphml)(self.generation_dir(), Path(path))

    # ------------------------------------------------------------------ search
    def _searcher(self) -> tuple[Manifest, Searcher]:
        with self._lock:
            m = self.manifest()
            if self._loaded is None or self._loaded[0] != m.generation:
                loaded = LoadedIndex.load(generation_dir(self.index_dir, m.generation), m.embedder_dim)
                self._loaded = (m.generation, Searcher(loaded, self.config.search))
            return m, self._loaded[1]

    def _embed_query(self, manifest: Manifest, query: str) -> np.ndarray:
        if self._query_embedder is None:
            self._query_embedder = create_embedder(self.config.embedding)
        if self._query_embedder.id != manifest.embedder_id:
            raise EmbedderMismatchError(
                f"the index at {self.index_dir} was built with embedder '{manifest.embedder_id}' but the "
                f"configured embedder is '{self._query_embedder.id}'; query with the same embedding settings, "
                "or rebuild the index with `monjyu index`")
        return self._query_embedder.embed_queries([query])[0]

    def search(self, query: str, mode: str | None = None, top_k: int | None = None, offset: int = 0,
               filters: SearchFilters | None = None, threshold: float | None = None) -> SearchResults:
        mode = mode or self.config.search.mode
        if mode not in MODES:
            raise MonjyuError(f"unknown search mode '{mode}'; choose one of {', '.join(MODES)}")
        if not query or not query.strip():
            raise MonjyuError("the query is empty")
        top_k = top_k or self.config.search.top_k
        if offset < 0 or top_k < 1:
            raise MonjyuError("top_k must be >= 1 and offset >= 0")
        manifest, searcher = self._searcher()
        vector = self._embed_query(manifest, query) if mode in ("vector", "hybrid", "graph") else None
        threshold = self.config.search.threshold if threshold is None else threshold
        return searcher.search(query, vector, mode, top_k, offset, filters, threshold)
