"""Evidence rerank: the best fused candidates reordered by how directly they state what the query asks.

First-round fusion (vector, BM25, graph) finds the right neighbourhood; a reader wants the passage
whose sentence answers. Four signals per candidate, each min-max scaled over the candidates and
averaged (no weight tuned to a collection; the two term signals weighed per query, below):

- the unit's embedding against the query (stored in the index);
- the unit's BM25 score;
- its best sentence by query terms: IDF-weighted share of the query's terms it contains, plus
  half the share of the query's adjacent term pairs it repeats in order;
- its best sentence by meaning: the highest cosine of one of its sentences to the query
  (sentence vectors come from the embedding cache, filled at build time when
  `embedding.sentences` is on; extractive answers read the same vectors).

It is what full-text papers need most (the answer passage first among its paper's units); on
multi-hop questions it changes little, because the second hop is added after it by the feedback
round. The fusion ablation on the benchmarks page measures both.

How much the term signals and the graph count is decided per query (`EvidenceWeights`, chosen by
`rounds.evidence_weights` from the lists and the collection): the term signals count as much
of the question's term weight as its best keyword hit holds, and the graph list's ranks join as a
fifth signal when the question names a page of the collection. With equal weights, on questions
that need two papers, the paper whose passages repeat the question's words had pushed the other
paper's passage (found only by meaning) out of the top 8.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..ingest.sentences import statement_spans
from ..nlp import Analyzer

if TYPE_CHECKING:
    from .loaded import LoadedIndex


def _scaled(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    return (values - lo) / (hi - lo) if hi > lo else np.ones_like(values)


@dataclass(frozen=True)
class EvidenceWeights:
    """One query's weights of the evidence signals against the meaning signals (1 each)."""

    lexical: float = 1.0  # the unit's BM25 and its best sentence by terms
    graph: float = 0.0  # the graph list's reciprocal rank (0: not a signal)

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in asdict(self).items()}


class EvidenceReranker:
    def __init__(self, index: LoadedIndex, analyzer: Analyzer, embed_texts: Callable[[list[str]], np.ndarray] | None):
        self.index, self.analyzer = index, analyzer
        self.texts, self.vectors, self.bm25 = index.columns["text"], index.vectors, index.bm25
        self.embed_texts = embed_texts  # None: the sentence-meaning signal is left out
        self._sentences: dict[int, tuple[list[str], list[list[str]]]] = {}

    def sentences(self, row: int) -> tuple[list[str], list[list[str]]]:
        """A unit's statements and their index terms (cached per unit: units recur across queries)."""
        cached = self._sentences.get(row)
        if cached is None:
            text = self.texts[row]
            spans = statement_spans(text, self.index.sentence_spans(row) or None)
            sentences = [text[a:b] for a, b in spans] or [text]
            cached = (sentences, [self.analyzer.terms(s) for s in sentences])
            if len(self._sentences) > 100_000:
                self._sentences.clear()
            self._sentences[row] = cached
        return cached

    def sentence_naming(self, row: int, phrase: str) -> str:
        """The unit's first statement naming `phrase` (lower case): one whose vector the build
        cached; "" when none does."""
        return next((s for s in self.sentences(row)[0] if phrase in s.lower()), "")

    def term_coverage(self, query_terms: list[str], rows: list[int]) -> float:
        """The largest share of the query's term weight (IDF) that one of `rows` holds: near 1
        when some passage repeats the question's words, low when the question paraphrases its
        passages or spans several of them (then terms are weak evidence of an answer)."""
        idf = self.bm25.idf(set(query_terms))
        total = sum(idf.values())
        if not total:
            return 0.0
        best = 0.0
        for row in rows:
            held = set().union(*self.sentences(row)[1])
            best = max(best, sum(w for t, w in idf.items() if t in held) / total)
        return best

    def rerank(self, query_terms: list[str], query_vector: np.ndarray, rows: list[int],
               links: list[tuple[int, int, str]] = (), weights: EvidenceWeights = EvidenceWeights(),
               graph_ranks: dict[int, int] | None = None) -> list[tuple[int, float]]:
        """(row, score in 0..1) best first; ties keep the given order. `weights` scale the term
        signals and add the graph's: 1 / rank in the graph list (`graph_ranks`, from 1; 0 when
        absent).

        `links` (linked row, linking row, linking sentence): a passage another candidate links to
        by title (the director's page, from the film's) shares few words with a multi-hop
        question; it scores at least as the linking sentence does, read as evidence of its own
        with the linking passage's vector and BM25 score, so the second hop is not buried."""
        if len(rows) < 2:
            return [(r, 1.0) for r in rows]
        q = np.asarray(query_vector, dtype=np.float32)
        links = [(linked, seed, sentence) for linked, seed, sentence in links if sentence]
        seeds = [seed for _, seed, _ in links]
        groups = [self.sentences(r) for r in rows] + [([s], [self.analyzer.terms(s)]) for _, _, s in links]
        units = list(rows) + seeds
        bm25 = self.bm25.scores(query_terms) if query_terms else np.zeros(len(self.vectors))
        signals = [self.vectors[units] @ q, bm25[units]]
        idf = self.bm25.idf(set(query_terms))
        total = sum(idf.values()) or 1.0
        pairs = set(zip(query_terms, query_terms[1:]))
        per_sentence = []  # lexical evidence of every sentence, in group order
        for _, term_lists in groups:
            for terms in term_lists:
                covered = sum(idf[t] for t in idf.keys() & set(terms)) / total
                ordered = len(pairs & set(zip(terms, terms[1:]))) / len(pairs) if pairs else 0.0
                per_sentence.append(covered + 0.5 * ordered)
        sizes = [len(g) for g, _ in groups]
        bounds = np.cumsum([0] + sizes)
        lexical_s = np.asarray(per_sentence, dtype=np.float64)
        signals.append(np.array([lexical_s[a:b].max() for a, b in zip(bounds[:-1], bounds[1:])]))
        weight = [1.0, weights.lexical, weights.lexical]
        if self.embed_texts is not None:
            cosine_s = (self.embed_texts([s for g, _ in groups for s in g]) @ q).astype(np.float64)
            signals.append(np.array([cosine_s[a:b].max() for a, b in zip(bounds[:-1], bounds[1:])]))
            weight.append(1.0)
        if weights.graph > 0 and graph_ranks:
            signals.append(np.array([1.0 / graph_ranks[u] if u in graph_ranks else 0.0 for u in units]))
            weight.append(weights.graph)

        scores = np.average([_scaled(np.asarray(s, dtype=np.float64)) for s in signals], axis=0, weights=weight)
        score = scores[:len(rows)].copy()
        position = {row: i for i, row in enumerate(rows)}
        for (linked, _, _), value in zip(links, scores[len(rows):]):
            if linked in position:
                score[position[linked]] = max(score[position[linked]], value)
        order = np.lexsort((np.arange(len(rows)), -score))
        return [(rows[i], float(score[i])) for i in order]
