"""Sentence-level relevance without an LLM: the local assessor behind the same 0-10 scale an LLM
assessor uses, so extractive answers and lazy search can run fully offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..ingest.sentences import statement_spans
from ..nlp.analyzer import Analyzer
from ..nlp.glossary import GLOSS_CONTEXT, with_english_glosses
from ..query import Query
from ..retrieval.rankers import QUERY_TEXT_CHARS
from .context import Source


@dataclass
class Sentence:
    text: str
    source: Source
    start_char: int  # offsets in the source document
    end_char: int


@lru_cache(maxsize=4096)
def passage_statements(text: str) -> tuple[tuple[int, int], ...]:
    """A passage's statement spans, kept for the next questions that read the same passage: splitting
    one takes pysbd about 2.5 ms, most of what reading the top passages costs."""
    return tuple(statement_spans(text))


def sentences_of(sources: Sequence[Source]) -> list[Sentence]:
    out = []
    for source in sources:
        text = source.hit.text
        for a, b in passage_statements(text):
            out.append(Sentence(text[a:b], source, source.hit.start_char + a, source.hit.start_char + b))
    return out


class LocalRelevanceScorer:
    """score = 10 * (w * semantic + (1 - w) * lexical), where semantic rescales the e5 cosine of
    sentence and query from its uninformative floor (~0.75: e5 puts unrelated texts there) to 1,
    and lexical is the share of the query's index terms the sentence contains. Semantic carries
    Japanese questions over English text, lexical rewards the exact names the question asks about."""

    name = "local"

    def __init__(self, embed_passages: Callable[[list[str]], np.ndarray], analyzer: Analyzer | None = None,
                 semantic_weight: float = 0.7, cosine_floor: float = 0.75, cosine_full: float = 0.92):
        self.embed = embed_passages
        self._analyzer = analyzer or Analyzer()
        self.semantic_weight = semantic_weight
        self.cosine_floor, self.cosine_full = cosine_floor, cosine_full

    @property
    def analyzer(self) -> Analyzer:
        return self._analyzer

    def query_terms(self, query: Query) -> frozenset[str]:
        """The terms of the query's opening (a pasted section is read as far as its embedding is),
        and for a Japanese one the English glosses of its nouns: its "relevance terms" view, read
        once though one question is scored batch after batch."""
        def terms() -> frozenset[str]:
            opening = query.text[:QUERY_TEXT_CHARS]
            return frozenset(with_english_glosses(opening, self._analyzer.terms(opening), query.language,
                                                  query.known(GLOSS_CONTEXT)))
        return query.view("relevance terms", terms)

    def score(self, query: Query, query_vector: np.ndarray, texts: Sequence[str],
              term_weights: dict[str, float] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return self.score_with_vectors(query, query_vector, self.embed(list(texts)), [[t] for t in texts],
                                       term_weights)

    def score_with_vectors(self, query: Query, query_vector: np.ndarray, vectors: np.ndarray,
                           parts: Sequence[Sequence[str]], term_weights: dict[str, float] | None = None) -> np.ndarray:
        """Scores of texts whose vectors are known (e.g. text units, embedded at index time); the
        lexical share of each is that of its best part (sentence), so a text that names the
        question's terms in one statement beats one that scatters them. `term_weights` (a query
        term's weight, e.g. its IDF in the collection; terms it leaves out weigh 0) makes the share
        a weighted one: naming the rare term of a question counts for more than naming "study"."""
        if not len(parts):
            return np.zeros(0, dtype=np.float32)
        semantic = self.semantic(vectors, query_vector)
        q_terms = self.query_terms(query)
        lexical = np.array([max((self.term_share(q_terms, set(self._analyzer.terms(t)), term_weights) for t in group),
                                default=0.0) for group in parts], dtype=np.float32)
        return self.combine(semantic, lexical)

    def semantic(self, vectors: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """The e5 cosine of each vector and the query, rescaled from its uninformative floor to 1 (0-1)."""
        return self.rescale(np.asarray(vectors, dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32))

    def rescale(self, cosine: np.ndarray) -> np.ndarray:
        """e5 cosines from their uninformative floor (0) to cosine_full (1)."""
        return np.clip((cosine - self.cosine_floor) / (self.cosine_full - self.cosine_floor), 0.0, 1.0)

    @staticmethod
    def term_share(query_terms: frozenset[str], terms: set[str], term_weights: dict[str, float] | None = None) -> float:
        """The share of the query's terms among `terms`: counted, or weighted by `term_weights`
        (terms it leaves out weigh 0)."""
        weight = (lambda ts: float(len(ts))) if term_weights is None else \
            (lambda ts: sum(term_weights.get(t, 0.0) for t in ts))
        total = weight(query_terms)
        return weight(query_terms & terms) / total if total > 0 else 0.0

    def combine(self, semantic: np.ndarray, lexical: np.ndarray) -> np.ndarray:
        """The 0-10 relevance of semantic and lexical shares."""
        w = self.semantic_weight
        return (10.0 * (w * semantic + (1.0 - w) * lexical)).astype(np.float32)
