"""The Monjyu facade, the one object the CLI, the MCP server and the web app call: it indexes,
and searches through one door (a question becomes one `Query` and its options one
`SearchRequest`, checked here once, run by the engine the mode names). Documents, papers, the
concept graph, the LLM levels and conversations are its services (`m.documents`, ...)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .config import MonjyuConfig, load_config
from .engines.request import ALL_MODES, MODES, SearchRequest
from .errors import MonjyuError
from .facade.documents import Documents
from .facade.graph import Graph
from .facade.levels import Levels
from .facade.papers import Papers
from .facade.sessions import Conversations
from .facade.workspace import IndexContext, Workspace
from .index import BuildReport, IndexBuilder
from .index.builder import ProgressFn
from .index.distributed import RayExecutor, check_executor
from .ingest.libraries import library_sources
from .llm import run_sync
from .query import Query
from .schemas import SearchQuery
from .types import HybridSearchResult, LazySearchResult, SearchResults

DEFAULT_INDEX_DIR = ".monjyu"
Result = SearchResults | LazySearchResult | HybridSearchResult
ROUTES = {"local": "search", "global": "lazy", "relationship": "hybridrag", "hybrid": "hybridrag"}


def synchronous(method: Callable[..., Coroutine]) -> Callable[..., Any]:
    """The blocking twin of an async method (`search` of `asearch`): the same arguments and
    docstring, run to completion."""
    @functools.wraps(method)
    def blocking(self, *args: Any, **kwargs: Any) -> Any:
        return run_sync(method(self, *args, **kwargs))
    blocking.__name__ = method.__name__.removeprefix("a")
    blocking.__qualname__ = f"Monjyu.{blocking.__name__}"
    return blocking


class Monjyu:
    """Index a folder of documents and search it.

    >>> m = Monjyu("./.monjyu")
    >>> m.index(["samples/"])
    >>> m.search("how does lazy search save cost?", mode="hybrid", top_k=5).hits
    >>> m.papers.list(limit=10)

    Args:
        index_dir: the index directory (with a store configured, its local cache).
        config: the settings; by default `monjyu.yaml` in the working directory and `MONJYU_*`
            variables (`load_config`).
    """

    def __init__(self, index_dir: str | Path = DEFAULT_INDEX_DIR, config: MonjyuConfig | None = None):
        self.index_dir = Path(index_dir)
        self.config = config or load_config()
        self.workspace = Workspace(self.index_dir, self.config)
        self.remote = self.workspace.remote
        self.documents = Documents(self.workspace)
        self.papers = Papers(self.workspace, self.documents)
        self.graph = Graph(self.workspace)
        self.levels = Levels(self.workspace)
        self.conversations = Conversations(self.workspace)
        self.workspace.cited_answer = self.papers.cited_answer

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
            zotero: a Zotero data directory (the folder holding zotero.sqlite): its items (their
                PDF, else a snapshot, else the abstract) are indexed with the library's metadata,
                items trashed or deleted since the last run are removed, a missing PDF reported.
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
        check_executor(self.config, executor, address)
        if self.remote:
            self.remote.pull(force=True)  # build on the store's current generation
        before = self.workspace.generation_or_none()
        sources = library_sources([Path(p) for p in paths], zotero, bib, self.config.ingest, self.index_dir)
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
        changed = self.workspace.generation_or_none() != before
        if self.remote and changed:
            self.remote.push()
        self.workspace.forget()
        if changed:
            self.levels.forget_removed_units()
        return report

    def status(self) -> dict[str, Any]:
        """Generation, embedder, counts, build seconds and failures of the current index, and how
        much of it each level covers (`levels`)."""
        m = self.workspace.manifest()
        return {"levels": self.levels.status(), "index_dir": str(self.index_dir),
                "store": self.remote.url if self.remote else None, "generation": m.generation, "built_at": m.built_at,
                "embedder": {"id": m.embedder_id, "dim": m.embedder_dim}, "token_counter": m.token_counter,
                "counts": m.counts, "build_seconds": m.build_seconds, "failures": m.failures, "clustering": m.clustering}

    # ------------------------------------------------------------------ search
    async def aask(self, query: str, mode: str | None = None, *, option_names: dict[str, str] | None = None,
                   **options: Any) -> Result:
        """Every mode through one door: vector, keyword, hybrid, graph (baseline RAG), hybridrag,
        lazy, or auto (the question's type picks baseline RAG, lazy or hybridrag).

        Args:
            query: the question (empty, not Unicode text or above `search.max_query_chars` is refused).
            mode: one of ALL_MODES; default `search.mode`.
            option_names: the calling door's spelling of each option (CLI flags, MCP arguments),
                used in errors.
            **options: the fields of `monjyu.engines.request.SearchRequest` (top_k, offset,
                filters, threshold, answer, spelling, expand, preset, budget, level, session,
                weights, rerank, crag; on_token receives the answer as it is written). An option the mode
                cannot apply is refused (OPTION_MODES), never dropped.

        Returns:
            The engine's result; its `mode` names the engine that ran.
        """
        request = self._request(mode or self.config.search.mode, options, option_names)
        asked = self.workspace.query(query)
        return await self._run(asked, self._paged(request))

    async def asearch(self, query: str, mode: str | None = None, **options: Any) -> SearchResults:
        """Baseline RAG: ranked passages and an answer citing them, written by the configured LLM
        or, with none, quoted from the passages by the offline reader.

        Args:
            query: the question or search text.
            mode: "vector", "keyword", "hybrid" or "graph"; default `search.mode`.
            **options: top_k, offset, filters, threshold, answer, expand, on_token (see `aask`).
        """
        mode = mode or self.config.search.mode
        if mode not in MODES:
            raise MonjyuError(f"unknown search mode '{mode}'; choose one of {', '.join(MODES)}")
        return await self.aask(query, mode, **options)

    async def alazy_search(self, query: str, **options: Any) -> LazySearchResult:
        """LazyGraphRAG: relevance tests over communities within a budget, claims, and an answer
        citing them; with the configured LLM, or fully offline with the local relevance scorer.

        Args:
            query: the question.
            **options: preset, budget, level, top_k, offset, filters, threshold, answer, session
                (see `aask`); conversation (a `LazyConversation` to ask a follow-up in view of),
                on_phase (called with (phase, details) as each phase runs), on_token.
        """
        return await self.aask(query, "lazy", **options)

    async def ahybrid_search(self, query: str | SearchQuery, **options: Any) -> HybridSearchResult:
        """HybridRAG: query classification, BM25 + vector + graph (graph mode by query type) fused
        by weighted RRF, reranking, and (crag=True) Corrective RAG grading with selective
        generation: an answer only when the graded context suffices.

        Args:
            query: the question, or a `schemas.SearchQuery` request whose filters and options
                replace the options. Either way `result.response` is the page as
                `schemas.SearchResult`.
            **options: top_k, offset, filters, threshold, weights, rerank, crag, answer, on_token (see
                `aask`).
        """
        if not isinstance(query, SearchQuery):
            return await self.aask(query, "hybridrag", **options)
        request = self._request("hybridrag", options, None)
        asked = self.workspace.query(query.text)
        public = query.model_copy(update={"text": asked.text})
        request = replace(request, top_k=public.options.limit, offset=public.options.offset,
                          filters=public.filters, public=public)
        manifest = self.workspace.current().manifest
        if public.embedding is not None and len(public.embedding) != manifest.dim:
            raise MonjyuError(f"the request's embedding has {len(public.embedding)} dimensions; the index's "
                              f"embedder {manifest.embedder_id} makes {manifest.dim}: leave embedding out")
        return await self._run(asked, self._paged(request))

    async def aroute(self, query: str) -> dict[str, Any]:
        """Which engine suits the question: local -> baseline RAG ("search"), global -> lazy,
        relationship and hybrid -> hybridrag. Rules, or the LLM when configured.

        Args:
            query: the question (its misspelt words corrected as a search corrects them).
        """
        context = self.workspace.current()
        return await self._route(context.spelled(self.workspace.query(query))[0], context)

    async def aevents(self, query: str, mode: str | None = None, **options: Any) -> AsyncIterator[str | Result]:
        """`ask` as a stream: the answer's chunks (str) as they are written, then the result.

        Args:
            query: the question.
            mode: as in `aask`.
            **options: as in `aask`.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        task = asyncio.ensure_future(self.aask(
            query, mode, on_token=lambda chunk: loop.call_soon_threadsafe(queue.put_nowait, chunk), **options))
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(queue.put_nowait, None))
        while (chunk := await queue.get()) is not None:
            yield chunk
        yield await task

    async def astream(self, query: str, mode: str | None = None, **options: Any) -> AsyncIterator[str]:
        """The answer of `ask` as it is written: `async for chunk in m.astream(question): ...`.
        Errors of the search are raised after the chunks that came before them.

        Args:
            query: the question.
            mode: as in `aask`.
            **options: as in `aask`.
        """
        async for chunk in self.aevents(query, mode, **options):
            if isinstance(chunk, str):
                yield chunk

    ask = synchronous(aask)
    search = synchronous(asearch)
    lazy_search = synchronous(alazy_search)
    hybrid_search = synchronous(ahybrid_search)
    route = synchronous(aroute)

    # ------------------------------------------------------------------ the one path
    def _request(self, mode: str, options: dict[str, Any], names: dict[str, str] | None) -> SearchRequest:
        """The options as one request: the mode and an option the mode cannot apply checked."""
        try:
            request = SearchRequest(mode=mode, **options)
        except TypeError as exc:
            raise MonjyuError(str(exc).replace("SearchRequest.__init__()", "search")) from None
        request.check(names)
        return request

    def _paged(self, request: SearchRequest) -> SearchRequest:
        """The page and the similarity bound checked (top_k defaults to search.top_k)."""
        top_k = request.top_k or self.config.search.top_k
        if request.offset < 0 or top_k < 1:
            raise MonjyuError("top_k must be >= 1 and offset >= 0")
        if request.threshold is not None and not -1.0 <= request.threshold <= 1.0:
            raise MonjyuError(f"threshold is a cosine similarity between -1 and 1, not {request.threshold}")
        return replace(request, top_k=top_k)

    async def _run(self, query: Query, request: SearchRequest) -> Result:
        """The mode's engine (auto: by question type) runs the request on one generation, as searched
        (`IndexContext.searched`: its spelling corrected, an author it asks about the filter)."""
        context = self.workspace.current()
        query, request, corrections = context.searched(query, request)
        if request.mode == "auto":
            engine = (await self._route(query, context))["engine"]
            request = request.to(self.config.search.mode if engine == "search" else engine)
        if request.mode == "lazy" and request.session:
            request = replace(request, conversation=self.conversations.get(request.session))
        result = await context.engine("search" if request.mode in MODES else request.mode).run(query, request)
        if request.mode == "lazy" and request.session:
            self.conversations.save(request.session, request.conversation)
        result.spelling = corrections
        return result

    async def _route(self, query: Query, context: IndexContext) -> dict[str, Any]:
        c = await context.engine("hybridrag").classify(query)
        return {"engine": ROUTES[c.type], "type": c.type, "confidence": c.confidence, "entities": c.entities,
                "method": c.method}


__all__ = ["ALL_MODES", "DEFAULT_INDEX_DIR", "MODES", "Monjyu"]
