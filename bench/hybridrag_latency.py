"""HybridRAG latency without an LLM (classification, BM25 + vector + graph, RRF, reranking, CRAG)
on the real index and on synthetic 10k / 100k text-unit indexes grown from it; with
--epsilons, the same with bounded graph walks (search.walk_epsilon) and how much of the exact
walks' top 10 each mode keeps (graph, hybrid, hybridrag).

    python bench/hybridrag_latency.py --real-index /tmp/evalidx/2wiki --beir ../shared/bench-data/2wiki \
        [--sizes 1000000] [--epsilons 1e-7] [--phrase-model heaps|union]

Synthetic unit i mixes two real units a and b: its vector is a normalised blend of theirs, its
text is resampled from real text, its phrases are the union of theirs grown as
bench/synthetic_graph.py's --phrase-model says, its title is a's and it sits in a's communities; from
search.ann_min_units units on, unfiltered vector searches go through the ANN index as in a real
build of that size. Query vectors are
the real BEIR questions' embeddings, computed once and passed in (query embedding is timed
separately). The local reranker and CRAG grader embed sentences: the first pass sees every
sentence for the first time (cold embedding cache), the second pass hits the cache (warm).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import synthetic_graph  # noqa: E402
from level0_latency import ann_index, pct, synthesize, unit_columns  # noqa: E402

from monjyu.config import load_config  # noqa: E402
from monjyu.embed import CachedEmbedder, EmbeddingCache, create_embedder  # noqa: E402
from monjyu.engines.answer import AnswerEngine  # noqa: E402
from monjyu.engines.hybrid.engine import HybridRAGEngine  # noqa: E402
from monjyu.engines.hybrid.rerank import create_reranker  # noqa: E402
from monjyu.engines.relevance import LocalRelevanceScorer  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from monjyu.query import Query  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.nlp import Analyzer  # noqa: E402
from monjyu.nlp.tokens import TokenCounter  # noqa: E402
from monjyu.retrieval import LoadedIndex, Searcher  # noqa: E402
from monjyu.retrieval.communities import CommunityIndex  # noqa: E402
from monjyu.retrieval.graph import PhraseGraph  # noqa: E402
from monjyu.store.bm25 import BM25Index  # noqa: E402

# The sentences a build stores with each unit (its chunker's cut), here a quick cut of the
# synthetic text: without them every search would split its candidates with pysbd on the spot.
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")

VARIANTS = {  # name -> asearch keyword arguments
    "default (rerank)": {},
    "no rerank": {"rerank": False},
    "rerank + crag": {"crag": True},
}


def grow(real: LoadedIndex, n: int, rng: np.random.Generator, analyzer: Analyzer, model: str,
         beta: float | None) -> LoadedIndex:
    """A synthetic index of n units built from the real one (see the module docstring)."""
    texts, vecs = synthesize(real, n, rng)
    g = real.graph
    grown = synthetic_graph.grow(g.incidence, g.phrases, g.is_hub, g.types, real.columns["title"], n, rng, model, beta)
    a = grown.first
    cols = unit_columns(n, text=np.array(texts, dtype=object), title=np.array(grown.titles, dtype=object),
                        end_char=np.array([len(t) for t in texts], dtype=object))
    graph = PhraseGraph(incidence=grown.incidence, phrases=grown.phrases, is_hub=grown.is_hub, types=grown.types)
    graph.link_titles(cols["title"].tolist(), load_config().search.graph_title_boost, cols["text"])
    rows_of_real = {}
    for synth_row, real_row in enumerate(a.tolist()):
        rows_of_real.setdefault(real_row, []).append(synth_row)
    communities = []
    for c in real.communities.by_id.values():
        rows = sorted(r for real_row in c.unit_rows.tolist() for r in rows_of_real.get(real_row, []))
        communities.append(type(c)(id=c.id, level=c.level, parent=c.parent, children=c.children, title=c.title,
                                   unit_rows=np.array(rows, dtype=np.int64), size=c.size))
    bm25 = BM25Index.build([analyzer.terms(t) for t in texts])
    ann = None
    if n >= load_config().search.ann_min_units:  # what a build of this size gets
        ann = ann_index(Path(tempfile.mkdtemp(prefix="hybridrag-bench-")), cols["id"], vecs)
    spans = [[(m.start(), m.end()) for m in _SENTENCE.finditer(t)] for t in texts]
    offsets = np.concatenate([[0], np.cumsum([2 * len(x) for x in spans])]).astype(np.int64)
    return LoadedIndex(columns=cols, vectors=vecs, bm25=bm25, graph=graph, communities=CommunityIndex(communities),
                       ann=ann, named_entities=real.named_entities, sentence_offsets=offsets,
                       sentence_values=np.array([v for x in spans for pair in x for v in pair], dtype=np.int64))


def engine_for(index: LoadedIndex, cache_path: Path, epsilon: float = 0.0) -> HybridRAGEngine:
    config = load_config()
    config.search = config.search.model_copy(update={"walk_epsilon": epsilon})
    embedder = create_embedder(config.embedding)
    scorer = LocalRelevanceScorer(CachedEmbedder(embedder, EmbeddingCache(cache_path)).embed_passages)
    answers = AnswerEngine(config.answer, None, scorer, TokenCounter().count)
    searcher = Searcher(index, config.search)
    # Queries come with their vectors; CRAG's rewritten query is embedded for real (and timed).
    return HybridRAGEngine(config.hybrid, config.rerank, config.search, searcher,
                           lambda q: embedder.embed_queries([q.text])[0], answers,
                           create_reranker(config.rerank, scorer))


def run(engine: HybridRAGEngine, queries: list[str], qvecs: np.ndarray, kwargs: dict,
        tops: list[list[int]] | None = None) -> dict:
    """p50 / p95 of the whole search and each stage's p50; the top 10 rows per query into `tops`."""
    totals, stages = [], {}
    for q, v in zip(queries, qvecs):
        t0 = time.perf_counter()
        r = asyncio.run(engine.asearch(Query.of(q), top_k=10, answer=False, query_vector=v, **kwargs))
        totals.append((time.perf_counter() - t0) * 1000)
        for k, ms in r.timings_ms.items():
            stages.setdefault(k, []).append(ms)
        if tops is not None:
            tops.append([engine.searcher.row_of(item.hit.text_unit_id) for item in r.items])
    return {"p50": pct(totals, 50), "p95": pct(totals, 95)} | {f"{k}_p50": pct(v, 50) for k, v in stages.items()}


