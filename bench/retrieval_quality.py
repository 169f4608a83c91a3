"""Retrieval quality (any mode of `monjyu eval`) on a BEIR set, with plain bm25s measured in the same run as reference.

    python bench/retrieval_quality.py --beir ../shared/bench-data/2wiki --index /tmp/idx-2wiki --modes vector,keyword,hybrid,graph
    python bench/retrieval_quality.py ... --modes hybridrag,hybridrag-norerank,hybridrag-crag

Prints Recall@{2,5,10}, nDCG@10, MRR@10, P@5 and complete@{2,5,8,10} per mode. The first run
embeds the corpus (cached by content hash under the index directory); later runs reuse it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import bm25s
import Stemmer

from monjyu import Monjyu, load_config
from monjyu.engines.request import eval_mode
from monjyu.eval import BeirDataset, evaluate_beir, retrieval_metrics

KEYS = ["recall@2", "recall@5", "recall@10", "ndcg@10", "mrr@10", "precision@5", "complete@5", "complete@8",
        "latency_ms_p50"]


def corpus_texts(dataset: BeirDataset) -> tuple[list[str], list[str]]:
    """Corpus ids and "title\ntext" strings, in file order."""
    ids, texts = [], []
    with open(dataset.corpus, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            ids.append(d["_id"])
            texts.append(f"{d.get('title', '')}\n{d['text']}")
    return ids, texts


def bm25s_reference(dataset: BeirDataset, k: int = 10) -> dict[str, float]:
    """The reference from the brief: bm25s, English stemmer + stop words, title + text."""
    ids, texts = corpus_texts(dataset)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    qids = list(dataset.qrels)
    t0 = time.perf_counter()
    q_tokens = bm25s.tokenize([dataset.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, _ = retriever.retrieve(q_tokens, k=k, show_progress=False)
    elapsed = (time.perf_counter() - t0) * 1000 / len(qids)
    rankings = {q: [ids[i] for i in docs[n]] for n, q in enumerate(qids)}
    out = retrieval_metrics(dataset.qrels, rankings)
    out["latency_ms_p50"] = elapsed  # batch mean per query
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", required=True, type=Path)
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--modes", default="vector,keyword,hybrid,graph")
    ap.add_argument("--config", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    dataset = BeirDataset.load(args.beir)
    m = Monjyu(args.index, load_config(args.config))
    t0 = time.perf_counter()
    report = m.index([dataset.corpus])
    print(f"index: {report.documents} documents, {report.text_units} units, {report.embedded} embedded now, "
          f"{time.perf_counter() - t0:.1f}s {json.dumps({k: round(v, 2) for k, v in report.seconds.items()})}")

    results = {"bm25s (reference)": bm25s_reference(dataset)}
    def run(query: str, mode: str, n: int) -> list[str]:  # any of monjyu.engines.request.EVAL_MODES
        name, options = eval_mode(mode)
        return [h.document_id for h in m.ask(query, name, top_k=n, answer=False, **options).hits]

    results.update(evaluate_beir(dataset, run, args.modes.split(",")))
    width = max(len(k) for k in results) + 2
    print(f"{'':{width}}" + "".join(f"{k:>13}" for k in KEYS))
    for name, figures in results.items():
        print(f"{name:{width}}" + "".join(f"{figures[k]:>13.3f}" for k in KEYS))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
