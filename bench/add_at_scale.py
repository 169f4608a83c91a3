"""Adding one paper to a large index and removing it again, through the real builder: the time
of each stage, and the peak memory of the first build.

    python bench/add_at_scale.py --real-index IDX --paper PAPER [--units 100000] [--work DIR] [--phrase-model heaps]

N synthetic units (JSONL records, 100k a file) are indexed first, their passage and sentence
vectors and their noun phrases pre-seeded in the caches, so that the builder's own work is
measured, not the embedder's or spaCy's: a unit's vector blends two real units' vectors
(bench/build_memory.py does the same) and its phrases are the union of two real units' phrases,
grown as bench/synthetic_graph.py's --phrase-model says (`heaps`: the vocabulary grows as the
real collection's does; `union`: every phrase grows with the collection, the densest graph), and a phrase's vector is its real phrase's (embedded
for real once; a copy "frank lloyd x3" shares the vector of "frank lloyd"). Then PAPER (a real file: embedded and parsed for real) is added in a build of its own, and
removed in another. --work DIR keeps the corpus, caches and index: run again after
an interruption, the first build resumes from the caches (and skips when the index is complete).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_graph  # noqa: E402
from level0_latency import rss_mb, synthesize  # noqa: E402

from monjyu import Monjyu, MonjyuConfig  # noqa: E402
from monjyu.config import EmbeddingConfig  # noqa: E402
from monjyu.embed import EmbeddingCache, create_embedder  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.index.level1 import PhraseCache, phrase_input  # noqa: E402
from monjyu.ingest import Chunker, load_file  # noqa: E402
from monjyu.ingest.sentences import statement_spans  # noqa: E402
from monjyu.nlp.noun_phrases import extraction_id  # noqa: E402
from monjyu.retrieval import LoadedIndex  # noqa: E402
from monjyu.kv import SqliteKV  # noqa: E402


PART = 100_000  # records per corpus file: a file stays under ingest.max_file_mb


def seed(real_index: Path, units: int, work: Path, model: str) -> Path:
    """The synthetic corpus (work/corpus/synthetic-*.jsonl, PART records a file) with its vectors
    and phrases cached."""
    corpus = work / "corpus"
    if any(corpus.glob("synthetic*.jsonl")):
        return corpus
    manifest = read_manifest(real_index)
    real = LoadedIndex.load(generation_dir(real_index, manifest.generation), manifest.embedder_dim)
    rng = np.random.default_rng(0)
    texts, vectors = synthesize(real, units, rng)
    graph, config = real.graph, MonjyuConfig()
    types = graph.types if graph.types is not None else np.array(["CONCEPT"] * len(graph.phrases), dtype=object)
    grown = synthetic_graph.grow(graph.incidence, graph.phrases, graph.is_hub, types, real.columns["title"], units,
                                 rng, model)
    incidence = grown.incidence
    seeding = work / "seeding"  # the files move into the corpus folder once their caches are complete
    shutil.rmtree(seeding, ignore_errors=True)
    seeding.mkdir(parents=True)
    embedder_id = create_embedder(EmbeddingConfig()).id
    vectors_cache = EmbeddingCache(work / "cache" / "embeddings.sqlite")
    phrases = PhraseCache(SqliteKV(work / "cache" / "phrases.sqlite", "phrases"))
    chunker = Chunker(config.chunking)
    for first in range(0, units, PART):
        part = seeding / f"synthetic-{first // PART:03d}.jsonl"
        with part.open("w", encoding="utf-8") as fh:
            for i in range(first, min(first + PART, units)):
                fh.write(json.dumps({"_id": f"s{i}", "title": "", "text": texts[i]}) + "\n")
        docs = load_file(part, part.name, config.ingest)
        by_doc = {d.id: first + j for j, d in enumerate(docs)}
        items, phrase_items = [], []
        for d in docs:
            for u in chunker.chunk(d):
                i = by_doc[u.document_id]
                v = vectors[i]
                items.append((EmbeddingCache.key(embedder_id, "passage", u.embedding_text), v))
                items += [(EmbeddingCache.key(embedder_id, "passage", u.text[a:b]), v)
                          for a, b in statement_spans(u.text, u.sentences or None)]
                cols = incidence.indices[incidence.indptr[i]:incidence.indptr[i + 1]]
                record = {grown.phrases[c]: str(grown.types[c]) for c in cols.tolist()}
                phrase_items.append((PhraseCache.key(phrase_input(u.title, u.text), extraction_id(False)),
                                     json.dumps(record, ensure_ascii=False).encode()))
            if len(items) > 50_000:
                vectors_cache.put_many(items)
                phrases._kv.put_many(phrase_items)
                items, phrase_items = [], []
        vectors_cache.put_many(items)
        phrases._kv.put_many(phrase_items)
        print(f"  seeded {min(first + PART, units):,} units", flush=True)
    seed_phrase_vectors(vectors_cache, embedder_id, graph.phrases, grown)
    corpus.mkdir(parents=True, exist_ok=True)
    for part in sorted(seeding.glob("synthetic*.jsonl")):
        os.replace(part, corpus / part.name)
    return corpus


def seed_phrase_vectors(cache: EmbeddingCache, embedder_id: str, real_phrases: list[str], grown) -> None:
    """Every grown phrase found in two units or more (what the build embeds) cached with the vector
    of its real phrase, those embedded for real first."""
    from monjyu.embed.cache import CachedEmbedder

    real_vectors = CachedEmbedder(create_embedder(EmbeddingConfig()), cache).embed_passages(list(real_phrases))
    df = np.bincount(grown.incidence.indices, minlength=len(grown.phrases))
    todo = np.flatnonzero(df >= 2)
    for s in range(0, len(todo), 50_000):
        part = todo[s:s + 50_000].tolist()
        cache.put_many([(EmbeddingCache.key(embedder_id, "passage", grown.phrases[p]), real_vectors[grown.base[p]])
                        for p in part])


def build(corpus_dir: str, index: str, cache: str, out: str) -> None:
    """One build in this (child) process: its report, and peak RSS per stage."""
    stage, peaks, done = ["start"], {}, threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            peaks[stage[0]] = max(peaks.get(stage[0], 0.0), rss_mb())

    def progress(name: str, advance: int, total: int | None) -> None:
        if total is not None:
            stage[0] = name

    threading.Thread(target=sample, daemon=True).start()
    t0 = time.perf_counter()
    report = Monjyu(Path(index), MonjyuConfig(cache_dir=cache)).index([Path(corpus_dir)], progress=progress)
    done.set()
    Path(out).write_text(json.dumps({"seconds": report.seconds, "units": report.text_units, "peaks": peaks,
                                     "added": len(report.added), "removed": len(report.removed),
                                     "clustering": report.clustering, "wall": time.perf_counter() - t0}))


def timed_build(work: Path, name: str) -> dict:
    out = work / f"{name}.json"
    child = mp.get_context("spawn").Process(target=build, args=(str(work / "corpus"), str(work / "index"),
                                                                str(work / "cache"), str(out)))
    child.start()
    child.join()
    if child.exitcode != 0:
        sys.exit(f"the {name} build failed (exit {child.exitcode})")
    result = json.loads(out.read_text())
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # largest child so far
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--paper", required=True, type=Path)
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=Path(".monjyu-eval") / "add-at-scale")
    ap.add_argument("--phrase-model", default="heaps", choices=synthetic_graph.MODELS)
    ap.add_argument("--seed-only", action="store_true", help="prepare the corpus and caches, build nothing")
    args = ap.parse_args()
    os.environ.pop("MONJYU_CACHE_DIR", None)  # the environment would beat cache_dir: the caches must be these
    work = args.work / (str(args.units) if args.phrase_model == "union" else f"{args.units}-{args.phrase_model}")
    t0 = time.perf_counter()
    seed(args.real_index, args.units, work, args.phrase_model)
    print(f"corpus and caches of {args.units} units ready in {time.perf_counter() - t0:.0f} s", flush=True)
    if args.seed_only:
        return
    added = work / "corpus" / args.paper.name
    added.unlink(missing_ok=True)
    runs = {"first build": timed_build(work, "first")}
    shutil.copy(args.paper, added)
    runs["add one paper"] = timed_build(work, "add")
    added.unlink()
    runs["remove it"] = timed_build(work, "remove")
    for name, r in runs.items():
        print(f"\n{name}: {r['wall']:.1f} s, {r['units']} units ({r['added']} files added, {r['removed']} removed), "
              f"communities {r['clustering'].get('mode')} (drift {r['clustering'].get('drift')})")
        print("  stages (s):", json.dumps({k: round(v, 1) for k, v in r["seconds"].items()}))
        print("  peak RSS per stage (MB):", json.dumps({k: round(v) for k, v in r["peaks"].items()}))
    print(f"\npeak RSS of the largest build process: {runs['first build']['peak_rss_mb']:,.0f} MB")


if __name__ == "__main__":
    main()
