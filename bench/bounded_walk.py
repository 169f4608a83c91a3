"""Bounded graph walks (search.walk_epsilon) against the exact walk over the whole graph, on the
real phrase graph of an index and on graphs grown from it to 100k and 1M units, in the same run.

    python bench/bounded_walk.py --real-index IDX --beir ../shared/bench-data/2wiki [--sizes 100000,1000000]

Synthetic units are grown by bench/synthetic_graph.py (--phrase-model: `heaps`, the
vocabulary growing as the real collection's does, or `union`, every phrase growing with the
collection). Each BEIR question seeds the walk as graph mode does (its phrases as
Searcher.phrase_seeds finds them, and the units of its 5 best real vector hits, through a
synthetic unit made from each, one of the first sub-collection where there is one). Printed
per size and epsilon: the walk's p50 / p95 time, how much of the exact walk's top 10 the bounded
walk's top 10 holds (mean over the questions), and the same counted by real unit (a synthetic
unit read as the real unit whose title and phrases it took: many synthetic units share them, so
the exact top 10 is partly a pick among near-ties).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import synthetic_graph  # noqa: E402
from level0_latency import pct  # noqa: E402

from monjyu import Monjyu  # noqa: E402
from monjyu.config import load_config  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from monjyu.retrieval.graph import PhraseGraph  # noqa: E402
from monjyu.query import Query  # noqa: E402


def grow(real: PhraseGraph, titles: np.ndarray, n: int, rng: np.random.Generator, model: str,
         beta: float | None) -> tuple[PhraseGraph, np.ndarray, dict[int, int]]:
    """A graph of n synthetic units, for each its first real unit (a), and for each real unit
    the synthetic unit that stands for it as a seed."""
    g = synthetic_graph.grow(real.incidence, real.phrases, real.is_hub, real.types, titles, n, rng, model, beta)
    graph = PhraseGraph(incidence=g.incidence, phrases=g.phrases, is_hub=g.is_hub, types=g.types)
    graph.link_titles(g.titles, load_config().search.graph_title_boost)
    stands_for: dict[int, int] = {}
    for row in np.concatenate([np.flatnonzero(g.home), np.flatnonzero(~g.home)]).tolist():
        stands_for.setdefault(int(g.first[row]), row)
    return graph, g.first, stands_for


def top10(scores: np.ndarray) -> set[int]:
    return set(np.argsort(-scores, kind="stable")[:10].tolist())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--epsilons", default="1e-6,1e-5")
    ap.add_argument("--queries", type=int, default=101)
    ap.add_argument("--phrase-model", default="heaps", choices=synthetic_graph.MODELS)
    ap.add_argument("--beta", type=float, default=None, help="Heaps' exponent (default: measured on the real graph)")
    args = ap.parse_args()
    m = Monjyu(args.real_index)
    manifest, searcher = m.workspace.current().manifest, m.workspace.current().searcher
    real = searcher.index.graph
    damping = m.config.search.graph_damping
    queries = list(BeirDataset.load(args.beir).queries.values())[:args.queries]
    seeds = []
    for q in queries:
        asked = Query.of(q)
        vector = m.workspace.current().embed_query(asked)
        dense, _ = searcher.vector.rank(vector, 5, None)
        seeds.append((searcher.graph.seeds(asked), [row for row, _ in dense]))
    epsilons = [float(e) for e in args.epsilons.split(",")]
    rng = np.random.default_rng(7)
    beta = synthetic_graph.exponent_for(args.phrase_model, args.beta, real.incidence, real.is_hub, rng)
    sizes = [0] + [int(s) for s in args.sizes.split(",") if s]
    for n in sizes:
        t0 = time.perf_counter()
        if n:
            graph, first_of, synthetic_of = grow(real, searcher.index.columns["title"], n, rng, args.phrase_model, beta)
        else:
            graph, synthetic_of, first_of = real, None, np.arange(real.incidence.shape[0])
        grown_s = time.perf_counter() - t0
        runs = {}
        for eps in [0.0] + epsilons:
            times, tops = [], []
            for phrase_seeds, dense in seeds:
                rows = dense if synthetic_of is None else [synthetic_of[r] for r in dense if r in synthetic_of]
                scale = sum(phrase_seeds.values()) or 1.0
                unit_seeds = {row: scale / rank for rank, row in enumerate(rows, start=1)}
                t = time.perf_counter()
                scores = graph.personalized_pagerank(phrase_seeds, unit_seeds, damping=damping, epsilon=eps)
                times.append((time.perf_counter() - t) * 1000)
                tops.append(top10(scores))
            runs[eps] = (times, tops)
        exact = runs[0.0][1]
        label = f"{graph.incidence.shape[0]:,} units, {graph.incidence.nnz:,} links, {len(graph.phrases):,} phrases" + (f" (grown in {grown_s:.0f} s)" if n else "")
        print(label)
        for eps, (times, tops) in runs.items():
            overlap = np.mean([len(a & b) / 10 for a, b in zip(tops, exact)])
            real_units = [({int(first_of[r]) for r in a}, {int(first_of[r]) for r in b}) for a, b in zip(tops, exact)]
            by_real = np.mean([len(a & b) / len(b) for a, b in real_units])
            print(f"  epsilon {eps:g}: walk p50 {pct(times, 50):.1f} ms, p95 {pct(times, 95):.1f} ms; "
                  f"top-10 overlap with the exact walk {overlap:.3f}, by real unit {by_real:.3f}", flush=True)


if __name__ == "__main__":
    main()
