"""One index generation held in memory, searched in one of four modes: vector, keyword, graph,
or hybrid (the three fused, then the rounds after fusion).

LanceDB is the store of record; at query time the vectors are one float32 matrix memory-mapped
from the generation (exact cosine by matrix product) and BM25 is bm25s's sparse matrices, mapped
too: exact search below `search.ann_min_units` units; larger generations take LanceDB ANN
candidates, re-scored exactly (benchmarks page, Latency at scale). The rankers are in
rankers.py, the rounds after fusion in rounds.py; the Searcher holds them and the units' lookups.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..config import SearchConfig
from ..errors import MonjyuError
from ..nlp import Analyzer
from ..nlp.glossary import CONTEXT_PASSAGES, GLOSS_CONTEXT, passage_words
from ..query import Query
from ..store.unit_vectors import scores_of_all
from ..types import SearchHit, SearchResults
from .evidence import EvidenceReranker, EvidenceWeights
from ..schemas import SearchFilters
from .filters import trim
from .fusion import linear_fusion, weighted_rrf
from .loaded import LoadedIndex
from .rankers import CommunityRanker, GraphRanker, KeywordRanker, VectorRanker
from .rounds import evidence_round, evidence_weights, feedback_round, link_evidence_round

WALK_HEADS = 5  # best hits of each kind a walked result is traced back to (Searcher.came_through)


class Searcher:
    def __init__(self, index: LoadedIndex, config: SearchConfig, analyzer: Analyzer | None = None,
                 embed_texts: Callable[[list[str]], np.ndarray] | None = None):
        self.index = index
        self.config = config
        self.analyzer = analyzer or Analyzer()
        # `embed_texts`: the index's embedder in the passage role, cached by text, for the query's
        # phrases that name no node and the sentences the evidence rerank reads (None: both left out).
        self.evidence = EvidenceReranker(index, self.analyzer, embed_texts)
        self.vector = VectorRanker(index, config, self.row_of)
        self.keyword = KeywordRanker(index, self.analyzer)
        self.graph = GraphRanker(index, config, self.vector, embed_texts)
        self.community = CommunityRanker(index, config, self.vector)
        self._rows: dict[str, int] | None = None
        self._text_keys: dict[str, list[int]] | None = None
        self._by_position: dict[tuple[str, int], int] | None = None

    def restrict(self, filters: SearchFilters | None, query_vector: np.ndarray | None = None,
                 threshold: float | None = None) -> np.ndarray | None:
        """The units a search may return (None: all): the filters' mask, and with a threshold
        (given, else search.threshold) only the units whose cosine similarity to the query
        reaches it, in every mode alike."""
        mask = self.index.mask(filters)
        threshold = self.config.threshold if threshold is None else threshold
        if threshold is None:
            return mask
        if query_vector is None:
            raise MonjyuError("a similarity threshold needs the query's vector")
        close = scores_of_all(self.index.vectors, np.asarray(query_vector, dtype=np.float32)) >= threshold
        return close if mask is None else mask & close


    def neighbour_text(self, row: int, chars: int = 200) -> tuple[str, str]:
        """The document's text just before and just after the unit (up to `chars` each), from the
        units beside it; units overlap, so only what lies outside this unit is taken."""
        c = self.index.columns
        doc, index = c["document_id"][row], int(c["chunk_index"][row])
        start, end = int(c["start_char"][row]), int(c["end_char"][row])
        before = after = ""
        prev = self._row_at(doc, index - 1)
        if prev is not None:
            before = c["text"][prev][:max(0, start - int(c["start_char"][prev]))][-chars:]
        nxt = self._row_at(doc, index + 1)
        if nxt is not None:
            after = c["text"][nxt][max(0, end - int(c["start_char"][nxt])):][:chars]
        return before, after

    def text_after(self, row: int, chars: int) -> str:
        """The document's text after the unit, from the units after it, up to `chars`; a gap between
        units (the paragraph break a unit ends at) is read as one."""
        c = self.index.columns
        doc, index, end = c["document_id"][row], int(c["chunk_index"][row]), int(c["end_char"][row])
        out = ""
        while len(out) < chars and (nxt := self._row_at(doc, index + 1)) is not None:
            start = int(c["start_char"][nxt])
            out += ("\n\n" if start > end else "") + c["text"][nxt][max(0, end - start):]
            index, end = index + 1, max(end, int(c["end_char"][nxt]))
        return out[:chars]

    def _row_at(self, document_id: str, chunk_index: int) -> int | None:
        """The row of a document's unit by its place in the document."""
        if self._by_position is None:
            c = self.index.columns
            self._by_position = {(d, int(i)): r for r, (d, i) in enumerate(zip(c["document_id"], c["chunk_index"]))}
        return self._by_position.get((document_id, chunk_index))

    def unit_communities(self, row: int) -> list[int]:
        """The unit's community at each level, coarsest first: of the communities at a level that
        hold the unit, the one holding most of its phrases (the smallest id on a tie)."""
        communities = self.index.communities
        if communities is None:
            return []
        phrases = set(self.graph.unit_phrases(row, limit=10_000))
        out = []
        for level in communities.levels:
            here = communities.of_unit(row, level)
            if here:
                out.append(min(here, key=lambda c: (-len(phrases & c.phrases), c.id)).id)
        return out

    def row_of(self, text_unit_id: str) -> int:
        if self._rows is None:
            self._rows = {u: i for i, u in enumerate(self.index.columns["id"])}
        return self._rows[text_unit_id]

    def rows_by_text_key(self) -> dict[str, list[int]]:
        """Units by the hash of their text (levels.store.unit_key), computed once per index."""
        if self._text_keys is None:
            from ..levels.store import unit_key

            keys: dict[str, list[int]] = {}
            for row, text in enumerate(self.index.columns["text"]):
                keys.setdefault(unit_key(text), []).append(row)
            self._text_keys = keys
        return self._text_keys

    def came_through(self, rows: list[int], direct: set[int], heads: list[int], entities) -> dict[int, int]:
        """The level each row came through (SearchHit.level): 0 when keyword or vector search
        found it (`direct`); else the graph walk's: 3 when it names a Level 3 entity (`entities`,
        levels.entity_graph.EntityGraph) that one of the `heads` (the best direct hits, the
        walk's start) names too and shares no noun phrase with any of them, so that only the
        entity leads there; else 1."""
        out = {row: 0 if row in direct else 1 for row in rows}
        walked = [row for row in rows if out[row] == 1]
        graph = self.index.graph
        if not walked or entities is None or not heads or graph is None:
            return out
        named = entities.by_unit
        head_entities = set().union(*(named.get(r, set()) for r in heads))
        head_phrases = set(graph.incidence[heads].indices.tolist()) - set(np.flatnonzero(graph.is_hub).tolist())
        for row in walked:
            if named.get(row, set()) & head_entities and not set(graph.incidence[row].indices.tolist()) & head_phrases:
                out[row] = 3
        return out

    def has_unit(self, text_unit_id: str) -> bool:
        try:
            self.row_of(text_unit_id)
        except KeyError:
            return False
        return True

    # -- the public entry point --------------------------------------------------------
    def search(self, query: Query, query_vector: np.ndarray | None, mode: str, top_k: int, offset: int = 0,
               filters: SearchFilters | None = None, threshold: float | None = None) -> SearchResults:
        cfg = self.config
        t0 = time.perf_counter()
        mask = self.restrict(filters, query_vector, threshold)
        need = offset + top_k
        timings: dict[str, float] = {}
        vec: dict[int, float] = {}
        kw: dict[int, float] = {}
        decision: dict[str, float | bool] = {}
        if mode == "vector":
            ranked, total = self.vector.rank(query_vector, need, mask)
            self.note_gloss_context(query, ranked)
            vec = dict(ranked)
        elif mode == "keyword":
            ranked, total = self.keyword.rank(query, need, mask)
            kw = dict(ranked)
        elif mode == "graph":
            ranked, total = self.graph.ranking(query, query_vector, need, mask)
        elif mode == "hybrid":
            n = max(cfg.candidates, need)
            t = time.perf_counter()
            v_ranked, _ = self.vector.rank(query_vector, n, mask)
            timings["vector_ms"] = (time.perf_counter() - t) * 1000
            self.note_gloss_context(query, v_ranked)
            t = time.perf_counter()
            k_ranked, _ = self.keyword.rank(query, n, mask)
            timings["keyword_ms"] = (time.perf_counter() - t) * 1000
            vec, kw = dict(v_ranked), dict(k_ranked)
            lists = [v_ranked, k_ranked]
            weights = [cfg.vector_weight, 1.0 - cfg.vector_weight]
            if cfg.graph_weight > 0 and self.index.graph is not None:
                t = time.perf_counter()
                g_ranked, _ = self.graph.ranking(query, query_vector, n, mask)
                timings["graph_ms"] = (time.perf_counter() - t) * 1000
                lists.append(g_ranked)
                weights = [w * (1 - cfg.graph_weight) for w in weights] + [cfg.graph_weight]
            if cfg.fusion == "rrf":
                ranked = weighted_rrf([[r for r, _ in lst] for lst in lists], weights, cfg.rrf_k)
            else:
                ranked = linear_fusion(lists, weights)
            # Per query: how much the evidence rerank trusts terms and the graph (evidence_weights),
            # and whether the feedback round found title links to follow; kept in the results.
            rerank = bool(cfg.rerank_candidates) and query_vector is not None and len(ranked) > 1
            graph_ranks = {r: i for i, (r, _) in enumerate(lists[2], start=1)} if len(lists) > 2 else {}
            evidence = evidence_weights(self, query, k_ranked, bool(graph_ranks)) if rerank else EvidenceWeights()
            if rerank:
                t = time.perf_counter()
                decision.update(evidence.to_dict())
                ranked = evidence_round(self, query, query_vector, ranked, lists, evidence, graph_ranks)
                timings["rerank_ms"] = (time.perf_counter() - t) * 1000
            if cfg.feedback and ranked:
                t = time.perf_counter()
                first = ranked
                ranked = feedback_round(self, query, query_vector, ranked, n, mask)
                decision["feedback"] = ranked is not first
                if cfg.link_evidence and rerank:
                    ranked = link_evidence_round(self, query, query_vector, ranked, mask, evidence, graph_ranks)
                timings["feedback_ms"] = (time.perf_counter() - t) * 1000
            total = len(ranked)
        else:
            raise MonjyuError(f"unknown search mode '{mode}' (vector, keyword, hybrid, graph)")
        kept = trim(filters, ranked)
        if len(kept) < len(ranked):  # the rest scored below min_relevance: none of them is counted
            ranked, total = kept, len(kept)
        page = ranked[offset:need]
        hits = [self.hit(row, score, offset + i + 1, vec.get(row), kw.get(row)) for i, (row, score) in enumerate(page)]
        timings["search_ms"] = (time.perf_counter() - t0) * 1000
        return SearchResults(query=query.text, mode=mode, hits=hits, total_count=total, timings_ms=timings, fusion=decision)

    def note_gloss_context(self, query: Query, ranked: list[tuple[int, float]]) -> None:
        """For a Japanese query, the terms of the passages its meaning finds first: which of its
        words' English glosses the keyword search and the reader read (nlp.glossary)."""
        if query.language == "ja":
            texts = self.index.columns["text"]
            query.view(GLOSS_CONTEXT, lambda: passage_words(self.analyzer, (texts[r] for r, _ in ranked[:CONTEXT_PASSAGES])))

    def hit(self, row: int, score: float, rank: int, vector_score: float | None, keyword_score: float | None) -> SearchHit:
        c = self.index.columns
        page = c["page"][row]
        return SearchHit(
            text_unit_id=c["id"][row], document_id=c["document_id"][row], text=c["text"][row], score=score,
            rank=rank, chunk_index=int(c["chunk_index"][row]), document_title=c["title"][row],
            source_path=c["source_path"][row], page=int(page) if page is not None else None,
            start_char=int(c["start_char"][row]), end_char=int(c["end_char"][row]),
            vector_score=vector_score, keyword_score=keyword_score, section=c["section"][row] or "",
            kind=c["kind"][row] or "text", authors=list(c["authors"][row] or []),
            year=int(c["year"][row]) if c["year"][row] is not None else None,
            zotero=self.index.library().get(c["document_id"][row], {}).get("zotero"),
        )
