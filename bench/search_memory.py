"""Resident memory of a search process over a large Level 0 index (1M text units), and its
hybrid search latency, measured in a fresh process that opens the index as `monjyu search` does.

    python bench/search_memory.py --real-index .monjyu-eval/2wiki-5d412359 --units 1000000 [--keep DIR]

The index is written directly (not through the builder, whose loading and chunking of a million
records alone takes about an hour here): synthetic units as bench/level0_latency.py grows them
(sentences resampled from the real index's texts, vectors blended from its real unit vectors),
their BM25 index, and the ANN index a build of that size gets, under a manifest for today's
embedder and configuration. A child process then opens it with `Monjyu(index)`, runs hybrid
searches (the query embedded by the real embedder, no answer) and reports its RSS after them,
then after filtered searches, which read every unit's vector (exact search), and its peak
(VmHWM). Sentence vectors are not pre-seeded (3M of them would fill gigabytes of cache): the
evidence rerank embeds the candidates' sentences on first use, so the searches run
twice and the second pass is timed (query embedding included), as on a built index whose
sentence vectors are all cached. RSS is given with its anonymous part (what the process holds)
and its mapped files (the unit vectors, BM25 matrices, dictionaries: shared with every process
that maps them). Writing 1M units takes about 45 minutes: --keep writes the index to DIR once
and reuses it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from level0_latency import synthesize  # noqa: E402

from monjyu import Monjyu, MonjyuConfig, SearchFilters  # noqa: E402
from monjyu.embed import create_embedder  # noqa: E402
from monjyu.eval import BeirDataset  # noqa: E402
from monjyu.index import read_manifest  # noqa: E402
from monjyu.index.builder import generation_dir  # noqa: E402
from monjyu.index.manifest import Manifest, write_manifest  # noqa: E402
from monjyu.ingest.sentences import statement_spans  # noqa: E402
from monjyu.nlp import Analyzer  # noqa: E402
from monjyu.nlp.tokens import TokenCounter  # noqa: E402
from monjyu.retrieval import LoadedIndex  # noqa: E402
from monjyu.store import LanceStore  # noqa: E402
from monjyu.store.bm25 import BM25Index  # noqa: E402
from monjyu.store.unit_vectors import save_unit_vectors  # noqa: E402
from monjyu.store.lancedb_store import DOCUMENTS, TEXT_UNITS, documents_to_table, units_to_table  # noqa: E402
from monjyu.types import Document, TextUnit  # noqa: E402

BATCH = 100_000


def status(field: str) -> float:
    """A /proc/self/status memory field (VmRSS, VmHWM) in MB."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024


def write_index(index: Path, real: LoadedIndex, n: int, config: MonjyuConfig) -> None:
    rng = np.random.default_rng(0)
    analyzer = Analyzer()
    gen = generation_dir(index, "g000001")
    gen.mkdir(parents=True)
    units_tables, docs_tables, terms_all = [], [], []
    for start in range(0, n, BATCH):
        texts, vectors = synthesize(real, min(BATCH, n - start), rng)
        units, docs, terms = [], [], []
        for i, text in enumerate(texts, start=start):
            units.append(TextUnit(id=f"u{i}", document_id=f"d{i}", chunk_index=0, text=text, start_char=0,
                                  end_char=len(text), n_tokens=80, source_path=f"d{i}.txt", file_type="txt",
                                  sentences=statement_spans(text)))
            docs.append(Document(id=f"d{i}", title="", text=text, source_path=f"d{i}.txt", file_type="txt"))
            terms.append(analyzer.terms(text))
        units_tables.append(units_to_table(units, terms, vectors, vectors.shape[1]))
        docs_tables.append(documents_to_table(docs, {u.document_id: [u.id] for u in units}))
        terms_all.extend(terms)
        print(f"  {start + len(texts):,} units made", flush=True)
    store = LanceStore(gen / "lancedb")
    units_table = pa.concat_tables(units_tables)
    store.write({DOCUMENTS: pa.concat_tables(docs_tables), TEXT_UNITS: units_table})
    save_unit_vectors(gen, units_table["vector"], units_table.schema.field("vector").type.list_size)
    del units_tables, docs_tables, units_table
    t0 = time.perf_counter()
    store.create_vector_index()
    print(f"  ANN index built in {time.perf_counter() - t0:.0f} s", flush=True)
    BM25Index.build(terms_all).save(gen / "bm25")
    embedder = create_embedder(config.embedding)
    write_manifest(index, Manifest(
        generation="g000001", embedder_id=embedder.id, embedder_dim=embedder.dim, config_hash=config.index_hash(),
        token_counter=TokenCounter.name, counts={"documents": n, "text_units": n}, levels=[0],
        named_entities=config.graph.named_entities, built_at=datetime.now(timezone.utc).isoformat(timespec="seconds")))


