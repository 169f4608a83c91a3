"""BM25 keyword index (bm25s sparse matrices) over pre-analyzed terms, saved per generation."""

from __future__ import annotations

import sys
from pathlib import Path

import bm25s
import numpy as np
import pyarrow as pa

_PARAMS = "params.index.json"


class BM25Index:
    def __init__(self, retriever: bm25s.BM25 | None, n_docs: int):
        self._retriever = retriever  # None when no unit has a single term (bm25s cannot index that)
        self.n_docs = n_docs
        self._vocab = retriever.vocab_dict if retriever is not None else {}

    @classmethod
    def build_from_column(cls, terms: pa.ChunkedArray, rows: int = 16_384) -> "BM25Index":
        """From the text_units table's terms column, converted a slice at a time with each distinct
        term held once: a string per occurrence (Arrow's to_pylist) is ~3 KB a unit, the build's
        largest allocation after Level 1 at 100k units."""
        corpus_terms: list[list[str]] = []
        for start in range(0, len(terms), rows):
            corpus_terms.extend([list(map(sys.intern, t)) for t in terms.slice(start, rows).to_pylist()])
        return cls.build(corpus_terms)

    @classmethod
    def build(cls, corpus_terms: list[list[str]]) -> "BM25Index":
        if not any(corpus_terms):
            return cls(None, len(corpus_terms))
        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        retriever.index(corpus_terms, show_progress=False)
        return cls(retriever, len(corpus_terms))

    def save(self, path: Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self._retriever is not None:
            self._retriever.save(str(path), show_progress=False)
        (path / "n_docs.txt").write_text(str(self.n_docs))

    @classmethod
    def load(cls, path: Path) -> "BM25Index":
        path = Path(path)
        n_docs = int((path / "n_docs.txt").read_text())
        if not (path / _PARAMS).exists():
            return cls(None, n_docs)
        # Memory-mapped: a query reads only its terms' columns of the score matrix (a few hundred
        # MB at 1M units), shared between the processes that search the same generation.
        return cls(bm25s.BM25.load(str(path), mmap=True, show_progress=False), n_docs)

    def idf(self, terms: set[str]) -> dict[str, float]:
        """Lucene's BM25 IDF of each term the index knows (document frequency from the term's
        column of bm25s's sparse score matrix)."""
        if self._retriever is None:
            return {}
        indptr = self._retriever.scores["indptr"]
        out = {}
        for t in terms:
            i = self._vocab.get(t)
            if i is not None:
                df = int(indptr[i + 1] - indptr[i])
                out[t] = float(np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5)))
        return out

    def scores(self, query_terms: list[str]) -> np.ndarray:
        """BM25 score of every text unit (row order of the text_units table)."""
        ids = [self._vocab[t] for t in query_terms if t in self._vocab]
        if not ids or self._retriever is None:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._retriever.get_scores_from_ids(ids), dtype=np.float32)
