"""Baseline RAG: one retrieval mode (vector, keyword, hybrid, graph), adjacent units joined into
passages, and an answer citing them, written by the LLM or, with none, quoted by the offline
reader. A question about what the collection's other papers say of one of its papers is answered
from the sentences that cite it (`cited_answer`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np

from ..config import SearchConfig
from ..errors import MonjyuError
from ..levels.entity_graph import EntityGraph
from ..llm import UsageScope
from ..query import Query
from ..retrieval import Searcher
from ..schemas import SearchFilters
from ..retrieval.fusion import weighted_rrf
from ..retrieval.passages import join_adjacent
from ..retrieval.searcher import WALK_HEADS
from ..types import SearchHit, SearchResults
from .answer import AnswerEngine
from .request import SearchRequest

# The paper a question asks other papers' view of, answered from its citing sentences:
# (question, mode, answer language) -> the result, or None for any other question.
CitedAnswer = Callable[[str, str, str], SearchResults | None]


class BaselineRAG:
    def __init__(self, config: SearchConfig, searcher: Searcher, embed_query: Callable[[Query], np.ndarray],
                 answers: AnswerEngine, entities: Callable[[], EntityGraph | None],
                 cited_answer: CitedAnswer | None = None, expand_allowed: bool = False):
        """`entities`: Level 3 as it stands, its entities linked into the graph walk; `expand_allowed`:
        an LLM is configured to write the rewrites `expand` searches."""
        self.config = config
        self.searcher = searcher
        self.embed_query = embed_query
        self.answers = answers
        self.entities = entities
        self.cited_answer = cited_answer
        self.expand_allowed = expand_allowed

    async def run(self, query: Query, request: SearchRequest) -> SearchResults:
        """The request's mode (one of MODES), page, filters and threshold (default
        search.threshold); `answer` and `expand` as it says."""
        top_k, offset, filters = request.top_k, request.offset, request.filters
        threshold = self.config.threshold if request.threshold is None else request.threshold
        if request.expand and not self.expand_allowed:
            raise MonjyuError("expand searches LLM rewrites of the query, and no LLM is configured "
                              "(llm.provider: none); configure one or leave expand out")
        answers = self.answers if (request.answer or request.expand) else None
        if request.answer and self.cited_answer and not (filters and filters.active) and offset == 0:
            t0 = time.perf_counter()
            results = await asyncio.to_thread(self.cited_answer, query.text, request.mode,
                                              self.answers.language(query))
            if results is not None:  # "what do other papers say about X?": the sentences that cite it
                results.timings_ms["total_ms"] = (time.perf_counter() - t0) * 1000
                return results
        with UsageScope() as usage:
            t0 = time.perf_counter()
            rewrites = await answers.aexpand(query) if (request.expand and answers) else [query.text]
            queries = [query.derive(text) for text in rewrites]
            t_expand = time.perf_counter()
            results, vector = await asyncio.to_thread(self.retrieve, queries, request.mode, top_k, offset, filters,
                                                      threshold)
            t_retrieve = time.perf_counter()
            if request.answer:
                if vector is None:  # keyword mode: sentence scoring still compares meanings
                    vector = await asyncio.to_thread(self.embed_query, query)
                results.answer = await answers.aanswer(query, vector, results.hits, request.on_token)
            t_answer = time.perf_counter()
        if request.expand:
            results.timings_ms["expand_ms"] = (t_expand - t0) * 1000
        results.timings_ms["retrieval_ms"] = (t_retrieve - t_expand) * 1000
        if request.answer:
            results.timings_ms["answer_ms"] = (t_answer - t_retrieve) * 1000
        results.timings_ms["total_ms"] = (t_answer - t0) * 1000
        results.usage = usage.to_dict()
        return results

    def retrieve(self, queries: list[Query], mode: str, top_k: int, offset: int, filters: SearchFilters | None,
                 threshold: float | None) -> tuple[SearchResults, np.ndarray | None]:
        """One search per query variant; several are fused by RRF over text units (each unit once).
        Adjacent units of one section are then joined into passages (search.passage_units)."""
        searcher = self.searcher
        entities = self.entities() if mode in ("hybrid", "graph") else None  # joins the walk
        needs_vector = mode in ("vector", "hybrid", "graph") or threshold is not None
        vectors = [self.embed_query(q) if needs_vector else None for q in queries]
        units = self.config.passage_units
        wanted = (offset + top_k) * units  # enough units to fill offset + top_k passages
        if len(queries) == 1:
            result = searcher.search(queries[0], vectors[0], mode, wanted, 0, filters, threshold)
        else:
            runs = [searcher.search(q, v, mode, wanted, 0, filters, threshold) for q, v in zip(queries, vectors)]
            by_id = {h.text_unit_id: h for run in reversed(runs) for h in run.hits}
            ids = list(by_id)
            row = {u: i for i, u in enumerate(ids)}
            fused = weighted_rrf([[row[h.text_unit_id] for h in run.hits] for run in runs], [1.0] * len(runs),
                                 self.config.rrf_k)
            hits = []
            for rank, (i, score) in enumerate(fused[:wanted], start=1):
                hit = by_id[ids[i]]
                hit.score, hit.rank = score, rank
                hits.append(hit)
            result = SearchResults(query=queries[0].text, mode=mode, hits=hits, total_count=len(fused),
                                   timings_ms={"search_ms": sum(r.timings_ms.get("search_ms", 0.0) for r in runs)},
                                   expanded_queries=[q.text for q in queries])
        if mode in ("hybrid", "graph") and searcher.index.graph is not None:
            self._hit_levels(queries[0], result.hits, entities, vectors[0])
        result.hits = join_adjacent(result.hits, offset + top_k, units)[offset:]
        return result, vectors[0]

    def _hit_levels(self, query: Query, hits: list[SearchHit], entities: EntityGraph | None,
                    vector: np.ndarray | None) -> None:
        """SearchHit.level of a graph or hybrid search, traced back to where its walk starts: the
        best keyword and vector hits, the vector hits that seed the walk (search.graph_dense_seeds)
        and the best hits that name one of the query's phrases."""
        searcher = self.searcher
        rows = [searcher.row_of(h.text_unit_id) for h in hits]
        direct = {r for r, h in zip(rows, hits) if h.vector_score is not None or h.keyword_score is not None}
        heads = [r for key in ("vector_score", "keyword_score")
                 for r, _ in sorted(((r, getattr(h, key)) for r, h in zip(rows, hits) if getattr(h, key) is not None),
                                    key=lambda x: -x[1])[:WALK_HEADS]]
        if vector is not None and self.config.graph_dense_seeds:
            heads += [r for r, _ in searcher.vector.rank(vector, self.config.graph_dense_seeds, None)[0]]
        seeds = set(searcher.graph.seeds(query))
        heads += [r for r in rows if seeds & set(searcher.index.graph.incidence[r].indices.tolist())][:WALK_HEADS]
        levels = searcher.came_through(rows, direct, heads, entities)
        for row, hit in zip(rows, hits):
            hit.level = levels[row]
