"""Peak memory (RSS) and stage times of a whole build (Level 0 + Level 1) of N synthetic units
through the real builder, with their passage and sentence vectors pre-seeded in the embedding
cache (the embedder's speed is bench/embedders.py's business; this measures everything else).

    python bench/build_memory.py --real-index .monjyu-eval/2wiki-5d412359 --units 100000

Each synthetic document is one unit-sized run of words resampled from the real index's texts;
its vector (and its sentences' vectors) are blends of real unit vectors, written into the
cache under the keys the builder looks up. Phrase vectors are computed for real. The build runs
in a child process so its peak RSS is its own (read from the kernel when it exits).
"""

from __future__ import annotations

import argparse
import os
import json
import multiprocessing as mp
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from level0_latency import rss_mb, synthesize  # noqa: E402

from monjyu import Monjyu, MonjyuConfig  # noqa: E402
from monjyu.embed import EmbeddingCache, create_embedder  # noqa: E402
from monjyu.config import EmbeddingConfig  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.ingest import Chunker, load_file  # noqa: E402
from monjyu.ingest.sentences import statement_spans  # noqa: E402
from monjyu.retrieval import LoadedIndex  # noqa: E402


def build(corpus: str, index: str, cache: str, out: str) -> None:
    """The build, with this process's RSS sampled every 0.2 s and its peak kept per stage (the
    stage started last)."""
    stage, peaks, done = ["start"], {}, threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peaks[stage[0]] = max(peaks.get(stage[0], 0.0), rss_mb())

    def progress(name: str, advance: int, total: int | None) -> None:
        if total is not None:  # a stage starts; the noun phrases' advances go on beside later stages
            stage[0] = name

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    report = Monjyu(Path(index), MonjyuConfig(cache_dir=cache)).index([Path(corpus)], progress=progress)
    done.set()
    sampler.join()
    Path(out).write_text(json.dumps({"seconds": report.seconds, "units": report.text_units, "peaks": peaks,
                                     "embedded": report.embedded, "wall": time.perf_counter() - t0}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--units", type=int, default=100_000)
    args = ap.parse_args()
    os.environ.pop("MONJYU_CACHE_DIR", None)  # the environment would beat cache_dir: the caches must be these
    manifest = read_manifest(args.real_index)
    real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim)
    rng = np.random.default_rng(0)
    texts, vectors = synthesize(real, args.units, rng)
    embedder_id = create_embedder(EmbeddingConfig()).id
    config = MonjyuConfig()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus = tmp / "corpus.jsonl"  # one record per unit-sized document
        with corpus.open("w", encoding="utf-8") as fh:
            for i, text in enumerate(texts):
                fh.write(json.dumps({"_id": f"s{i}", "title": "", "text": text}) + "\n")
        # Pre-seed: the units the builder will cut, their vectors, and their sentences' vectors.
        t0 = time.perf_counter()
        cache = EmbeddingCache(tmp / "cache" / "embeddings.sqlite")
        chunker = Chunker(config.chunking)
        docs = load_file(corpus, "corpus.jsonl", config.ingest)
        units = [u for d in docs for u in chunker.chunk(d)]
        by_doc = {d.id: i for i, d in enumerate(docs)}
        items = []
        for u in units:
            v = vectors[by_doc[u.document_id] % len(vectors)]
            items.append((EmbeddingCache.key(embedder_id, "passage", u.embedding_text), v))
            for a, b in statement_spans(u.text, u.sentences or None):
                items.append((EmbeddingCache.key(embedder_id, "passage", u.text[a:b]), v))
            if len(items) > 50_000:
                cache.put_many(items)
                items = []
        cache.put_many(items)
        cache.close()
        print(f"{len(units)} units from {len(docs)} records; vectors seeded in {time.perf_counter() - t0:.0f} s",
              flush=True)
        del docs, units, texts, vectors, real

        ctx = mp.get_context("spawn")
        child = ctx.Process(target=build, args=(str(corpus), str(tmp / "index"), str(tmp / "cache"),
                                                str(tmp / "report.json")))
        child.start()
        child.join()
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        result = json.loads((tmp / "report.json").read_text())
    print(f"build of {result['units']} units ({result['embedded']} embedded now): {result['wall']:.0f} s, "
          f"peak RSS of the largest build process {peak_mb:,.0f} MB")
    print("stages (s):", {k: round(v, 1) for k, v in result["seconds"].items()})
    print("peak RSS per stage (MB, the stage started last):",
          {k: round(v) for k, v in result["peaks"].items()})


if __name__ == "__main__":
    main()
