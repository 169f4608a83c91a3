"""HybridRAG's graph modes on their own, on a BEIR set: the entity walk, the chained multi-hop walk
(hop 1's bridge phrases seed hop 2) and the relationship walk (the units between the question's
entities), each ranking text units alone, scored like `monjyu eval` (documents, Recall@k,
complete@k). Questions with metadata.multihop are scored apart when the set marks them.

    python bench/graph_modes.py --beir ../shared/bench-data/2wiki [--index DIR]

The index is `monjyu eval`'s (./.monjyu-eval/<set>-<hash of its path>) unless given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from monjyu import Monjyu
from monjyu.eval import BeirDataset, retrieval_metrics
from monjyu.eval.beir import rank_documents
from monjyu.query import Query
from monjyu.retrieval.rankers import require_graph

KEYS = ("recall@2", "recall@5", "recall@10", "complete@5", "complete@8", "mrr@10")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beir", type=Path, required=True)
    ap.add_argument("--index", type=Path, default=None)
    args = ap.parse_args()
    dataset = BeirDataset.load(args.beir)
    key = hashlib.sha256(str(dataset.corpus.resolve()).encode()).hexdigest()[:8]
    index = args.index or Path(".monjyu-eval") / f"{args.beir.resolve().name}-{key}"
    m = Monjyu(index)
    m.index([dataset.corpus])
    manifest, searcher = m.workspace.current().manifest, m.workspace.current().searcher
    graph = require_graph(searcher.index)
    multihop = {}
    with open(args.beir / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            multihop[str(q["_id"])] = bool((q.get("metadata") or {}).get("multihop"))

    def entities(query: str) -> list[str]:
        return [graph.phrases[n] for n in graph.match(query, searcher.graph.phrases(Query.of(query)))]

    modes = {
        "entity walk": lambda q, v: searcher.graph.rank(Query.of(q), v, 30, None)[0],
        "multi-hop chained walk": lambda q, v: searcher.graph.multihop(Query.of(q), v, 30, None)[0],
        "relation walk": lambda q, v: searcher.graph.relation(Query.of(q), v, 30, None, entities(q))[0],
    }
    vectors = {qid: m.workspace.current().embed_query(Query.of(dataset.queries[qid])) for qid in dataset.qrels}
    groups = {"all": list(dataset.qrels)}
    if any(multihop.values()):
        groups["multihop"] = [q for q in dataset.qrels if multihop.get(q)]
    ids = searcher.index.columns["document_id"]
    print(f"{'':28}{'questions':>10}" + "".join(f"{k:>12}" for k in KEYS))
    for name, rank in modes.items():
        rankings = {qid: rank_documents([ids[r] for r, _ in rank(dataset.queries[qid], vectors[qid])], 10)
                    for qid in dataset.qrels}
        for group, qids in groups.items():
            figures = retrieval_metrics({q: dataset.qrels[q] for q in qids}, {q: rankings[q] for q in qids})
            print(f"{name + ' (' + group + ')':28}{len(qids):>10}" + "".join(f"{figures[k]:>12.3f}" for k in KEYS))


if __name__ == "__main__":
    main()
