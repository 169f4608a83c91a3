"""BM25 postings: the scores MONJYU computes are bm25s's own, bit for bit, and an update (documents
removed and added) gives what a build of the same documents from scratch gives."""

from __future__ import annotations

import bm25s
import numpy as np
import pyarrow as pa

from monjyu.index.manifest import read_manifest
from monjyu.store.bm25 import BM25Index, Postings
from monjyu.store.lancedb_store import LanceStore


def sample_terms(sample_index) -> list[list[str]]:
    root = sample_index.index_dir
    store = LanceStore(root / "generations" / read_manifest(root).generation / "lancedb")
    return store.units(["terms"])["terms"].to_pylist()


def postings_of(postings: Postings, scores: np.ndarray) -> dict[str, tuple[list[int], list[float]]]:
    """Each term's (documents, scores), whatever its id."""
    return {t: (postings.docs[postings.indptr[i]:postings.indptr[i + 1]].tolist(),
                scores[postings.indptr[i]:postings.indptr[i + 1]].tolist()) for t, i in postings.vocab.items()}


def test_scores_are_bm25s_own(sample_index):
    terms = sample_terms(sample_index)
    theirs = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    theirs.index(terms, show_progress=False)
    ours = BM25Index.build(terms)
    s = theirs.scores
    expected = {t: (s["indices"][s["indptr"][i]:s["indptr"][i + 1]].tolist(),
                    s["data"][s["indptr"][i]:s["indptr"][i + 1]].tolist()) for t, i in theirs.vocab_dict.items() if t}
    assert postings_of(ours._postings, ours._postings.scores()) == expected
    for query in (["leiden", "communiti"], ["retriev"], ["検索"]):
        assert np.array_equal(ours.scores(query), theirs.get_scores(query))


def test_an_update_equals_a_build_from_scratch(sample_index, tmp_path):
    terms = sample_terms(sample_index)
    rng = np.random.default_rng(0)
    first, later = terms[:-5], terms[-5:]
    keep = rng.random(len(first)) > 0.3
    built = BM25Index.build(first)
    built.save(tmp_path / "bm25")
    updated = BM25Index.updated(tmp_path / "bm25", keep, pa.chunked_array([pa.array(later, pa.list_(pa.string()))]))
    scratch = BM25Index.build([doc for doc, k in zip(first, keep) if k] + later)
    assert postings_of(updated._postings, updated._postings.scores()) == \
        postings_of(scratch._postings, scratch._postings.scores())
    assert updated.n_docs == scratch.n_docs
    kept = [doc for doc, k in zip(first, keep) if k]
    dropped = [doc for doc, k in zip(first, keep) if not k]
    removed_only = {t for doc in dropped for t in doc} - {t for doc in kept + later for t in doc}
    assert removed_only and not removed_only & set(updated._postings.vocab)  # terms no document holds are gone
    for query in (["leiden"], ["graph", "retriev"]):
        assert np.array_equal(updated.scores(query), scratch.scores(query))
