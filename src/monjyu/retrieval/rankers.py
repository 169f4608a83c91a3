"""The rankers of one index generation, each `rank`ing its units for an analysed `Query`: by
meaning (`VectorRanker`), by words (`KeywordRanker`, BM25), through the noun-phrase graph
(`GraphRanker`: the walk, its chained second hop, the links between a question's entities) and
by community (`CommunityRanker`). Each returns (row, score) pairs, best first, and how many units
passed; `Searcher` (searcher.py) fuses them, and the engines call them one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..config import SearchConfig
from ..errors import MonjyuError
from ..nlp import Analyzer
from ..nlp.byline_questions import ASKING_WORDS, asks_byline
from ..nlp.glossary import GLOSS_CONTEXT, with_english_glosses
from ..nlp.lang import detect_language
from ..nlp.noun_phrases import NounPhraseExtractor
from ..query import Query
from ..store.unit_vectors import release_pages, scores_of_all
from .communities import CommunityHit, CommunityIndex
from .evidence import EvidenceReranker
from .fusion import weighted_rrf
from .graph import PhraseGraph
from .loaded import LoadedIndex

# A long query ("find passages like this abstract") is served in bounded time: its first
# QUERY_TEXT_CHARS characters give the embedding, noun phrases and graph seeds, and the
# MAX_QUERY_TERMS most distinctive terms (highest IDF) of its first KEYWORD_TEXT_CHARS the
# keyword query.
QUERY_TEXT_CHARS = 400  # an abstract's first two or three sentences (~100 tokens)
KEYWORD_TEXT_CHARS = 10_000  # a few pages: a section's distinctive terms are all there
MAX_QUERY_TERMS = 64
Ranked = tuple[list[tuple[int, float]], int]  # (row, score) best first, and how many units passed


def top_rows(scores: np.ndarray, n: int, valid: np.ndarray) -> list[int]:
    """Indices of the n best valid scores, best first (stable on ties)."""
    idx = np.flatnonzero(valid)
    if len(idx) == 0 or n <= 0:
        return []
    if len(idx) > n:
        part = np.argpartition(-scores[idx], n - 1)[:n]
        idx = idx[part]
    order = np.lexsort((idx, -scores[idx]))
    return idx[order].tolist()


def require_graph(index: LoadedIndex) -> PhraseGraph:
    """The generation's noun-phrase graph, or a clear error for an index without Level 1."""
    if index.graph is None:
        raise MonjyuError("this index has no Level 1 graph: rebuild it without `--level 0` to use graph search")
    return index.graph


def require_communities(index: LoadedIndex) -> CommunityIndex:
    """The generation's community hierarchy, or a clear error for an index without one."""
    require_graph(index)
    if index.communities is None:
        raise MonjyuError("this index has no communities: it was built with `--level 0`, or its documents "
                          "hold too few noun phrases to group; rebuild with Level 1 or add documents")
    return index.communities


