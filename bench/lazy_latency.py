"""Lazy search latency without an LLM (preset z100 by default, answer=False: matching, community
visits, local relevance tests, bridges), on the real index and on synthetic indexes grown from it
as bench/hybridrag_latency.py grows them, with the bounded graph walks against the exact ones in
the same run.

    python bench/lazy_latency.py --real-index IDX --beir ../shared/bench-data/2wiki --sizes 1000000

Questions come with their vectors (query embedding is timed apart, once). The local relevance
test embeds each sentence the first time it sees it; a real index embedded every sentence when it
was built (the build's cache), so each question is asked twice and the second pass is the one a
built index gives ("warm"); the first ("cold") also pays for embedding the synthetic sentences.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import synthetic_graph  # noqa: E402
from hybridrag_latency import grow, overlap  # noqa: E402
from level0_latency import pct  # noqa: E402

from monjyu.config import load_config  # noqa: E402
from monjyu.embed import CachedEmbedder, EmbeddingCache, create_embedder  # noqa: E402
from monjyu.engines.answer import AnswerEngine  # noqa: E402
from monjyu.engines.lazy import LazySearchEngine  # noqa: E402
from monjyu.engines.request import SearchRequest  # noqa: E402
from monjyu.engines.relevance import LocalRelevanceScorer  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.nlp import Analyzer  # noqa: E402
from monjyu.nlp.tokens import TokenCounter  # noqa: E402
from monjyu.query import Query  # noqa: E402
from monjyu.retrieval import LoadedIndex, Searcher  # noqa: E402


def run(index: LoadedIndex, queries: list[str], qvecs: np.ndarray, preset: str, epsilon: float,
        cache: Path) -> dict[str, dict]:
    """Each question twice (cold, warm): p50 / p95 in ms, and the units each pass kept."""
    config = load_config()
    config.search = config.search.model_copy(update={"walk_epsilon": epsilon})
    lazy = config.lazy.model_copy(update={"preset": preset})
    embedder = create_embedder(config.embedding)
    scorer = LocalRelevanceScorer(CachedEmbedder(embedder, EmbeddingCache(cache)).embed_passages)
    vectors = dict(zip(queries, qvecs))

    def embed_query(query: Query) -> np.ndarray:  # the questions' vectors given, any other text embedded
        return vectors[query.text] if query.text in vectors else embedder.embed_queries([query.text])[0]

    answers = AnswerEngine(config.answer, None, scorer, TokenCounter().count)
    engine = LazySearchEngine(lazy, Searcher(index, config.search), embed_query, answers,
                              min_sentence_score=config.answer.min_sentence_score)
    out = {}
    for name in ("cold", "warm"):
        times, kept = [], []
        for q in queries:
            t0 = time.perf_counter()
            r = asyncio.run(engine.run(Query.of(q), SearchRequest(mode="lazy", top_k=10, answer=False)))
            times.append((time.perf_counter() - t0) * 1000)
            kept.append([h.text_unit_id for h in r.hits])
        out[name] = {"p50": pct(times, 50), "p95": pct(times, 95), "kept": kept}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--preset", default="z100")
    ap.add_argument("--epsilon", type=float, default=None, help="bounded walks (default: search.walk_epsilon)")
    ap.add_argument("--phrase-model", default="heaps", choices=synthetic_graph.MODELS)
    ap.add_argument("--beta", type=float, default=None, help="Heaps' exponent (default: measured on the real graph)")
    args = ap.parse_args()
    os.environ.setdefault("LANCE_LOG", "error")
    config = load_config()
    epsilon = config.search.walk_epsilon if args.epsilon is None else args.epsilon
    manifest = read_manifest(args.real_index)
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim,
                            config.search.graph_title_boost, manifest.named_entities)
    queries = list(BeirDataset.load(args.beir).queries.values())[:args.queries]
    embedder = create_embedder(config.embedding)
    t0 = time.perf_counter()
    qvecs = embedder.embed_queries(queries)
    print(f"query embedding ({embedder.id}, batched): {(time.perf_counter() - t0) * 1000 / len(queries):.1f} ms/query")
    beta = synthetic_graph.exponent_for(args.phrase_model, args.beta, real.graph.incidence, real.graph.is_hub,
                                        np.random.default_rng(7))
    rng = np.random.default_rng(0)
    for n in [0] + [int(s) for s in args.sizes.split(",") if s]:
        index, name = real, f"real ({len(real)})"
        if n:
            t0 = time.perf_counter()
            index, name = grow(real, n, rng, Analyzer(), args.phrase_model, beta), f"{n:,}"
            print(f"synthetic {n:,}: built in {time.perf_counter() - t0:.1f} s")
        with tempfile.TemporaryDirectory() as tmp:
            runs = {eps: run(index, queries, qvecs, args.preset, eps, Path(tmp) / f"embeddings-{eps:g}.sqlite")
                    for eps in (0.0, epsilon)}
        print(f"== {name} text units, lazy {args.preset}, {len(queries)} questions, no LLM (ms) ==")
        for eps, passes in runs.items():
            print(f"  walks {'exact' if eps == 0 else f'bounded ({eps:g})'}: " +
                  "; ".join(f"{k} p50 {v['p50']:.0f} p95 {v['p95']:.0f}" for k, v in passes.items()), flush=True)
        same = overlap(runs[epsilon]["warm"]["kept"], runs[0.0]["warm"]["kept"])
        print(f"  top 10 kept units, bounded against exact walks: overlap {same:.3f}")


if __name__ == "__main__":
    main()
