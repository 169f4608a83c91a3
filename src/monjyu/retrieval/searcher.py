"""Vector, keyword and hybrid ranking over one index generation held in memory.

LanceDB is the store of record; at query time the vectors are one float32 matrix memory-mapped
from the generation (exact cosine by matrix product) and BM25 is bm25s's sparse matrices, mapped
too: exact search below `search.ann_min_units` units; larger generations take LanceDB ANN
candidates, re-scored exactly (benchmarks page, Latency at scale).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from ..config import SearchConfig
from ..errors import MonjyuError
from ..nlp import Analyzer
from ..nlp.glossary import with_english_glosses
from ..nlp.lang import detect_language
from ..nlp.noun_phrases import NounPhraseExtractor
from ..store.unit_vectors import release_pages, scores_of_all
from ..types import SearchHit, SearchResults
from .filters import SearchFilters
from .fusion import linear_fusion, weighted_rrf
from .communities import CommunityHit, CommunityIndex
from .evidence import EvidenceReranker, EvidenceWeights
from .graph import PhraseGraph
from .loaded import LoadedIndex

# A long query ("find passages like this abstract") is served in bounded time: its first
# QUERY_TEXT_CHARS characters give the embedding, noun phrases and graph seeds, and the
# MAX_QUERY_TERMS most distinctive terms (highest IDF) of its first KEYWORD_TEXT_CHARS the
# keyword query.
QUERY_TEXT_CHARS = 400  # an abstract's first two or three sentences (~100 tokens)
KEYWORD_TEXT_CHARS = 10_000  # a few pages: a section's distinctive terms are all there
MAX_QUERY_TERMS = 64
LIST_TOP = 10  # each list's best that always reach the evidence rerank
WALK_HEADS = 5  # best hits of each kind a walked result is traced back to (Searcher.came_through)


def sentence_naming(text: str, phrase: str) -> str:
    """The sentence of `text` in which `phrase` (lower case) first occurs; "" when it does not."""
    at = text.lower().find(phrase)
    if at < 0:
        return ""
    end = text.find(".", at + len(phrase))
    return text[text.rfind(".", 0, at) + 1:end if end >= 0 else len(text)]


def _top(scores: np.ndarray, n: int, valid: np.ndarray) -> list[int]:
    """Indices of the n best valid scores, best first (stable on ties)."""
    idx = np.flatnonzero(valid)
    if len(idx) == 0 or n <= 0:
        return []
    if len(idx) > n:
        part = np.argpartition(-scores[idx], n - 1)[:n]
        idx = idx[part]
    order = np.lexsort((idx, -scores[idx]))
    return idx[order].tolist()


def _spread(reranked: list[tuple[int, float]], head: list[tuple[int, float]],
            rest: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The reranked head, then the rest: scores spread evenly between the head's best score and the
    rest's, so they still fall with rank."""
    top, floor = head[0][1], rest[0][1] if rest else 0.0
    return [(r, floor + (top - floor) * (len(head) - i) / len(head)) for i, (r, _) in enumerate(reranked)] + rest


