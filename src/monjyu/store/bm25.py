"""BM25 keyword index (bm25s sparse matrices) over pre-analyzed terms, saved per generation.

The score matrix is computed here from the term frequencies, with bm25s's Lucene formula and
arithmetic (the same float32 scores bm25s's own indexing gives: tests/test_bm25.py), and saved
in bm25s's layout with the term frequencies beside it, so a build that adds or removes a few
documents updates the postings instead of re-reading every unit's terms. bm25s loads the matrix
memory-mapped and scores queries with it.
"""

from __future__ import annotations

import json
import math
import sys
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from rapidfuzz import process
from rapidfuzz.distance import OSA

_PARAMS = "params.index.json"
K1, B = 1.2, 0.75
SCORE_BLOCK = 1 << 22  # postings scored at a time
# Beside bm25s's files: what an update starts from (the scores' doc ids and pointers are bm25s's).
TERM_FREQUENCIES, DOC_LENGTHS = "tf.npy", "doc_len.npy"
_INDICES, _INDPTR, _VOCAB = "indices.csc.index.npy", "indptr.csc.index.npy", "vocab.index.json"


@dataclass
class Postings:
    """Every term's documents (ascending) and frequencies, term after term (CSC: `indptr` over
    the vocabulary), and each document's length in terms: what the BM25 scores are made from."""

    vocab: dict[str, int]
    indptr: np.ndarray  # int64, one more than the vocabulary
    docs: np.ndarray  # int32
    tf: np.ndarray  # float32
    doc_len: np.ndarray  # int64

    @classmethod
    def empty(cls) -> "Postings":
        return cls({}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.int64))

    @classmethod
    def load(cls, path: Path) -> "Postings | None":
        """A generation's postings (None for one saved before they were kept, or with no terms)."""
        path = Path(path)
        if not (path / TERM_FREQUENCIES).exists():
            return None
        vocab = json.loads((path / _VOCAB).read_text(encoding="utf-8"))
        return cls(vocab, np.load(path / _INDPTR).astype(np.int64), np.load(path / _INDICES),
                   np.load(path / TERM_FREQUENCIES), np.load(path / DOC_LENGTHS))

    def update(self, keep: np.ndarray | None, added: Iterable[list[str]]) -> "Postings":
        """The postings without the documents `keep` (a mask, None: all kept) leaves out, the rest
        renumbered in order, then the `added` documents (their terms) after them. Terms no
        document holds any more leave the vocabulary. Vectorised over the kept postings: an add
        costs a few passes over arrays, not a pass over every document's terms."""
        vocab = dict(self.vocab)
        counts = np.diff(self.indptr)
        term = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        docs, tf, doc_len = self.docs, self.tf, self.doc_len
        if keep is not None and not keep.all():
            renumbered = np.cumsum(keep) - 1
            live = keep[docs]
            term, docs, tf, doc_len = term[live], renumbered[docs[live]].astype(np.int32), tf[live], doc_len[keep]
        first = len(doc_len)
        new_term, new_doc, new_tf, new_len = array("i"), array("i"), array("f"), array("q")
        for i, terms in enumerate(added):
            counted = Counter(vocab.setdefault(t, len(vocab)) for t in terms)
            new_term.extend(counted.keys())
            new_tf.extend(counted.values())
            new_doc.extend([i] * len(counted))
            new_len.append(len(terms))
        size = len(vocab)
        # The new postings term after term, documents in order (scipy's counting sort).
        new = sp.csc_matrix((np.frombuffer(new_tf, np.float32), (np.frombuffer(new_doc, np.int32),
                                                                   np.frombuffer(new_term, np.int32))),
                            shape=(len(new_len), size))
        del new_term, new_doc, new_tf
        old_counts = np.bincount(term, minlength=size)
        add_counts = np.diff(new.indptr).astype(np.int64)
        df = old_counts + add_counts
        indptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        # Each term's kept postings first (already in order), then its new ones (higher doc ids).
        old_at = indptr[term] + np.arange(len(term)) - (np.cumsum(old_counts) - old_counts)[term]
        new_term = np.repeat(np.arange(size, dtype=np.int64), add_counts)
        new_at = indptr[new_term] + old_counts[new_term] + np.arange(len(new_term)) - new.indptr[new_term]
        out_docs, out_tf = np.empty(indptr[-1], np.int32), np.empty(indptr[-1], np.float32)
        out_docs[old_at], out_tf[old_at] = docs, tf
        out_docs[new_at], out_tf[new_at] = new.indices + first, new.data
        doc_len = np.concatenate([doc_len, np.frombuffer(new_len, np.int64)])
        if (df == 0).any():
            live = df > 0
            number = np.cumsum(live) - 1
            vocab = {t: int(number[i]) for t, i in vocab.items() if live[i]}
            indptr = np.concatenate([[0], np.cumsum(df[live])]).astype(np.int64)
        return Postings(vocab, indptr, out_docs, out_tf, doc_len)

    def scores(self) -> np.ndarray:
        """BM25 (Lucene) score of every posting, float32, as bm25s computes it: the idf in double
        precision per term, the term-frequency part in double precision, their product rounded."""
        n_docs, df = len(self.doc_len), np.diff(self.indptr)
        if not len(self.docs):
            return np.zeros(0, np.float32)
        live = np.flatnonzero(df > 0)
        distinct, which = np.unique(df[live], return_inverse=True)
        idf = np.zeros(len(df), np.float32)
        idf[live] = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in distinct.tolist()])[which]
        average = self.doc_len.mean()
        out = np.empty(len(self.docs), np.float32)
        for a in range(0, len(out), SCORE_BLOCK):  # a block of postings at a time: float64 temporaries stay small
            b = min(a + SCORE_BLOCK, len(out))
            term = np.searchsorted(self.indptr, np.arange(a, b), side="right") - 1
            tf = self.tf[a:b].astype(np.float64)
            part = tf / (K1 * ((1 - B) + B * self.doc_len[self.docs[a:b]].astype(np.float64) / average) + tf)
            out[a:b] = idf[term].astype(np.float64) * part
        return out