def run_mode(searcher: Searcher, mode: str, queries: list[str], qvecs: np.ndarray,
             tops: list[list[int]]) -> dict:
    """Searcher.search in graph or hybrid mode (the default), timed, its top 10 rows into `tops`."""
    times = []
    for q, v in zip(queries, qvecs):
        t0 = time.perf_counter()
        r = searcher.search(Query.of(q), v, mode, 10)
        times.append((time.perf_counter() - t0) * 1000)
        tops.append([searcher.row_of(h.text_unit_id) for h in r.hits])
    return {"p50": pct(times, 50), "p95": pct(times, 95)}


def overlap(tops: list[list[int]], exact: list[list[int]]) -> float:
    """Mean share of the exact walk's top 10 that the bounded walk's top 10 holds."""
    return float(np.mean([len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(tops, exact)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path, help="a built MONJYU index with Level 1 (e.g. of 2wiki)")
    ap.add_argument("--beir", required=True, type=Path, help="BEIR set whose queries to use")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--epsilons", default="", help="bounded walks to compare with the exact one, e.g. 1e-7,1e-6")
    ap.add_argument("--phrase-model", default="heaps", choices=synthetic_graph.MODELS)
    ap.add_argument("--beta", type=float, default=None, help="Heaps' exponent (default: measured on the real graph)")
    args = ap.parse_args()
    os.environ.setdefault("LANCE_LOG", "error")
    rng = np.random.default_rng(0)
    manifest = read_manifest(args.real_index)
    config = load_config()
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim,
                            config.search.graph_title_boost, manifest.named_entities)
    if real.graph is None or real.communities is None:
        sys.exit(f"{args.real_index} has no Level 1 graph: build it with `monjyu index` (not --level 0)")
    queries = list(BeirDataset.load(args.beir).queries.values())[: args.queries]
    embedder = create_embedder(config.embedding)
    t0 = time.perf_counter()
    qvecs = embedder.embed_queries(queries)
    print(f"query embedding ({embedder.id}, batched): {(time.perf_counter() - t0) * 1000 / len(queries):.1f} ms/query")

    analyzer = Analyzer()
    beta = synthetic_graph.exponent_for(args.phrase_model, args.beta, real.graph.incidence, real.graph.is_hub,
                                        np.random.default_rng(7))
    epsilons = [0.0] + [float(e) for e in args.epsilons.split(",") if e]
    sizes = [0] + [int(s) for s in args.sizes.split(",") if s]
    results = {}
    for n in sizes:
        index, name = real, f"real ({len(real)})"
        if n:
            t0 = time.perf_counter()
            index, name = grow(real, n, rng, analyzer, args.phrase_model, beta), str(n)
            print(f"synthetic {n}: built in {time.perf_counter() - t0:.1f} s ({index.graph.incidence.nnz:,} links, "
                  f"{len(index.graph.phrases):,} phrases)")
        exact: dict[str, list[list[int]]] = {}
        for eps in epsilons:
            label = name if eps == 0 else f"{name}, walk_epsilon {eps:g}"
            row = {}
            with tempfile.TemporaryDirectory() as tmp:
                engine = engine_for(index, Path(tmp) / "embeddings.sqlite", eps)
                tops: dict[str, list[list[int]]] = {m: [] for m in ("graph", "hybrid", "hybridrag")}
                for mode in ("graph", "hybrid"):
                    row[f"{mode} mode"] = run_mode(engine.searcher, mode, queries, qvecs, tops[mode])
                for variant, kwargs in VARIANTS.items():
                    for cache in ("cold", "warm"):  # the first pass fills the sentence-embedding cache
                        first = (variant, cache) == ("default (rerank)", "cold")
                        if eps == 0 and len(epsilons) > 1 and not first:
                            continue  # the exact walks' reference: what the overlap needs, with its time
                        row[f"{variant}, {cache}"] = run(engine, queries, qvecs, kwargs, tops["hybridrag"] if first else None)
                        if variant == "no rerank":  # nothing is embedded: one pass says it all
                            break
            results[label] = row
            print(f"\n== {label} text units, {len(queries)} queries (ms) ==")
            for variant, fig in row.items():
                stages = " ".join(f"{k[:-7]} {v:.1f}" for k, v in fig.items() if k.endswith("_ms_p50"))
                print(f"  {variant:26s} p50 {fig['p50']:8.1f}  p95 {fig['p95']:8.1f}   stage p50: {stages}")
            if eps == 0:
                exact = tops
            else:
                shared = {m: overlap(tops[m], exact[m]) for m in tops}
                row["top10_overlap"] = shared
                print("  top-10 overlap with the exact walks: " + ", ".join(f"{m} {v:.3f}" for m, v in shared.items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
