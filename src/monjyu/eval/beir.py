"""BEIR layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), qrels/<split>.tsv."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import MonjyuError
from .metrics import retrieval_metrics


@dataclass
class BeirDataset:
    root: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def corpus(self) -> Path:
        return self.root / "corpus.jsonl"

    @classmethod
    def load(cls, root: str | Path, split: str = "test") -> "BeirDataset":
        root = Path(root)
        corpus, queries_file, qrels_file = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
        for f in (corpus, queries_file, qrels_file):
            if not f.exists():
                raise MonjyuError(f"{root} is not a BEIR dataset: {f.name} is missing "
                                  "(expected corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
        queries = {}
        with open(queries_file, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    q = json.loads(line)
                    queries[str(q["_id"])] = q["text"]
        qrels: dict[str, dict[str, int]] = {}
        with open(qrels_file, encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header and header[0] != "query-id":  # no header line: keep the first row
                qrels.setdefault(header[0], {})[header[1]] = int(header[2])
            for row in reader:
                if len(row) >= 3:
                    qrels.setdefault(row[0], {})[row[1]] = int(row[2])
        qrels = {q: rel for q, rel in qrels.items() if q in queries}
        return cls(root=root, queries=queries, qrels=qrels)


def rank_documents(hit_document_ids: list[str], k: int) -> list[str]:
    """Collapse text-unit hits to unique documents, first occurrence wins."""
    seen: dict[str, None] = {}
    for d in hit_document_ids:
        if d not in seen:
            seen[d] = None
            if len(seen) == k:
                break
    return list(seen)


def evaluate_beir(dataset: BeirDataset, search: Callable[[str, str, int], list[str]], modes: list[str],
                  top_k: int = 10, progress: Callable[[int], None] | None = None) -> dict[str, dict[str, float]]:
    """`search(query, mode, n_units)` returns the document ids of the hits, best first."""
    results: dict[str, dict[str, float]] = {}
    for mode in modes:
        rankings: dict[str, list[str]] = {}
        latencies = []
        for qid in dataset.qrels:
            t0 = time.perf_counter()
            doc_ids = search(dataset.queries[qid], mode, top_k * 3)
            latencies.append((time.perf_counter() - t0) * 1000)
            rankings[qid] = rank_documents(doc_ids, top_k)
            if progress:
                progress(1)
        metrics = retrieval_metrics(dataset.qrels, rankings)
        latencies.sort()
        metrics["latency_ms_p50"] = latencies[len(latencies) // 2] if latencies else 0.0
        results[mode] = metrics
    return results