class BM25Index:
    def __init__(self, retriever: bm25s.BM25 | None, n_docs: int, postings: Postings | None = None):
        self._retriever = retriever  # None when no unit has a single term (bm25s cannot index that)
        self.n_docs = n_docs
        self._vocab = retriever.vocab_dict if retriever is not None else {}
        self._postings = postings  # kept by a build, for saving

    @classmethod
    def build_from_column(cls, terms: pa.ChunkedArray, rows: int = 16_384) -> "BM25Index":
        """From the text_units table's terms column, converted a slice at a time with each distinct
        term held once: a string per occurrence (Arrow's to_pylist) is ~3 KB a unit, the build's
        largest allocation after Level 1 at 100k units."""
        return cls.build(_column_terms(terms, rows))

    @classmethod
    def build(cls, corpus_terms: Iterable[list[str]]) -> "BM25Index":
        return cls.from_postings(Postings.empty().update(None, corpus_terms))

    @classmethod
    def updated(cls, previous: Path, keep: np.ndarray, added: pa.ChunkedArray) -> "BM25Index | None":
        """The previous generation's index with the documents `keep` leaves out removed and the
        `added` ones (a terms column) appended; None when that generation kept no postings."""
        postings = Postings.load(previous)
        if postings is None or len(postings.doc_len) != len(keep):
            return None
        return cls.from_postings(postings.update(keep, _column_terms(added)))

    @classmethod
    def from_postings(cls, postings: Postings) -> "BM25Index":
        n_docs = len(postings.doc_len)
        if not len(postings.docs):
            return cls(None, n_docs)
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        retriever.scores = {"data": postings.scores(), "indices": postings.docs, "indptr": postings.indptr,
                            "num_docs": n_docs}
        retriever.vocab_dict = postings.vocab
        retriever.nonoccurrence_array = None  # Lucene's BM25 scores no absent term (as bm25s's index() sets it)
        return cls(retriever, n_docs, postings)

    def save(self, path: Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self._retriever is not None:
            self._retriever.save(str(path), show_progress=False)
        if self._postings is not None and self._retriever is not None:
            np.save(path / TERM_FREQUENCIES, self._postings.tf)
            np.save(path / DOC_LENGTHS, self._postings.doc_len)
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
        out = {}
        for t in terms:
            df = self.document_frequency(t)
            if df:
                out[t] = float(np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5)))
        return out

    def document_frequency(self, term: str) -> int:
        """How many text units hold the term (0: none does)."""
        i = self._vocab.get(term)
        if i is None or self._retriever is None:
            return 0
        indptr = self._retriever.scores["indptr"]
        return int(indptr[i + 1] - indptr[i])

    def has_term_near(self, term: str, edits: int = 2) -> bool:
        """Whether the index holds a term at most `edits` edits from `term` (a letter dropped, added,
        changed, or two next to each other swapped: rapidfuzz's OSA distance): a word the index
        lacks may be a misspelling of that one ("redsitrubute")."""
        return process.extractOne(term, self._vocab.keys(), scorer=OSA.distance, score_cutoff=edits) is not None

    def scores(self, query_terms: list[str]) -> np.ndarray:
        """BM25 score of every text unit (row order of the text_units table)."""
        ids = [self._vocab[t] for t in query_terms if t in self._vocab]
        if not ids or self._retriever is None:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self._retriever.get_scores_from_ids(ids), dtype=np.float32)


def _column_terms(terms: pa.ChunkedArray, rows: int = 16_384) -> Iterable[list[str]]:
    """A terms column as lists, a slice at a time, each distinct term held once."""
    for start in range(0, len(terms), rows):
        yield from ([list(map(sys.intern, t)) for t in terms.slice(start, rows).to_pylist()])
