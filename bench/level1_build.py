"""Level 1 build time on an existing index's text units, split into noun-phrase extraction,
graph and Leiden, plus the cost of an incremental update (1% more units).

    python bench/level1_build.py --index /tmp/idx-2wiki --processes 2

Noun phrases are extracted with an empty cache (a fresh temporary one), so the figure is the
cold cost; the incremental run reuses the cache, as `monjyu index` does. The default extraction
(part-of-speech tags) is timed against the full spaCy pipeline with NER (`graph.named_entities:
true`, what every build ran before) on the same units in the same run, each with its worker
processes started first (a build starts them while it embeds), their start timed apart. With
--baseline REV, the noun-phrase stage of an earlier commit too (its `NounPhraseExtractor(n_process)
.extract(texts)`, workers started by it, in a fresh process from a `git worktree`): the extraction
every build ran before, unchanged by later work on the shared code.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from worktree import checkout, environment

from monjyu.config import GraphConfig
from monjyu.index import read_manifest
from monjyu.index.builder import generation_dir
from monjyu.index.level1 import PhraseCache, build_level1
from monjyu.nlp.noun_phrases import NounPhraseExtractor
from monjyu.store import LanceStore
from monjyu.kv import SqliteKV

# Run by the earlier commit's code: its extractor on the texts, cold (no phrase cache then).
BASELINE_EXTRACTION = """
import json, sys, time
from monjyu.nlp.noun_phrases import NounPhraseExtractor
texts = json.load(open(sys.argv[1], encoding="utf-8"))
t0 = time.perf_counter()
NounPhraseExtractor(n_process=int(sys.argv[2])).extract(texts)
print(time.perf_counter() - t0)
"""


def baseline_seconds(revision: str, texts: list[str], processes: int, tmp: Path) -> float:
    (tmp / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    with checkout(revision, tmp / "baseline") as src:
        out = subprocess.run([sys.executable, "-c", BASELINE_EXTRACTION, str(tmp / "texts.json"), str(processes)],
                             env=environment(src), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"the extraction at {revision} failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--baseline", help="an earlier commit whose noun-phrase stage to time too (e.g. b4e5527)")
    args = ap.parse_args()
    manifest = read_manifest(args.index)
    units = LanceStore(generation_dir(args.index, manifest.generation) / "lancedb").units(["id", "title", "text"])
    ids = units["id"].to_pylist()
    texts = [f"{t}.\n{x}" for t, x in zip(units["title"].to_pylist(), units["text"].to_pylist())]
    n = len(ids)
    cfg = GraphConfig(processes=args.processes)
    with tempfile.TemporaryDirectory() as tmp:
        cache = PhraseCache(SqliteKV(Path(tmp) / "phrases.sqlite", "phrases"))
        head = n - max(1, n // 100)
        # Workers are started (and load spaCy) before the clock starts: a build starts them
        # while it embeds. Their start is timed on its own.
        with NounPhraseExtractor(n_process=args.processes, named_entities=True) as full:
            t0 = time.perf_counter()
            full.start(wait=True)
            start_full = time.perf_counter() - t0
            t0 = time.perf_counter()
            cache.extract(texts[:head], full)
            t_full = time.perf_counter() - t0
        extractor = NounPhraseExtractor(n_process=args.processes)  # closed when the process ends
        t0 = time.perf_counter()
        extractor.start(wait=True)
        start_np = time.perf_counter() - t0
        t0 = time.perf_counter()
        phrases = cache.extract(texts[:head], extractor)
        t_np = time.perf_counter() - t0
        result = build_level1(head, phrases, cfg)
        per10k = 10_000 / head
        g, lei = result.seconds["graph"], result.seconds["leiden"]
        print(f"{head} units: noun phrases {t_np:.1f}s ({head / t_np:.0f} units/s, {args.processes} processes), "
              f"graph {g:.2f}s, Leiden {lei:.2f}s, tables {result.seconds['tables']:.2f}s")
        print(f"  per 10k units: noun phrases {t_np * per10k:.1f}s, graph + Leiden {(g + lei) * per10k:.2f}s")
        print(f"  full pipeline with NER (graph.named_entities: true): {t_full:.1f}s ({head / t_full:.0f} units/s); "
              f"tags {t_full / t_np:.2f}x faster")
        print(f"  starting the workers: tags {start_np:.1f}s, full pipeline {start_full:.1f}s; with it: tags "
              f"{(t_full + start_full) / (t_np + start_np):.2f}x faster")
        if args.baseline:
            t_base = baseline_seconds(args.baseline, texts[:head], args.processes, Path(tmp))
            print(f"  noun-phrase stage at {args.baseline} (workers started by it): {t_base:.1f}s "
                  f"({head / t_base:.0f} units/s); tags {t_base / t_np:.2f}x faster, "
                  f"{t_base / (t_np + start_np):.2f}x with starting the workers")
        print("  stats:", json.dumps(result.stats))

        t1 = time.perf_counter()
        phrases = cache.extract(texts, extractor)  # only the new 1% is extracted
        t_np2 = time.perf_counter() - t1
        again = build_level1(len(ids), phrases, cfg)
        print(f"incremental (+{n - head} units): noun phrases {t_np2:.2f}s, graph {again.seconds['graph']:.2f}s, "
              f"Leiden {again.seconds['leiden']:.2f}s, tables {again.seconds['tables']:.2f}s; "
              f"communities {result.stats['communities']} -> {again.stats['communities']}")


if __name__ == "__main__":
    main()
