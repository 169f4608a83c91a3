"""Query latency of Level 0 retrieval at 10k and 100k text units, against a plain reference
(numpy exact search + bm25s) timed in the same run, and LanceDB's own flat and ANN search.
Sizes at or above search.ann_min_units are also timed through the ANN index a build of that
size gets (monjyu_ann_*).

    python bench/level0_latency.py --real-index /tmp/idx-2wiki --sizes 10000,100000

Texts are synthetic: sentences resampled from the real index's text units. Vectors are built from
the real embeddings (normalised mixtures of two real unit vectors plus noise) so that ANN recall
is measured on the geometry of real embeddings, not on random points; ANN recall is also
measured on the real vectors alone. Query vectors are the real index's own units' neighbours:
real question embeddings of the BEIR queries when --beir is given.
"""

from __future__ import annotations

import argparse
import os
import json
import tempfile
import time
from pathlib import Path

import bm25s
import lancedb
import numpy as np
import pyarrow as pa
import Stemmer

from monjyu.config import SearchConfig
from monjyu.embed import create_embedder
from monjyu.config import EmbeddingConfig
from monjyu.eval import BeirDataset
from monjyu.index import read_manifest
from monjyu.index.builder import generation_dir
from monjyu.nlp import Analyzer
from monjyu.retrieval import LoadedIndex, Searcher, weighted_rrf
from monjyu.store import LanceStore
from monjyu.store.bm25 import BM25Index
from monjyu.store.lancedb_store import TEXT_UNITS, VectorANN
from monjyu.query import Query


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.array(values), p))


def rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


def timed(fn, queries) -> list[float]:
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def synthesize(real: LoadedIndex, n: int, rng: np.random.Generator):
    texts = real.columns["text"]
    words = " ".join(texts[: min(len(texts), 3000)]).split()
    m = len(real)
    a, b = rng.integers(0, m, n), rng.integers(0, m, n)
    w = rng.uniform(0.3, 0.7, (n, 1)).astype(np.float32)
    vecs = w * real.vectors[a] + (1 - w) * real.vectors[b] + rng.normal(0, 0.01, (n, real.vectors.shape[1])).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    starts = rng.integers(0, len(words) - 80, n)
    synth_texts = [" ".join(words[s:s + 60]) for s in starts]
    return synth_texts, vecs.astype(np.float32)


def unit_columns(n: int, **given: np.ndarray) -> dict[str, np.ndarray]:
    """The metadata columns LoadedIndex holds (META_COLUMNS) for n synthetic units, empty unless given."""
    cols = {c: np.array([""] * n, dtype=object) for c in ("document_id", "title", "source_path", "file_type", "date",
                                                            "text", "section")}
    cols |= {"id": np.array([f"u{i}" for i in range(n)], dtype=object), "kind": np.array(["text"] * n, dtype=object),
             "authors": np.array([[]] * n + [None], dtype=object)[:n], "year": np.array([None] * n, dtype=object),
             "page": np.array([None] * n, dtype=object), "chunk_index": np.zeros(n, dtype=object),
             "start_char": np.zeros(n, dtype=object), "end_char": np.zeros(n, dtype=object)}
    return cols | given


def lance_bench(vecs: np.ndarray, qvecs: np.ndarray, exact_top: list[np.ndarray], k: int = 10) -> dict:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        dim = vecs.shape[1]
        table = pa.table({"id": np.arange(len(vecs)),
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim)})
        tbl = db.create_table("v", schema=table.schema)
        tbl.add(table)
        flat = timed(lambda q: tbl.search(q).metric("cosine").limit(k).select(["id"]).to_arrow(), qvecs)
        out["lancedb_flat_p50"], out["lancedb_flat_p95"] = pct(flat, 50), pct(flat, 95)
        for index_type in ("IVF_PQ", "IVF_HNSW_SQ"):
            t0 = time.perf_counter()
            tbl.create_index(metric="cosine", vector_column_name="vector", index_type=index_type, replace=True)
            build_s = time.perf_counter() - t0
            for nprobes, refine in ((20, None), (50, 5)):
                def run(q):
                    s = tbl.search(q).metric("cosine").limit(k).nprobes(nprobes).select(["id"])
                    if refine:
                        s = s.refine_factor(refine)
                    return s.to_arrow()["id"].to_numpy()
                lat = timed(run, qvecs)
                recall = np.mean([len(set(run(q)) & set(t)) / k for q, t in zip(qvecs, exact_top)])
                key = f"lancedb_{index_type}_np{nprobes}" + (f"_rf{refine}" if refine else "")
                out[key + "_p50"], out[key + "_p95"], out[key + "_recall@10"] = pct(lat, 50), pct(lat, 95), float(recall)
            out[f"lancedb_{index_type}_build_s"] = build_s
    return out