class Searcher:
    def __init__(self, index: LoadedIndex, config: SearchConfig, analyzer: Analyzer | None = None,
                 embed_texts: Callable[[list[str]], np.ndarray] | None = None):
        self.index = index
        self.config = config
        self.analyzer = analyzer or Analyzer()
        # The index's embedder in the passage role, cached by text: query phrases that name no
        # node, and the sentences the evidence rerank reads. None: both are left out.
        self.embed_texts = embed_texts
        self.evidence = EvidenceReranker(index, self.analyzer, embed_texts)
        self._np_extractor: NounPhraseExtractor | None = None
        self._rows: dict[str, int] | None = None
        self._text_keys: dict[str, list[int]] | None = None
        self._by_position: dict[tuple[str, int], int] | None = None
        # A query is analysed once per search although several stages read it (a pasted section
        # would otherwise be tokenised and parsed again by each one).
        self._terms_of = functools.lru_cache(maxsize=16)(lambda q: tuple(self._query_terms(q)))
        self._phrases_of = functools.lru_cache(maxsize=16)(
            lambda q: tuple(self.phrase_extractor().extract([q[:QUERY_TEXT_CHARS]])[0]))
        # The walk, its second hop and the evidence weights all read the query's seeds.
        self._seeds_of = functools.lru_cache(maxsize=16)(lambda q: tuple(self._phrase_seeds(q).items()))

    # -- single strategies: (row, score) best first ---------------------------------
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

    def vector_ranking(self, query_vector: np.ndarray, n: int,
                       mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """Exact cosine over all (or the masked) units; an unfiltered search (or one of the default
        kinds) of an index with an ANN index scores only the ANN's candidates, exactly. The count
        of passing units is then exact only when fewer than n pass; otherwise it is the index size."""
        cfg = self.config
        qv = np.asarray(query_vector, dtype=np.float32)
        candidates = None
        if self.index.ann is not None and (mask is None or mask is self.index.mask(None)):
            # Unfiltered, or only the default kinds (a paper collection's reference lists and front
            # matter are a minority): the ANN's candidates, those of other kinds dropped.
            ids = self.index.ann.candidates(qv, max(cfg.ann_candidates, 2 * n), cfg.ann_nprobes)
            candidates = np.sort(np.array([self.row_of(u) for u in ids], dtype=np.int64))  # ties by row
            if mask is not None:
                candidates = candidates[mask[candidates]]
        if candidates is None:
            scores = scores_of_all(self.index.vectors, qv)
        else:
            scores = self.index.vectors[candidates] @ qv
            release_pages(self.index.vectors)  # what this and the previous search mapped; ~0.1 ms
        valid = np.ones(len(scores), dtype=bool) if mask is None or candidates is not None else mask
        top = _top(scores, n, valid)
        if candidates is None:
            return [(r, float(scores[r])) for r in top], int(valid.sum())
        return [(int(candidates[i]), float(scores[i])) for i in top], len(top) if len(top) < n else len(self.index)

    def query_terms(self, query: str) -> list[str]:
        """The query's index terms; past MAX_QUERY_TERMS distinct ones, the most distinctive."""
        return list(self._terms_of(query))

    def _query_terms(self, query: str) -> list[str]:
        """Its own terms (the most distinctive, past MAX_QUERY_TERMS), then, for a Japanese query,
        the English glosses of its nouns: words of English documents it can match."""
        query = query[:KEYWORD_TEXT_CHARS]
        terms = self.analyzer.terms(query)
        distinct = set(terms)
        if len(distinct) > MAX_QUERY_TERMS:
            idf = self.index.bm25.idf(distinct)
            keep = set(sorted(idf, key=lambda t: (-idf[t], t))[:MAX_QUERY_TERMS])
            terms = list(dict.fromkeys(t for t in terms if t in keep))
        return with_english_glosses(query, terms)

    def keyword_ranking(self, query: str | list[str], n: int, mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        terms = self.query_terms(query) if isinstance(query, str) else query
        if self.index.fulltext is not None:  # the default kinds go as None: the store filters them itself
            text = query[:QUERY_TEXT_CHARS] if isinstance(query, str) else " ".join(terms)
            rows = None if mask is self.index.mask(None) else mask
            ranked = self.index.fulltext.ranking(text, terms, detect_language(text), n, rows)
            return ranked, len(ranked)
        scores = self.index.bm25.scores(terms)
        valid = scores > 0
        if mask is not None:
            valid &= mask
        rows = _top(scores, n, valid)
        return [(r, float(scores[r])) for r in rows], int(valid.sum())

    def graph_ranking(self, query: str, query_vector: np.ndarray | None, n: int,
                      mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """Personalised PageRank from the query's phrases and its best vector hits."""
        graph = self.require_graph()
        cfg = self.config
        seeds = self.phrase_seeds(query)
        unit_seeds: dict[int, float] = {}
        if cfg.graph_dense_seeds and query_vector is not None:
            dense, _ = self.vector_ranking(query_vector, cfg.graph_dense_seeds, mask)
            scale = sum(seeds.values()) or 1.0
            unit_seeds = {row: scale / rank for rank, (row, _) in enumerate(dense, start=1)}
        scores = graph.personalized_pagerank(seeds, unit_seeds, damping=cfg.graph_damping, epsilon=self.walk_epsilon())
        valid = scores > 0
        if mask is not None:
            valid &= mask
        rows = _top(scores, n, valid)
        return [(r, float(scores[r])) for r in rows], int(valid.sum())

    def walk_epsilon(self) -> float:
        """search.walk_epsilon on a graph of search.walk_exact_links links or more; a smaller graph
        walks exactly (a few ms: nothing to bound)."""
        graph = self.index.graph
        return self.config.walk_epsilon if graph is not None and graph.incidence.nnz >= self.config.walk_exact_links \
            else 0.0

    def phrase_seeds(self, query: str) -> dict[int, float]:
        """The query's seed phrases and their weights (_phrase_seeds), worked out once per query."""
        return dict(self._seeds_of(query))

    def _phrase_seeds(self, query: str) -> dict[int, float]:
        """Phrase nodes the query names, plus, for each of its noun phrases that names none, the
        nearest embedded phrase in another language at cosine >= search.graph_phrase_similarity:
        a Japanese question reaches the English graph this way. Within one language a phrase is
        either named or a different thing whose spelling fools the embedding ("john smith" /
        "john smyth"), so same-language matches by embedding are not taken (they lowered graph
        recall on multi-hop Wikipedia)."""
        graph = self.require_graph()
        query = query[:QUERY_TEXT_CHARS]
        phrases = self.query_phrases(query)
        seeds = graph.match(query, phrases)
        threshold = self.config.graph_phrase_similarity
        if self.embed_texts is None or graph.vectors is None or threshold >= 1.0:
            return seeds
        present = set(graph.vector_languages().tolist())
        unnamed = [(p, detect_language(p)) for p in phrases if p not in graph.vocab]
        unnamed = [(p, lang) for p, lang in unnamed if present - {lang}]  # nothing to translate into: no embedding
        if unnamed:
            vectors = self.embed_texts([p for p, _ in unnamed])
            for _, node, weight in graph.similar(vectors, [lang for _, lang in unnamed], threshold):
                seeds.setdefault(node, weight)
        return seeds

    def community_ranking(self, query: str, query_vector: np.ndarray, n: int, mask: np.ndarray | None,
                          communities: int = 5) -> tuple[list[tuple[int, float]], int, list[CommunityHit]]:
        """Global questions: the communities holding most of the query's best units, then their
        units by similarity, taken in turn from each community so every theme is represented.
        Also returns those communities."""
        index = self.require_communities()
        seed, _ = self.vector_ranking(query_vector, max(n, 50), mask)
        ranked_rows = [r for r, _ in seed]
        level = index.levels[min(1, len(index.levels) - 1)]  # below the coarsest: themes, not the whole corpus
        weight = self.config.community_title_weight
        top = index.rank(ranked_rows, level=level, title_scores=index.title_similarity(query_vector, weight),
                         title_weight=weight)[:communities]
        qv = np.asarray(query_vector, dtype=np.float32)
        queues = []
        for hit in top:
            rows = hit.community.unit_rows
            if mask is not None:
                rows = rows[mask[rows]]
            queues.append(rows[np.argsort(-(self.index.vectors[rows] @ qv), kind="stable")].tolist())
        out: dict[int, float] = {}
        depth = 0
        while len(out) < n and any(depth < len(q) for q in queues):
            for q in queues:
                if depth < len(q) and q[depth] not in out:
                    out[q[depth]] = 1.0 / (1 + len(out))
            depth += 1
        ranked = list(out.items())[:n]
        return ranked, len(ranked), top

    def graph_list(self, query: str, query_vector: np.ndarray | None, n: int,
                   mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """The graph's ranking in graph and hybrid modes: the chained two-hop walk, or the single
        walk with search.graph_hops 1."""
        if self.config.graph_hops == 2:
            return self.multihop_ranking(query, query_vector, n, mask)
        return self.graph_ranking(query, query_vector, n, mask)

    def multihop_ranking(self, query: str, query_vector: np.ndarray | None, n: int, mask: np.ndarray | None,
                         hop_units: int = 3, bridges: int = 5) -> tuple[list[tuple[int, float]], int]:
        """A chained walk for questions that go through an unnamed entity ("where was the director
        of film X born?"): hop 1 is the walk from the query; the rarest phrases of hop 1's best
        units that the query does not name are the bridges (the director's name), and hop 2
        walks from them together with the query's own phrases. The two hops are fused by RRF,
        hop 1 first."""
        graph = self.require_graph()
        first, total = self.graph_ranking(query, query_vector, n, mask)
        named = set(self.phrase_seeds(query))
        candidates: dict[int, float] = {}
        for rank, (row, _) in enumerate(first[:hop_units], start=1):
            for node in self.unit_phrases(row):
                if node not in named:
                    candidates[node] = max(candidates.get(node, 0.0), float(graph.idf[node]) / rank)
        chosen = sorted(candidates, key=lambda node: (-candidates[node], node))[:bridges]
        if not chosen:
            return first, total
        seeds = {node: float(graph.idf[node]) for node in named} | {node: candidates[node] for node in chosen}
        scores = graph.personalized_pagerank(seeds, damping=self.config.graph_damping, epsilon=self.walk_epsilon())
        valid = scores > 0
        if mask is not None:
            valid &= mask
        second = _top(scores, n, valid)
        fused = weighted_rrf([[r for r, _ in first], second], [1.0, 0.5], self.config.rrf_k)[:n]
        return fused, max(total, len(fused))

    def relation_ranking(self, query: str, query_vector: np.ndarray | None, n: int, mask: np.ndarray | None,
                         entities: list[str] | None = None) -> tuple[list[tuple[int, float]], int]:
        """Relationship questions: the graph walk from the query, fused (RRF) with the units that
        lie between its specific entities: a walk from each rare named phrase alone scores every
        unit, and the geometric mean over them ranks first the units close to all (the links).
        (Ranking the links that name the classifier's relation hint ("director of") higher was
        measured and lowered multi-hop recall.) Generic phrases
        ("film", "country") are not entities here: they connect everything."""
        graph = self.require_graph()
        base, total = self.graph_ranking(query, query_vector, n, mask)
        text = " ; ".join(entities) if entities else query
        nodes = graph.match(text, self.query_phrases(text))
        rare = max(5, int(0.002 * graph.incidence.shape[0]))
        specific = [node for node in nodes if graph.df[node] <= rare]
        if len(specific) < 2:
            return base, total
        # Six steps reach the units a few phrases away from each entity, which is where the links
        # lie; 20 steps cost twice as much at 100k units for the same ranking with the reranker.
        walks = [graph.personalized_pagerank({node: 1.0}, damping=0.7, iterations=6, epsilon=self.walk_epsilon())
                 for node in specific]
        between = np.exp(np.mean([np.log(w + 1e-12) for w in walks], axis=0)).astype(np.float32)
        valid = between > 1e-10
        if mask is not None:
            valid &= mask
        links = _top(between, n, valid)
        fused = weighted_rrf([[r for r, _ in base], links], [1.0, 0.5], self.config.rrf_k)[:n]
        return fused, max(total, len(fused))

    def require_communities(self) -> CommunityIndex:
        self.require_graph()
        if self.index.communities is None:
            raise MonjyuError("this index has no communities: it was built with `--level 0`, or its documents "
                              "hold too few noun phrases to group; rebuild with Level 1 or add documents")
        return self.index.communities

    def require_graph(self) -> PhraseGraph:
        if self.index.graph is None:
            raise MonjyuError("this index has no Level 1 graph: rebuild it without `--level 0` to use graph search")
        return self.index.graph

    def phrase_extractor(self) -> NounPhraseExtractor:
        if self._np_extractor is None:
            self._np_extractor = NounPhraseExtractor(named_entities=self.index.named_entities)  # queries parsed as the units were
        return self._np_extractor

    def query_phrases(self, text: str) -> list[str]:
        """The normalised noun phrases of a query (what graph.match takes besides its n-grams)."""
        return list(self._phrases_of(text))

    def neighbour_text(self, row: int, chars: int = 200) -> tuple[str, str]:
        """The document's text just before and just after the unit (up to `chars` each), from the
        units beside it; units overlap, so only what lies outside this unit is taken."""
        c = self.index.columns
        if self._by_position is None:
            self._by_position = {(d, int(i)): r for r, (d, i) in enumerate(zip(c["document_id"], c["chunk_index"]))}
        doc, index = c["document_id"][row], int(c["chunk_index"][row])
        start, end = int(c["start_char"][row]), int(c["end_char"][row])
        before = after = ""
        prev = self._by_position.get((doc, index - 1))
        if prev is not None:
            before = c["text"][prev][:max(0, start - int(c["start_char"][prev]))][-chars:]
        nxt = self._by_position.get((doc, index + 1))
        if nxt is not None:
            after = c["text"][nxt][max(0, end - int(c["start_char"][nxt])):][:chars]
        return before, after

    def unit_phrases(self, row: int, limit: int = 30) -> list[int]:
        """The non-hub noun phrases (entity ids) the unit names, most specific (rarest) first."""
        graph = self.index.graph
        if graph is None:
            return []
        inc = graph.incidence
        nodes = [int(n) for n in inc.indices[inc.indptr[row]:inc.indptr[row + 1]] if not graph.is_hub[n]]
        return sorted(nodes, key=lambda n: (-graph.idf[n], n))[:limit]

    def unit_communities(self, row: int) -> list[int]:
        """The unit's community at each level, coarsest first: of the communities at a level that
        hold the unit, the one holding most of its phrases (the smallest id on a tie)."""
        communities = self.index.communities
        if communities is None:
            return []
        phrases = set(self.unit_phrases(row, limit=10_000))
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
    def search(self, query: str, query_vector: np.ndarray | None, mode: str, top_k: int, offset: int = 0,
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
            ranked, total = self.vector_ranking(query_vector, need, mask)
            vec = dict(ranked)
        elif mode == "keyword":
            ranked, total = self.keyword_ranking(query, need, mask)
            kw = dict(ranked)
        elif mode == "graph":
            ranked, total = self.graph_list(query, query_vector, need, mask)
        elif mode == "hybrid":
            n = max(cfg.candidates, need)
            t = time.perf_counter()
            v_ranked, _ = self.vector_ranking(query_vector, n, mask)
            timings["vector_ms"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            k_ranked, _ = self.keyword_ranking(query, n, mask)
            timings["keyword_ms"] = (time.perf_counter() - t) * 1000
            vec, kw = dict(v_ranked), dict(k_ranked)
            lists = [v_ranked, k_ranked]
            weights = [cfg.vector_weight, 1.0 - cfg.vector_weight]
            if cfg.graph_weight > 0 and self.index.graph is not None:
                t = time.perf_counter()
                g_ranked, _ = self.graph_list(query, query_vector, n, mask)
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
            evidence = self.evidence_weights(query, k_ranked, bool(graph_ranks)) if rerank else EvidenceWeights()
            if rerank:
                t = time.perf_counter()
                decision.update(evidence.to_dict())
                ranked = self.evidence_round(query, query_vector, ranked, lists, evidence, graph_ranks)
                timings["rerank_ms"] = (time.perf_counter() - t) * 1000
            if cfg.feedback and ranked:
                t = time.perf_counter()
                first = ranked
                ranked = self.feedback_round(query, query_vector, ranked, n, mask)
                decision["feedback"] = ranked is not first
                if cfg.link_evidence and rerank:
                    ranked = self.link_evidence_round(query, query_vector, ranked, mask, evidence, graph_ranks)
                timings["feedback_ms"] = (time.perf_counter() - t) * 1000
            total = len(ranked)
        else:
            raise MonjyuError(f"unknown search mode '{mode}' (vector, keyword, hybrid, graph)")
        if filters is not None:
            kept = filters.trim(ranked)
            if len(kept) < len(ranked):  # the rest scored below min_relevance: none of them is counted
                ranked, total = kept, len(kept)
        page = ranked[offset:need]
        hits = [self.hit(row, score, offset + i + 1, vec.get(row), kw.get(row)) for i, (row, score) in enumerate(page)]
        timings["search_ms"] = (time.perf_counter() - t0) * 1000
        return SearchResults(query=query, mode=mode, hits=hits, total_count=total, timings_ms=timings, fusion=decision)

    def evidence_weights(self, query: str, keyword_list: list[tuple[int, float]], with_graph: bool) -> EvidenceWeights:
        """This query's trust in the evidence signals, from its lists and the collection, no
        constant fitted: the term signals weigh as much as the share of the question's term
        weight that its best keyword hits hold (a paraphrased question, or one whose parts lie
        in several passages, matches no passage's words); the graph list's ranks count as much as
        the meaning signals when the question names a page of the collection (a phrase that
        titles units, whose links the walk follows), and not at all otherwise (paper titles are
        rarely phrases, so in a paper collection the graph never outvotes meaning)."""
        cfg, graph = self.config, self.index.graph
        lexical = self.evidence.term_coverage(self.query_terms(query), [r for r, _ in keyword_list[:LIST_TOP]]) \
            if cfg.term_trust else 1.0
        names_page = cfg.graph_evidence and with_graph and graph is not None and \
            any(node in graph.about for node in self.phrase_seeds(query))
        return EvidenceWeights(lexical=lexical, graph=1.0 if names_page else 0.0)

    def evidence_round(self, query: str, query_vector: np.ndarray, fused: list[tuple[int, float]],
                       lists: list[list[tuple[int, float]]] = (), weights: EvidenceWeights = EvidenceWeights(),
                       graph_ranks: dict[int, int] | None = None) -> list[tuple[int, float]]:
        """The fused list's best `rerank_candidates`, and every list's own top 10 (fusion never
        hides what one list is sure of), reordered by their evidence. Scores are spread evenly
        between the head's best fused score and the rest's, so they still fall with rank."""
        n = self.config.rerank_candidates
        wanted = {r for r, _ in fused[:n]} | {r for lst in lists for r, _ in lst[:LIST_TOP]}
        head = [(r, sc) for r, sc in fused if r in wanted]
        rest = [(r, sc) for r, sc in fused if r not in wanted]
        reranked = self.evidence.rerank(self.query_terms(query), query_vector, [r for r, _ in head],
                                        weights=weights, graph_ranks=graph_ranks)
        return _spread(reranked, head, rest)

    def link_evidence_round(self, query: str, query_vector: np.ndarray, ranked: list[tuple[int, float]],
                            mask: np.ndarray | None, weights: EvidenceWeights = EvidenceWeights(),
                            graph_ranks: dict[int, int] | None = None) -> list[tuple[int, float]]:
        """After the feedback round: the head and the units its best passages link to by title,
        reordered by evidence, a linked unit scoring at least as its linking sentence does
        (EvidenceReranker.rerank's links). Nothing to do without title links."""
        graph = self.index.graph
        if graph is None or not graph.about:
            return ranked
        cfg = self.config
        links = [(unit, seed, self.evidence.sentence_naming(seed, phrase))
                 for seed, _ in ranked[:cfg.feedback_keep] for unit, phrase in graph.linked_units(seed)
                 if mask is None or mask[unit]]
        if not links:
            return ranked
        wanted = {r for r, _ in ranked[:cfg.rerank_candidates]} | {unit for unit, _, _ in links}
        head = [(r, sc) for r, sc in ranked if r in wanted]
        rest = [(r, sc) for r, sc in ranked if r not in wanted]
        reranked = self.evidence.rerank(self.query_terms(query), query_vector, [r for r, _ in head], links,
                                        weights, graph_ranks)
        return _spread(reranked, head, rest)

    def feedback_round(self, query: str, query_vector: np.ndarray, first: list[tuple[int, float]], n: int,
                       mask: np.ndarray | None) -> list[tuple[int, float]]:
        """Search again with the best passage added to the query (vector: sum of the two unit
        vectors; keyword: both term lists) and follow the title links of the best passages; fuse
        with the first round, keeping its top hits in place. Only when those passages link to
        other units by title: without a second hop to follow, the re-search only pushes near
        copies of the best passage into the list (it lowered recall on papers)."""
        cfg = self.config
        linked = self.linked_ranking(query, [r for r, _ in first[:cfg.feedback_keep]], mask)
        if not linked:
            return first
        best = first[0][0]
        q2 = np.asarray(query_vector, dtype=np.float32) + self.index.vectors[best]
        q2 /= max(float(np.linalg.norm(q2)), 1e-12)
        v2, _ = self.vector_ranking(q2, n, mask)
        c = self.index.columns
        passage = f"{c['title'][best]}\n{c['text'][best]}" if c["title"][best] else c["text"][best]
        k2, _ = self.keyword_ranking(self.query_terms(query) + self.analyzer.terms(passage), n, mask)
        lists = [[r for r, _ in first], [r for r, _ in v2], [r for r, _ in k2]]
        weights = [1.0, cfg.feedback_weight, cfg.feedback_weight, cfg.feedback_weight]
        lists.append(linked)
        fused = weighted_rrf(lists, weights, cfg.rrf_k)
        kept = first[:cfg.feedback_keep]
        kept_rows = {r for r, _ in kept}
        rest = [(r, s) for r, s in fused if r not in kept_rows]
        if kept and rest:  # rescale so scores keep falling with rank below the kept hits
            scale = min(1.0, 0.999 * kept[-1][1] / rest[0][1])
            rest = [(r, s * scale) for r, s in rest]
        return kept + rest

    def linked_ranking(self, query: str, seeds: list[int], mask: np.ndarray | None) -> list[int]:
        """Units that the best passages link to by title (a film's page names its director, whose
        own page is the second hop). A link counts more from a better passage and when the
        sentence naming it shares words with the question ("directed by" for "director")."""
        graph = self.index.graph
        if graph is None or not graph.about:
            return []
        q_terms = set(self.query_terms(query))
        texts = self.index.columns["text"]
        scores: dict[int, float] = {}
        for rank, seed in enumerate(seeds, start=1):
            text = texts[seed]
            for unit, phrase in graph.linked_units(seed):
                if mask is not None and not mask[unit]:
                    continue
                shared = len(q_terms & set(self.analyzer.terms(sentence_naming(text, phrase))))
                scores[unit] = scores.get(unit, 0.0) + (1.0 + shared) / rank
        return sorted(scores, key=lambda u: (-scores[u], u))

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