def refresh_manifest(index: Path, config: MonjyuConfig) -> None:
    """A kept index is opened with today's embedder and configuration: its units' vectors are
    synthetic blends whatever embedder wrote them, so only the manifest's names are brought up to
    date (the query is embedded by today's embedder; its sentence vectors are embedded anew)."""
    manifest = read_manifest(index)
    embedder = create_embedder(config.embedding)
    if (manifest.embedder_id, manifest.config_hash) != (embedder.id, config.index_hash()):
        write_manifest(index, replace(manifest, embedder_id=embedder.id, embedder_dim=embedder.dim,
                                      config_hash=config.index_hash()))
        print(f"  manifest brought up to date: embedder {manifest.embedder_id} -> {embedder.id}", flush=True)


def search(index: str, queries: list[str], out: str) -> None:
    """The measured process: open the index, search, report memory and latency."""
    t0 = time.perf_counter()
    m = Monjyu(Path(index))
    m.search(queries[0], mode="hybrid", top_k=10, answer=False)  # loads the index and the embedder
    opened = time.perf_counter() - t0
    after_open = status("VmRSS")
    for q in queries[1:]:  # first pass: the candidates' sentence vectors are embedded and cached
        m.search(q, mode="hybrid", top_k=10, answer=False)
    latency = []
    for q in queries[1:]:  # second pass, timed: sentence vectors cached, as after a build
        t = time.perf_counter()
        m.search(q, mode="hybrid", top_k=10, answer=False)
        latency.append((time.perf_counter() - t) * 1000)
    latency.sort()
    after_searches = {"rss_after_searches_mb": status("VmRSS"), "anonymous_mb": status("RssAnon"),
                      "mapped_files_mb": status("RssFile")}
    for q in queries[1:11]:  # filtered: exact search over every unit, so every vector page is read
        m.search(q, mode="hybrid", top_k=10, answer=False, filters=SearchFilters(kinds=["text"]))
    result = {"open_and_first_search_s": opened, "rss_after_open_mb": after_open, **after_searches,
              "rss_after_filtered_mb": status("VmRSS"), "peak_rss_mb": status("VmHWM"), "searches": len(queries),
              "hybrid_p50_ms": latency[len(latency) // 2], "hybrid_p95_ms": latency[int(0.95 * (len(latency) - 1))]}
    Path(out).write_text(json.dumps(result))
    print("search process:", json.dumps({k: round(v, 1) for k, v in result.items()}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real-index", required=True, type=Path)
    ap.add_argument("--beir", type=Path, default=Path(__file__).resolve().parents[2] / "shared/bench-data/2wiki")
    ap.add_argument("--units", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=51)
    ap.add_argument("--keep", type=Path, help="write the index here and keep it; reused when it holds one already")
    args = ap.parse_args()
    queries = list(BeirDataset.load(args.beir).queries.values())[:args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        index = args.keep or Path(tmp) / "index"
        if (index / "manifest.json").exists():
            kept = read_manifest(index).counts["text_units"]
            if kept != args.units:
                ap.error(f"{index} holds {kept:,} units, not --units {args.units:,}: give another --keep folder")
            print(f"index reused: {index} ({kept:,} units)", flush=True)
            refresh_manifest(index, MonjyuConfig())
        else:
            manifest = read_manifest(args.real_index)
            real = LoadedIndex.load(generation_dir(args.real_index, manifest.generation), manifest.embedder_dim)
            t0 = time.perf_counter()
            write_index(index, real, args.units, MonjyuConfig())
            print(f"index of {args.units:,} units written in {time.perf_counter() - t0:.0f} s", flush=True)
            del real
        child = mp.get_context("spawn").Process(target=search, args=(str(index), queries, str(Path(tmp) / "out.json")))
        child.start()
        child.join()
        result = json.loads((Path(tmp) / "out.json").read_text())
    print(f"search process over {args.units:,} units: RSS {result['rss_after_open_mb']:,.0f} MB after opening, "
          f"{result['rss_after_searches_mb']:,.0f} MB after {result['searches']} hybrid searches (anonymous "
          f"{result['anonymous_mb']:,.0f} MB, mapped files {result['mapped_files_mb']:,.0f} MB), "
          f"{result['rss_after_filtered_mb']:,.0f} MB after 10 filtered ones (exact search: every vector "
          f"page read), peak "
          f"{result['peak_rss_mb']:,.0f} MB; opened with its first search in {result['open_and_first_search_s']:.1f} s; "
          f"hybrid p50 {result['hybrid_p50_ms']:.1f} ms, p95 {result['hybrid_p95_ms']:.1f} ms (second pass)")


if __name__ == "__main__":
    main()
