"""How many co-occurrence links a collection's phrase graph has as it grows, and what
graph.max_links keeps: a real index's graph grown as bench/synthetic_graph.py says.

    python bench/graph_links.py --real-index IDX [--sizes 0,100000,1000000] [--phrase-model heaps]

Per size (0: the real collection): units, phrases, linkable phrases, every link (counted a slice
of phrases at a time, never held), the share shared by one unit only, link degrees, and the links
the builder keeps under graph.max_links with the bound per phrase it chose.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_graph  # noqa: E402

from monjyu.config import GraphConfig  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.index.level1 import _links_counted  # noqa: E402
from monjyu.retrieval import LoadedIndex  # noqa: E402


def every_link(incidence, linkable: np.ndarray) -> tuple[np.ndarray, int]:
    """Each linkable phrase's links and how many are shared by one unit, counted in row slices."""
    sub = incidence[:, linkable].tocsc()
    rows = sub.T.tocsr()
    n = sub.shape[1]
    degree, ones = np.zeros(n, np.int64), 0
    step = max(1, n // 40)
    for s in range(0, n, step):
        part = (rows[s:s + step] @ sub).tocoo()
        other = part.col != part.row + s
        degree[s:s + step] += np.bincount(part.row[other], minlength=min(step, n - s))
        ones += int(((part.data == 1) & (part.col > part.row + s)).sum())
    return degree, ones


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--sizes", default="0,100000,1000000")
    ap.add_argument("--phrase-model", default="heaps", choices=synthetic_graph.MODELS)
    args = ap.parse_args()
    manifest = read_manifest(args.real_index)
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim)
    graph, cfg = real.graph, GraphConfig()
    types = graph.types if graph.types is not None else np.array(["CONCEPT"] * len(graph.phrases), dtype=object)
    print("| units | phrases | linkable | links | shared by one unit | degree p50 / p99 / max | kept under max_links "
          f"{cfg.max_links:,} (per phrase) | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.sizes.split(",")):
        t0 = time.perf_counter()
        if n == 0:
            incidence = graph.incidence
        else:
            incidence = synthetic_graph.grow(graph.incidence, graph.phrases, graph.is_hub, types,
                                             real.columns["title"], n, np.random.default_rng(0), args.phrase_model,
                                             beta=0.846 if args.phrase_model == "heaps" else None).incidence
        incidence = (incidence > 0).astype(np.float32).tocsr()
        units = incidence.shape[0]
        df = np.asarray(incidence.sum(axis=0)).ravel().astype(np.int64)
        linkable = (df <= max(cfg.min_hub_units, int(cfg.max_phrase_share * units))) & (df >= 2)
        degree, ones = every_link(incidence, linkable)
        links = int(degree.sum()) // 2
        src, _, _, bound = _links_counted(incidence, linkable, cfg.min_edge_units, df, units, cfg.max_links)
        print(f"| {units:,} | {incidence.shape[1]:,} | {int(linkable.sum()):,} | {links:,} | {ones / max(links, 1):.3f} | "
              f"{np.percentile(degree, 50):.0f} / {np.percentile(degree, 99):.0f} / {degree.max()} | "
              f"{len(src):,} ({bound or 'all'}) | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