class VectorRanker:
    def __init__(self, index: LoadedIndex, config: SearchConfig, row_of: Callable[[str], int]):
        self.index = index
        self.config = config
        self.row_of = row_of  # a text unit id's row (the ANN answers with ids)

    def rank(self, query_vector: np.ndarray, n: int,
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
        top = top_rows(scores, n, valid)
        if candidates is None:
            return [(r, float(scores[r])) for r in top], int(valid.sum())
        return [(int(candidates[i]), float(scores[i])) for i in top], len(top) if len(top) < n else len(self.index)


class KeywordRanker:
    def __init__(self, index: LoadedIndex, analyzer: Analyzer):
        self.index = index
        self.analyzer = analyzer

    def terms(self, query: Query) -> list[str]:
        """The query's index terms (its "keyword terms" view): past MAX_QUERY_TERMS distinct ones,
        the most distinctive."""
        return list(query.view("keyword terms", lambda: tuple(self._terms(query))))

    def _terms(self, asked: Query) -> list[str]:
        """Its own terms (the most distinctive, past MAX_QUERY_TERMS), then, for a Japanese query,
        the English glosses of its nouns: words of English documents it can match. A question for
        a paper's byline is searched by what names the paper, its asking words ("paper", "wrote",
        論文 and its gloss) left out where others remain."""
        query = asked.text[:KEYWORD_TEXT_CHARS]
        terms = self.analyzer.terms(query)
        distinct = set(terms)
        if len(distinct) > MAX_QUERY_TERMS:
            idf = self.index.bm25.idf(distinct)
            keep = set(sorted(idf, key=lambda t: (-idf[t], t))[:MAX_QUERY_TERMS])
            terms = list(dict.fromkeys(t for t in terms if t in keep))
        terms = with_english_glosses(query, terms, asked.language, asked.known(GLOSS_CONTEXT))
        if asks_byline(asked.text):
            asking = set(self.analyzer.terms(ASKING_WORDS))
            terms = [t for t in terms if t not in asking] or terms
        return terms

    def rank(self, query: Query | list[str], n: int, mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """BM25 over the query's keyword terms (or these terms); the store's own keyword search
        where it has one (store.keyword fulltext)."""
        terms = self.terms(query) if isinstance(query, Query) else query
        if self.index.fulltext is not None:  # the default kinds go as None: the store filters them itself
            if isinstance(query, Query):
                text, lang = query.text[:QUERY_TEXT_CHARS], query.language
            else:
                text = " ".join(terms)
                lang = detect_language(text)
            rows = None if mask is self.index.mask(None) else mask
            ranked = self.index.fulltext.ranking(text, terms, lang, n, rows)
            return ranked, len(ranked)
        scores = self.index.bm25.scores(terms)
        valid = scores > 0
        if mask is not None:
            valid &= mask
        rows = top_rows(scores, n, valid)
        return [(r, float(scores[r])) for r in rows], int(valid.sum())


class GraphRanker:
    def __init__(self, index: LoadedIndex, config: SearchConfig, vector: VectorRanker,
                 embed_texts: Callable[[list[str]], np.ndarray] | None):
        """`embed_texts`: the index's embedder in the passage role, cached by text, for a query's
        phrases that name no node (None: they are left out)."""
        self.index = index
        self.config = config
        self.vector = vector
        self.embed_texts = embed_texts
        self._np_extractor: NounPhraseExtractor | None = None

    def ranking(self, query: Query, query_vector: np.ndarray | None, n: int,
                mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """The graph's ranking in graph and hybrid modes: the chained two-hop walk, or the single
        walk with search.graph_hops 1."""
        if self.config.graph_hops == 2:
            return self.multihop(query, query_vector, n, mask)
        return self.rank(query, query_vector, n, mask)

    def rank(self, query: Query, query_vector: np.ndarray | None, n: int,
             mask: np.ndarray | None) -> tuple[list[tuple[int, float]], int]:
        """Personalised PageRank from the query's phrases and its best vector hits."""
        graph = require_graph(self.index)
        cfg = self.config
        seeds = self.seeds(query)
        unit_seeds: dict[int, float] = {}
        if cfg.graph_dense_seeds and query_vector is not None:
            dense, _ = self.vector.rank(query_vector, cfg.graph_dense_seeds, mask)
            scale = sum(seeds.values()) or 1.0
            unit_seeds = {row: scale / rank for rank, (row, _) in enumerate(dense, start=1)}
        scores = graph.personalized_pagerank(seeds, unit_seeds, damping=cfg.graph_damping, epsilon=self.walk_epsilon())
        valid = scores > 0
        if mask is not None:
            valid &= mask
        rows = top_rows(scores, n, valid)
        return [(r, float(scores[r])) for r in rows], int(valid.sum())

    def multihop(self, query: Query, query_vector: np.ndarray | None, n: int, mask: np.ndarray | None,
                 hop_units: int = 3, bridges: int = 5) -> tuple[list[tuple[int, float]], int]:
        """A chained walk for questions that go through an unnamed entity ("where was the director
        of film X born?"): hop 1 is the walk from the query; the rarest phrases of hop 1's best
        units that the query does not name are the bridges (the director's name), and hop 2
        walks from them together with the query's own phrases. The two hops are fused by RRF,
        hop 1 first."""
        graph = require_graph(self.index)
        first, total = self.rank(query, query_vector, n, mask)
        named = set(self.seeds(query))
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
        second = top_rows(scores, n, valid)
        fused = weighted_rrf([[r for r, _ in first], second], [1.0, 0.5], self.config.rrf_k)[:n]
        return fused, max(total, len(fused))

    def relation(self, query: Query, query_vector: np.ndarray | None, n: int, mask: np.ndarray | None,
                 entities: list[str] | None = None) -> tuple[list[tuple[int, float]], int]:
        """Relationship questions: the graph walk from the query, fused (RRF) with the units that
        lie between its specific entities: a walk from each rare named phrase alone scores every
        unit, and the geometric mean over them ranks first the units close to all (the links).
        (Ranking the links that name the classifier's relation hint ("director of") higher was
        measured and lowered multi-hop recall.) Generic phrases
        ("film", "country") are not entities here: they connect everything."""
        graph = require_graph(self.index)
        base, total = self.rank(query, query_vector, n, mask)
        named = query.derive(" ; ".join(entities)) if entities else query
        nodes = graph.match(named.text, self.phrases(named))
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
        links = top_rows(between, n, valid)
        fused = weighted_rrf([[r for r, _ in base], links], [1.0, 0.5], self.config.rrf_k)[:n]
        return fused, max(total, len(fused))

    def walk_epsilon(self) -> float:
        """search.walk_epsilon on a graph of search.walk_exact_links links or more; a smaller graph
        walks exactly (a few ms: nothing to bound)."""
        graph = self.index.graph
        return self.config.walk_epsilon if graph is not None and graph.incidence.nnz >= self.config.walk_exact_links \
            else 0.0

    def seeds(self, query: Query) -> dict[int, float]:
        """The query's seed phrases and their weights (its "graph seeds" view): the walk, its
        second hop and the evidence weights all read them."""
        return dict(query.view("graph seeds", lambda: tuple(self._seeds(query).items())))

    def _seeds(self, query: Query) -> dict[int, float]:
        """Phrase nodes the query names, plus, for each of its noun phrases that names none, the
        nearest embedded phrase in another language at cosine >= search.graph_phrase_similarity:
        a Japanese question reaches the English graph this way. Within one language a phrase is
        either named or a different thing whose spelling fools the embedding ("john smith" /
        "john smyth"), so same-language matches by embedding are not taken (they lowered graph
        recall on multi-hop Wikipedia)."""
        graph = require_graph(self.index)
        phrases = self.phrases(query)
        seeds = graph.match(query.text[:QUERY_TEXT_CHARS], phrases)
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

    def phrase_extractor(self) -> NounPhraseExtractor:
        if self._np_extractor is None:
            self._np_extractor = NounPhraseExtractor(named_entities=self.index.named_entities)  # queries parsed as the units were
        return self._np_extractor

    def phrases(self, query: Query) -> list[str]:
        """The normalised noun phrases of the query's opening (its "noun phrases" view: what
        graph.match takes besides its n-grams)."""
        return list(query.view("noun phrases", lambda: tuple(
            self.phrase_extractor().extract([query.text[:QUERY_TEXT_CHARS]], [query.language])[0])))

    def unit_phrases(self, row: int, limit: int = 30) -> list[int]:
        """The non-hub noun phrases (entity ids) the unit names, most specific (rarest) first."""
        graph = self.index.graph
        if graph is None:
            return []
        inc = graph.incidence
        nodes = [int(n) for n in inc.indices[inc.indptr[row]:inc.indptr[row + 1]] if not graph.is_hub[n]]
        return sorted(nodes, key=lambda n: (-graph.idf[n], n))[:limit]


class CommunityRanker:
    def __init__(self, index: LoadedIndex, config: SearchConfig, vector: VectorRanker):
        self.index = index
        self.config = config
        self.vector = vector

    def rank(self, query: Query, query_vector: np.ndarray, n: int, mask: np.ndarray | None,
             communities: int = 5) -> tuple[list[tuple[int, float]], int, list[CommunityHit]]:
        """Global questions: the communities holding most of the query's best units, then their
        units by similarity, taken in turn from each community so every theme is represented.
        Also returns those communities."""
        index = require_communities(self.index)
        seed, _ = self.vector.rank(query_vector, max(n, 50), mask)
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


class Rankers(Protocol):
    """What the rounds after fusion (rounds.py) read: the generation, the settings and the
    rankers (a Searcher has them all)."""

    index: LoadedIndex
    config: SearchConfig
    analyzer: Analyzer
    evidence: EvidenceReranker
    vector: VectorRanker
    keyword: KeywordRanker
    graph: GraphRanker