def ann_index(path: Path, ids: np.ndarray, vecs: np.ndarray) -> VectorANN:
    """The product's ANN index (LanceStore.create_vector_index) over a units table of ids + vectors."""
    dim = vecs.shape[1]
    table = pa.table({"id": pa.array(ids.tolist(), pa.string()),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), dim)})
    store = LanceStore(path)
    store.write({TEXT_UNITS: table})
    store.create_vector_index()
    return store.vector_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path, help="a built MONJYU index (e.g. of 2wiki)")
    ap.add_argument("--beir", type=Path, default=None, help="BEIR set whose queries to use")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--no-lancedb", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("LANCE_LOG", "error")  # lance warns on every search without _distance
    rng = np.random.default_rng(0)

    manifest = read_manifest(args.real_index)
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim)
    if args.beir:
        texts = list(BeirDataset.load(args.beir).queries.values())[: args.queries]
    else:
        texts = [" ".join(t.split()[:8]) for t in rng.choice(real.columns["text"], args.queries)]
    embedder = create_embedder(EmbeddingConfig())
    t0 = time.perf_counter()
    qvecs = embedder.embed_queries(texts)
    print(f"query embedding ({embedder.id}, batched): {(time.perf_counter() - t0) * 1000 / len(texts):.1f} ms/query "
          "(not in figures below)")

    results = {}
    exact_real = [np.argsort(-(real.vectors @ q))[:10] for q in qvecs]
    if not args.no_lancedb:
        results["real_vectors"] = lance_bench(real.vectors, qvecs, exact_real)
        print("real vectors", len(real), json.dumps({k: round(v, 3) for k, v in results["real_vectors"].items()}))

    analyzer = Analyzer()
    stemmer = Stemmer.Stemmer("english")
    for n in [int(s) for s in args.sizes.split(",")]:
        synth_texts, vecs = synthesize(real, n, rng)
        terms = [analyzer.terms(t) for t in synth_texts]
        cols = unit_columns(n)
        loaded = LoadedIndex(columns=cols, vectors=vecs, bm25=BM25Index.build(terms))
        searcher = Searcher(loaded, SearchConfig())
        single = Searcher(loaded, SearchConfig(feedback=False))  # one round, like the reference
        pairs = list(zip(texts, qvecs))

        # Reference: numpy exact + bm25s with its own tokenizer, fused in plain Python.
        ref_bm25 = bm25s.BM25()
        ref_bm25.index(bm25s.tokenize(synth_texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)

        def ref_vector(q):
            s = vecs @ q
            top = np.argpartition(-s, 100)[:100]
            return top[np.argsort(-s[top])]

        def ref_keyword(t):
            tok = bm25s.tokenize([t], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=True)
            if not tok.ids[0]:
                return []
            docs, _ = ref_bm25.retrieve(tok, k=100, show_progress=False, n_threads=1)
            return docs[0]

        def ref_hybrid(pair):
            return weighted_rrf([list(ref_vector(pair[1])), list(ref_keyword(pair[0]))], [0.5, 0.5], 60)[:10]

        figures = {
            "reference_vector": timed(lambda p: ref_vector(p[1]), pairs),
            "reference_keyword": timed(lambda p: ref_keyword(p[0]), pairs),
            "reference_hybrid": timed(ref_hybrid, pairs),
            "monjyu_vector": timed(lambda p: searcher.search(Query.of(p[0]), p[1], "vector", 10), pairs),
            "monjyu_keyword": timed(lambda p: searcher.search(Query.of(p[0]), p[1], "keyword", 10), pairs),
            "monjyu_hybrid": timed(lambda p: searcher.search(Query.of(p[0]), p[1], "hybrid", 10), pairs),
            "monjyu_hybrid_single_round": timed(lambda p: single.search(Query.of(p[0]), p[1], "hybrid", 10), pairs),
        }
        if n >= SearchConfig().ann_min_units:  # what a build of this size gets: the same searches through the ANN
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                loaded.ann = ann_index(Path(tmp), cols["id"], vecs)
                print(f"ANN index for {n} units built in {time.perf_counter() - t0:.1f} s")
                exact_top = [set(ref_vector(q)[:10].tolist()) for q in qvecs]
                ann_top = [[r for r, _ in searcher.vector.rank(q, 10, None)[0]] for q in qvecs]
                print(f"ANN recall@10 against exact search: {np.mean([len(e & set(a)) / 10 for e, a in zip(exact_top, ann_top)]):.3f}")
                figures |= {
                    "monjyu_ann_vector": timed(lambda p: searcher.search(Query.of(p[0]), p[1], "vector", 10), pairs),
                    "monjyu_ann_hybrid": timed(lambda p: searcher.search(Query.of(p[0]), p[1], "hybrid", 10), pairs),
                }
                loaded.ann = None
        row = {f"{k}_p50": pct(v, 50) for k, v in figures.items()} | {f"{k}_p95": pct(v, 95) for k, v in figures.items()}
        row["rss_mb_after_searches"] = rss_mb()  # the index in memory as a search process holds it (run one size per process)
        if "monjyu_ann_hybrid" in figures:
            row["ann_hybrid_p50_ratio_to_reference"] = row["monjyu_ann_hybrid_p50"] / row["reference_hybrid_p50"]
        row["hybrid_p50_ratio_to_reference"] = row["monjyu_hybrid_p50"] / row["reference_hybrid_p50"]
        row["hybrid_single_round_p50_ratio_to_reference"] = row["monjyu_hybrid_single_round_p50"] / row["reference_hybrid_p50"]
        if not args.no_lancedb:
            exact = [np.argsort(-(vecs @ q))[:10] for q in qvecs]
            row |= lance_bench(vecs, qvecs, exact)
        results[str(n)] = row
        print(f"\n== {n} text units (ms) ==")
        for k in sorted(row):
            print(f"  {k:45s} {row[k]:10.3f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
