"""BEIR layout: corpus.jsonl (_id, title, text), queries.jsonl (_id, text), qrels/<split>.tsv."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MonjyuError
from .metrics import check_field, field_value, retrieval_metrics


@dataclass
class BeirDataset:
    root: Path
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    metadata: dict[str, dict] = field(default_factory=dict)  # query id -> its record's metadata (and other fields)

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
        queries, metadata = {}, {}
        with open(queries_file, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    q = json.loads(line)
                    queries[str(q["_id"])] = q["text"]
                    meta = q.get("metadata") if isinstance(q.get("metadata"), dict) else {}
                    metadata[str(q["_id"])] = {**{k: v for k, v in q.items() if k not in ("_id", "text", "metadata")}, **meta}
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
        return cls(root=root, queries=queries, qrels=qrels, metadata=metadata)


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
                  top_k: int = 10, progress: Callable[[int], None] | None = None, by: str | None = None,
                  per_query: list[dict] | None = None,
                  decision: Callable[[str, str], dict] | None = None) -> dict[str, dict]:
    """`search(query, mode, n_units)` returns the document ids of the hits, best first. With `by`,
    every figure also per value of that query field (results[mode]["by"][value]); `per_query`,
    when given, receives one record per query: its field value, relevant documents and, per mode,
    the documents ranked, the rank of each relevant one and, with `decision(query, mode)` (called
    right after that search), what the engine decided for it (hybrid: its fusion weights)."""
    if by:
        check_field([dataset.metadata.get(q, {}) for q in dataset.qrels], by, str(dataset.root))
    results: dict[str, dict] = {}
    rankings_of: dict[str, dict[str, list[str]]] = {}
    decided: dict[tuple[str, str], dict] = {}
    for mode in modes:
        rankings: dict[str, list[str]] = {}
        latencies = []
        for qid in dataset.qrels:
            t0 = time.perf_counter()
            doc_ids = search(dataset.queries[qid], mode, top_k * 3)
            latencies.append((time.perf_counter() - t0) * 1000)
            if decision is not None:
                decided[qid, mode] = decision(dataset.queries[qid], mode)
            rankings[qid] = rank_documents(doc_ids, top_k)
            if progress:
                progress(1)
        metrics: dict = retrieval_metrics(dataset.qrels, rankings)
        latencies.sort()
        metrics["latency_ms_p50"] = latencies[len(latencies) // 2] if latencies else 0.0
        if by:
            groups: dict[str, list[str]] = {}
            for qid in dataset.qrels:
                groups.setdefault(field_value(dataset.metadata.get(qid, {}), by), []).append(qid)
            metrics["by"] = {value: retrieval_metrics({q: dataset.qrels[q] for q in qids}, rankings)
                             for value, qids in sorted(groups.items())}
        results[mode] = metrics
        rankings_of[mode] = rankings
    if per_query is not None:
        for qid, rel in dataset.qrels.items():
            relevant = [d for d, r in rel.items() if r > 0]
            record = {"id": qid, "query": dataset.queries[qid], "relevant": relevant, "modes": {}}
            if by:
                record[by] = field_value(dataset.metadata.get(qid, {}), by)
            for mode in modes:
                ranked = rankings_of[mode].get(qid, [])
                record["modes"][mode] = {"ranking": ranked,
                                         "ranks": {d: (ranked.index(d) + 1 if d in ranked else None) for d in relevant}}
                if decided.get((qid, mode)):
                    record["modes"][mode]["decision"] = decided[qid, mode]
            per_query.append(record)
    return results
